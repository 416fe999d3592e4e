import ArgumentParser
import Foundation

@main
struct Pinlab: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinlab",
        abstract: "A private PKI, misbehaving TLS servers and a verdict matrix for certificate pinning.",
        version: pinlabVersionText,
        subcommands: [
            PKICommand.self, ServeCommand.self, ScenariosCommand.self, ExplainCommand.self, LabCommand.self,
            CheckCommand.self, DemoCommand.self, BenchCommand.self, ExportCommand.self,
            ReportCommand.self, InterceptCommand.self, AuditCommand.self, TimelineCommand.self,
            ManCommand.self,
        ]
    )

    /// Exit statuses, the same for every subcommand: 0 the client conforms (or the command did its job), 1 a cell
    /// deviates, 2 a usage or setup problem — a bad option, a missing file, a client that cannot run. (Argument
    /// Parser's own would be 64 for a usage error and 1 for any other error, which a CI job could not tell from a
    /// deviation.)
    static func main() async {
        var parsed: (any ParsableCommand.Type)?
        do {
            var command = try parseAsRoot()
            parsed = type(of: command)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // Help, --version and the commands' own ExitCode(…) keep their status.
            if error is ExitCode || code == .success { exit(withError: error) }
            FileHandle.standardError.write(Data((message(for: error, in: parsed) + "\n").utf8))
            Foundation.exit(2)
        }
    }

    /// The error with the usage of the command that failed: an error a subcommand throws while it runs (a bad
    /// `--listen` value of `intercept`) names that subcommand's usage, not `pinlab <subcommand>`.
    static func message(for error: any Error, in command: (any ParsableCommand.Type)?) -> String {
        guard let command, command != Pinlab.self else { return fullMessage(for: error) }
        let usage = usageString(for: command)
        let path = usage.split(separator: " ").prefix { !$0.hasPrefix("<") && !$0.hasPrefix("[") }.joined(
            separator: " ")
        return "Error: \(Pinlab.message(for: error))\nUsage: \(usage)\n  See '\(path) --help' for more information."
    }
}
