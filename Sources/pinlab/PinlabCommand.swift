import ArgumentParser
import Foundation

@main
struct Pinlab: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinlab",
        abstract: "A private PKI, misbehaving TLS servers and a verdict matrix for certificate pinning.",
        version: pinlabVersionText,
        subcommands: [PKICommand.self, ServeCommand.self, ScenariosCommand.self, ExplainCommand.self, LabCommand.self,
                      CheckCommand.self, DemoCommand.self, BenchCommand.self, ExportCommand.self,
                      ReportCommand.self, InterceptCommand.self, AuditCommand.self, TimelineCommand.self]
    )

    /// Exit statuses, the same for every subcommand: 0 the client conforms (or the command did its job), 1 a cell
    /// deviates, 2 a usage or setup problem — a bad option, a missing file, a client that cannot run. (Argument
    /// Parser's own would be 64 for a usage error and 1 for any other error, which a CI job could not tell from a
    /// deviation.)
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // Help, --version and the commands' own ExitCode(…) keep their status.
            if error is ExitCode || code == .success { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}
