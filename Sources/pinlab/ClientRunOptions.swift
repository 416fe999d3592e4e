import ArgumentParser
import Foundation
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
            throw ValidationError(
                "--client: '\(client)' is not a built-in client; use \(BuiltInClients.names.joined(separator: ", ")).")
        }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1.") }
        try validateSeconds(timeout, "--timeout")
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
        // swift-format-ignore: AlwaysUseLowerCamelCase
        let where_ = program.contains("/") ? "is not an executable file" : "was not found on the PATH"
        throw CheckSetupError(
            .commandTemplate, problem: "the client command '\(program)' could not be started: it \(where_).",
            fix: "install it, or give its full path (the command after `--` is run once per cell).")
    }

    func engines() throws -> [any TLSEngine] { try Engines.named(engine) }
}

/// `--platform`: the platform TLS policy the client follows (shared by check, lab check and demo).
struct PlatformOption: ParsableArguments {
    @Option(
        help:
            "The platform TLS policy the client follows: \(PlatformPolicy.names.joined(separator: ", ")). Cells the platform decides are judged by its expectation and shown as policy; default: the catalogue's expectations."
    )
    var platform: String?

    func validate() throws { _ = try policy() }

    func policy() throws -> PlatformPolicy? {
        guard let platform else { return nil }
        guard let p = PlatformPolicy.named(platform) else {
            let hint =
                PlatformPolicy.names.first { $0.hasPrefix(platform.prefix(3)) }.map { "did you mean \($0)? " } ?? ""
            throw ValidationError(
                "--platform: '\(platform)' is not a platform policy; \(hint)use \(PlatformPolicy.names.joined(separator: ", ")) (the Catalogue article, \"Platform policies\", lists their sources)."
            )
        }
        return p
    }
}

/// `--client-checks`: what the client claims to check beyond its pins (revocation, CT).
struct ClientChecksOption: ParsableArguments {
    @Option(
        name: .customLong("client-checks"),
        help:
            "What the client checks beyond its pins: \(ClientChecks.syntax), e.g. revocation=hard,ct=required. Cells whose outcome depends on a check are judged by the scenario's expectation for it; with nothing declared they are shown as policy (undecided), never pass or fail."
    )
    var clientChecks: String?

    func validate() throws { _ = try checks() }

    func checks() throws -> ClientChecks? {
        guard let clientChecks else { return nil }
        do {
            return try ClientChecks(parsing: clientChecks)
        } catch {
            throw ValidationError(error.description)
        }
    }
}

/// `--baseline` and `--write-baseline`: known divergences (shared by check and lab check).
struct BaselineOptions: ParsableArguments {
    @Option(
        help:
            "A baseline file (from --write-baseline): exit 1 only when a cell differs from it, and print what changed.")
    var baseline: String?

    @Option(
        help: "Write every cell's verdict to this baseline file (JSON, one line per cell; --print-schema baseline).")
    var writeBaseline: String?

    /// Loads the baseline before the run, so that a bad file stops the command before any cell runs.
    func load() -> Baseline? {
        guard let baseline else { return nil }
        do {
            return try Baseline.load(contentsOf: URL(fileURLWithPath: baseline), displayName: baseline)
        } catch {
            fail("\(error)")
        }
    }

    /// Compares (when a baseline was given) and writes (when asked); returns whether the run fails: any changed cell
    /// with a baseline, any deviation without one.
    func apply(_ loaded: Baseline?, to report: inout CheckReport) -> Bool {
        if let loaded, let baseline { loaded.compare(&report, file: baseline) }
        if let writeBaseline {
            writeOrFail(try Baseline(report).jsonString(), to: writeBaseline)
        }
        if let c = report.baseline { return c.changed }
        return report.deviates
    }

    /// Prints what changed against the baseline: with the report on standard output in a machine format, on standard
    /// error, so the report stays parseable.
    func printChanges(_ report: CheckReport, format: String, output: String?) {
        guard let c = report.baseline else { return }
        if output != nil || format == "text" {
            print(c.text, terminator: "")
        } else {
            FileHandle.standardError.write(Data(c.text.utf8))
        }
    }
}

/// A number of seconds an option takes: finite, positive and at most a day (an infinite or huge one trapped when made
/// a `Duration`).
func validateSeconds(_ value: Double, _ option: String) throws {
    guard value.isFinite, value > 0, value <= 86_400 else {
        throw ValidationError(
            "\(option): \(value) is not a number of seconds from 0 to 86400 (a day). Fix: give a positive number, e.g. \(option) 10."
        )
    }
}

/// The measured costs the shards of a run are cut by: `--shard-weights REPORT.json`, else `$PINLAB_SHARD_WEIGHTS`
/// (so a CI system sets it once for every piece); nil without a shard or without either. A report that cannot be
/// read ends the command with exit 2, naming the file and the fix.
func resolveShardWeights(
    _ option: String?, shard: CellShard?, environment: [String: String] = ProcessInfo.processInfo.environment
) -> ShardWeights? {
    let fromEnvironment = environment["PINLAB_SHARD_WEIGHTS"].flatMap { $0.isEmpty ? nil : $0 }
    guard let path = option ?? fromEnvironment else { return nil }
    guard shard != nil else {
        if option != nil {
            FileHandle.standardError.write(
                Data(
                    "pinlab: --shard-weights is read only by a sharded run (--shard K/N, or a CI system's shard variables); this run holds every cell.\n"
                        .utf8))
        }
        return nil
    }
    do {
        let weights = try ShardWeights(contentsOf: URL(fileURLWithPath: path))
        let source = option != nil ? "--shard-weights" : "PINLAB_SHARD_WEIGHTS"
        FileHandle.standardError.write(
            Data(
                "pinlab: shards cut by the cell costs measured in \(path) (\(source); \(weights.millisecondsByCell.count) cells)\n"
                    .utf8))
        return weights
    } catch {
        fail("\(error)")
    }
}

/// The shard of a run (check, check --batch, lab check): `--shard K/N` (already validated), else the one a CI system
/// gives through its environment (``EnvironmentShard``: Bazel, Kubernetes, GitLab, CircleCI), said on standard
/// error with the variables read, Bazel's status file touched; nil for a whole run. Inconsistent variables end the
/// command with exit 2, naming the variable and the fix.
func resolveShard(_ option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> CellShard?
{
    if let option {
        let shard = try? CellShard(parsing: option)
        let set = EnvironmentShard.systemsSet(in: environment)
        if let shard, !set.isEmpty {
            let names = set.map { "\($0.indexVariable)/\($0.totalVariable)" }.joined(separator: ", ")
            FileHandle.standardError.write(Data("pinlab: shard \(shard) from --shard (\(names) not read)\n".utf8))
        }
        return shard
    }
    do {
        guard let found = try EnvironmentShard.read(environment) else { return nil }
        FileHandle.standardError.write(Data((found.announcement + "\n").utf8))
        try found.touchStatusFile()
        return found.shard
    } catch {
        fail("\(error)")
    }
}
