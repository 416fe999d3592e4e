import ArgumentParser
import PinningLab

/// The client and how it runs: shared by `pinlab check` and `pinlab lab check`.
struct ClientRunOptions: ParsableArguments {
    @Option(help: "A built-in client: \(BuiltInClients.names.joined(separator: ", ")).")
    var client: String?

    @Option(help: "The client's name in reports (default: the command's name).")
    var name: String?

    @Option(help: "openssl, gnutls or both.")
    var engine: String = "both"

    @Option(help: "How many cells run at the same time (each server serves one cell at a time).")
    var jobs: Int = CheckOptions.defaultJobs

    @Option(help: "Seconds one client run may take before it is killed.")
    var timeout: Double = 10

    var timeoutDuration: Duration { .milliseconds(Int(timeout * 1000)) }

    func validate() throws {
        if let client, BuiltInClients.named(client) == nil {
            throw ValidationError("--client: '\(client)' is not a built-in client; use \(BuiltInClients.names.joined(separator: ", ")).")
        }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1.") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
        _ = try Engines.named(engine)
    }

    /// Exactly one of --client and a command after `--`; `missing` says what to give when neither is.
    func requireOneClient(command: [String], missing: String) throws {
        if client == nil && command.isEmpty { throw ValidationError(missing) }
        if client != nil && !command.isEmpty {
            throw ValidationError("give either --client or a command after `--`, not both.")
        }
    }

    /// The built-in client named by --client, or `command` as a command template (a bad template ends the run).
    func subject(command: [String], defaultName: String? = nil) -> ClientUnderTest {
        if let client, let c = BuiltInClients.named(client) { return .inProcess(c) }
        do {
            let template = try CommandTemplate(command)
            try Self.checkRunnable(template.words[0])
            return .command(CommandClient(name: name ?? defaultName, template: template, timeout: timeoutDuration))
        } catch {
            fail("\(error)")
        }
    }

    /// A client that cannot start is a setup problem, said once before any cell runs — not a column of refusals
    /// graded as if the client had refused.
    static func checkRunnable(_ program: String) throws {
        guard !program.contains("{") else { return }  // named by a placeholder: known only per cell
        guard ChildProcess.resolve(program) == nil else { return }
        let where_ = program.contains("/") ? "is not an executable file" : "was not found on the PATH"
        throw CheckSetupError(
            .commandTemplate, problem: "the client command '\(program)' could not be started: it \(where_).",
            fix: "install it, or give its full path (the command after `--` is run once per cell).")
    }

    func engines() throws -> [any TLSEngine] { try Engines.named(engine) }
}
