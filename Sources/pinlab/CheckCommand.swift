import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI

/// `--catalogue`: the scenarios a command reads (the bundled catalogue unless a folder is given).
struct CatalogueSource: ParsableArguments {
    @Option(name: .long, help: "A folder of scenario files instead of the bundled catalogue.")
    var catalogue: String?

    init() {}
    init(folder: String?) { catalogue = folder }

    /// The catalogue; a folder that does not load ends the command with its errors (file, line, field).
    func load() -> Catalogue {
        do {
            if let catalogue {
                return try Catalogue.load(
                    directory: URL(fileURLWithPath: catalogue, isDirectory: true),
                    displayPrefix: catalogue.hasSuffix("/") ? catalogue : catalogue + "/")
            }
            return try Catalogue.bundled()
        } catch {
            fail("\(error)")
        }
    }
}

/// `--dir`: the lab PKI folder of the commands that use the built-in spec (`pinlab pki` and `serve` take
/// `PKIOptionsGroup`, which adds `--spec` and `--seed`). Without it, the nearest `.pinninglab/` (DefaultPKIFolder).
struct PKIFolder: ParsableArguments {
    @Option(
        name: .customLong("dir"),
        help:
            "The PKI folder (created if needed; keys are kept here). Default: the nearest .pinninglab/ in this folder or above, else a new one here."
    )
    var explicitDir: String?

    /// The folder: --dir, else the nearest `.pinninglab/` (said on standard error).
    var dir: String { explicitDir ?? DefaultPKIFolder.path }

    /// The PKI, opened off Swift's cooperative pool; a folder that cannot be opened ends the command. A folder made
    /// from a spec of one's own is opened with that spec while its file is unchanged, and refused otherwise.
    func open() async -> LabPKI {
        let dir = self.dir
        do {
            let url = URL(fileURLWithPath: dir, isDirectory: true)
            let pki = try await Lab.openPKI(directory: url, spec: try specForOpening(nil, directory: url).spec)
            announceReplacedKeys(pki)
            return pki
        } catch {
            fail("cannot open the lab PKI in \(dir): \(error)")
        }
    }
}

/// Options shared by the commands that read the catalogue and open the PKI.
struct CatalogueOptions: ParsableArguments {
    @OptionGroup var pki: PKIFolder
    @OptionGroup var scenarios: CatalogueSource

    var dir: String { pki.dir }
    func openPKI() async -> LabPKI { await pki.open() }
    func loadCatalogue() -> Catalogue { scenarios.load() }
}

/// Prints `message` to standard error and exits with status 2 (a usage or setup problem, not a verdict).
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    Foundation.exit(2)
}

/// The items of a comma-separated option value, trimmed, empty ones left out: the one splitter of every list
/// option (``commaList(_:option:example:omitted:)`` refuses a list with nothing in it).
func listItems(_ text: String?) -> [String] {
    (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

/// A list option (--scenarios, --profiles, serve's --chain and --client-ca …): nil when it was not given, else its
/// items. A value with no item in it ('', ',', ' ') is refused, since it would mean what leaving the option out
/// means — usually everything — and an unset CI variable (`--scenarios "$SMOKE"`) must not silently widen a run.
/// `example` is a value to show in the fix; `omitted` says what leaving the option out does.
func commaList(_ text: String?, option: String, example: String, omitted: String) throws -> [String]? {
    guard let text else { return nil }
    let items = listItems(text)
    guard !items.isEmpty else {
        throw ValidationError(
            "\(option) '\(text)' names nothing (an empty variable?), and an empty list is not taken to mean \(omitted). "
                + "Fix: name at least one (e.g. \(option) \(example)), or leave \(option) out for \(omitted).")
    }
    return items
}

/// --profiles: nil when not given (the client supports every profile); an unknown or empty one is refused.
func parseProfiles(_ text: String?) throws -> Set<PinProfile>? {
    guard
        let items = try commaList(
            text, option: "--profiles", example: "leaf-spki,leaf-spki+backup",
            omitted: "every pin profile")
    else { return nil }
    var out: Set<PinProfile> = []
    for part in items {
        let p = PinProfile(rawValue: part)
        guard PinProfile.all.contains(p) else {
            throw ValidationError(
                "--profiles: '\(part)' is not a pin profile; use \(PinProfile.all.map(\.rawValue).joined(separator: ", "))."
            )
        }
        out.insert(p)
    }
    return out
}

/// --scenarios: nil when not given (every scenario); an empty list is refused.
func parseScenarioList(_ text: String?) throws -> [String]? {
    try commaList(text, option: "--scenarios", example: "baseline,rekey", omitted: "every scenario")
}

/// The items of a list whose emptiness needs no refusal (kept for callers that check it themselves).
func parseList(_ text: String?) -> [String] { listItems(text) }

/// `HOST:PORT` or `[IPv6]:PORT` → the host (without brackets) and the port; `nil` without a host, or when the port
/// is not a number in `ports`.
func splitHostPort(_ text: String, ports: ClosedRange<Int> = 0...65535) -> (host: String, port: Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), ports.contains(port)
    else { return nil }
    let host = text[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    return host.isEmpty ? nil : (host, port)
}

/// Checks `--format` against the check report's formats (`ReportFormat`).
func validateReportFormat(_ format: String) throws {
    guard ReportFormat(rawValue: format) != nil else {
        throw ValidationError(
            "--format: '\(format)' is not a format; use \(ReportFormat.allCases.map(\.rawValue).joined(separator: ", "))."
        )
    }
}

var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil }

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Run a client through every scenario under every pin profile and print the verdict matrix.",
        discussion: """
            The client is a built-in reference client (--client correct) or a command template after `--`, run once \
            per cell with placeholders expanded (\(CommandTemplate.placeholders.map { "{\($0)}" }.joined(separator: " "))); \
            a word in [brackets] is left out when one of its placeholders is empty. The same values are in the \
            environment (PINLAB_URL, PINLAB_CA, PINLAB_PINS_CURL, …). Its exit status is its claim (0 = accepted); the \
            server decides whether it really sent its request. A scenario of several connections runs only when the \
            template names the steps: \(CommandTemplate.stepPlaceholders.map { "{\($0).N}" }.joined(separator: " ")) \
            (N = 1, 2, …), one line per step on standard output as the answer (the CommandTemplates article).

            Example (the scenarios' hosts, e.g. api.pinning.test, reach 127.0.0.1 through --resolve {resolve}):
              pinlab check --profiles none,leaf-spki,leaf-spki+backup -- \\
                curl -sf -o /dev/null --resolve {resolve} --cacert {ca} \\
                '[--pinnedpubkey {pins.curl}]' '[--cert {client.cert}]' \\
                '[--key {client.key}]' {url}

            --platform ats|android|jdk|openssl-default judges the cells a platform's TLS policy decides by that \
            platform's expectation (shown as policy). --write-baseline FILE records every cell; --baseline FILE \
            then fails only on cells that changed, and prints them.

            Exit status: 0 when every cell is as expected (with --baseline: as in the baseline), 1 when any cell \
            deviates (with --baseline: changed), 2 on a usage or setup error.
            """
    )

    @OptionGroup var source: CatalogueOptions

    @OptionGroup var clientOptions: ClientRunOptions

    @OptionGroup var platformOption: PlatformOption
    @OptionGroup var clientChecksOption: ClientChecksOption

    @OptionGroup var baselineOptions: BaselineOptions

    @Option(help: "The pin profiles the client supports (comma-separated); other cells are skipped.")
    var profiles: String?

    @Option(help: "Scenario ids to run (comma-separated); default: all.")
    var scenarios: String?

    @Option(help: "text, json, junit, markdown or html.")
    var format: String = "text"

    @Option(help: "Write the report to this file (the summary line still goes to standard output).")
    var output: String?

    @Option(
        help: "Print a schema and exit: json or junit (reports), batch-in or batch-out (the batch protocol), baseline.")
    var printSchema: String?

    @Flag(
        help:
            "Run the command once for every cell: the cells as one JSON document on standard input and in $PINLAB_BATCH, one JSON answer per cell on its standard output (see --print-schema batch-in|batch-out)."
    )
    var batch = false

    @Flag(
        help:
            "With --batch: the harness keeps state between connections (one TLS session cache, one connection pool per cell): cells of scenarios made of several connections carry their steps, and the harness answers each step (\"step\": N). Without it those cells are reported unsupported."
    )
    var batchSteps = false

    @Option(help: "With --batch: seconds the whole harness run may take, start-up included (default 300).")
    var batchTimeout: Double?

    @Option(
        help:
            "With --batch: seconds one cell may take (servers close silent connections then; the harness is stopped when no answer arrives for twice this). Default: --timeout."
    )
    var cellTimeout: Double?

    @Option(
        help:
            "Cut the shards by the cell costs of an earlier run: its JSON report (e.g. the merged shards of the last run, kept as a CI cache). Without it, $PINLAB_SHARD_WEIGHTS, else each cell's cost is estimated from its connections."
    )
    var shardWeights: String?

    @Option(
        help:
            "Run only part K of N of the cells (e.g. 2/4): a deterministic split cut by cost so the pieces finish together; join the JSON reports with `pinlab report merge`. Without it, the shard a CI system gives in the environment (Bazel TEST_SHARD_INDEX/TEST_TOTAL_SHARDS, GitLab CI_NODE_INDEX/CI_NODE_TOTAL, CircleCI CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL, Kubernetes JOB_COMPLETION_INDEX with PINLAB_SHARD_TOTAL)."
    )
    var shard: String?

    @Argument(parsing: .postTerminator, help: "The client command template (after --).")
    var command: [String] = []

    func validate() throws {
        if printSchema != nil { return }
        try clientOptions.requireOneClient(
            command: command,
            missing:
                "give a client: --client \(BuiltInClients.names.joined(separator: "|")), or a command template after `--`."
        )
        try validateReportFormat(format)
        if batch {
            guard clientOptions.client == nil else {
                throw ValidationError("--batch runs a command: give the harness command after `--`, not --client.")
            }
            if let batchTimeout { try validateSeconds(batchTimeout, "--batch-timeout") }
            if let cellTimeout { try validateSeconds(cellTimeout, "--cell-timeout") }
            if let w = command.first(where: { w in CommandTemplate.placeholders.contains { w.contains("{\($0)}") } }) {
                throw ValidationError(
                    "--batch runs the harness once, so '\(w)' has no value: remove the placeholders; the harness reads every cell's URL, trust file and pins from the batch document (standard input or $PINLAB_BATCH)."
                )
            }
        } else {
            let batchOnly = [
                ("--batch-steps", batchSteps), ("--batch-timeout", batchTimeout != nil),
                ("--cell-timeout", cellTimeout != nil),
            ]
            if let (option, _) = batchOnly.first(where: \.1) {
                throw ValidationError(
                    "\(option) applies to --batch runs only: add --batch (a harness that answers every cell), or remove \(option)."
                )
            }
        }
        if let shard { _ = try CellShard(parsing: shard) }
        _ = try parseProfiles(profiles)
        _ = try parseScenarioList(scenarios)
    }

    func run() async throws {
        if let printSchema {
            switch printSchema {
            case "json": print(ReportSchemas.json)
            case "junit": print(ReportSchemas.junitXSD)
            case "batch-in": print(BatchSchemas.input)
            case "batch-out": print(BatchSchemas.output)
            case "baseline": print(ReportSchemas.baseline)
            default: throw ValidationError("--print-schema: use json, junit, baseline, batch-in or batch-out.")
            }
            return
        }
        let shard = resolveShard(shard)
        let shardWeights = resolveShardWeights(self.shardWeights, shard: shard)
        requireWritable(output, option: "--output")
        requireWritable(baselineOptions.writeBaseline, option: "--write-baseline")
        let baseline = baselineOptions.load()
        let subject = clientOptions.subject(command: command)
        // The catalogue first: one that does not load ends the command before the PKI folder is touched (opening
        // the PKI beside it and exiting meanwhile left a half-made folder: keys, no state file).
        let catalogue = source.loadCatalogue()
        let pki = await source.openPKI()
        let interrupts = interruptingClientCommands("pinlab.check.signals")
        defer { interrupts.cancel() }
        let progress = ProgressLine()
        var options = CheckOptions(
            engines: try clientOptions.engines(), profiles: try parseProfiles(profiles),
            scenarios: try parseScenarioList(scenarios) ?? [],
            jobs: clientOptions.jobs, timeout: clientOptions.timeoutDuration, shard: shard,
            progress: progress.update, platform: try platformOption.policy())
        options.clientChecks = try clientChecksOption.checks()
        options.shardWeights = shardWeights
        var report: CheckReport
        var harnessProblems: [String] = []
        do {
            if batch {
                (report, harnessProblems) = try await runBatch(
                    CheckRunner(pki: pki, catalogue: catalogue), options: options)
            } else {
                report = try await CheckRunner(pki: pki, catalogue: catalogue).run(subject, options: options)
            }
        } catch {
            await interrupts.holdIfInterrupted()
            progress.finish()
            fail("\(error)")
        }
        await interrupts.holdIfInterrupted()
        progress.finish()
        let failed = baselineOptions.apply(baseline, to: &report)
        try emit(report, format: format, output: output)
        baselineOptions.printChanges(report, format: format, output: output)
        if failed || !harnessProblems.isEmpty { throw ExitCode(1) }
    }
}

/// On SIGINT or SIGTERM: kill the client commands still running (they lead their own process groups, so the
/// terminal's Ctrl-C does not reach them), remove the run's scratch folders (trust files, client keys), then exit
/// with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a process a signal ended.
func interruptingClientCommands(_ label: String) -> TerminationSignals {
    TerminationSignals(label) { sig in
        ScratchFolders.removeAll()
        CommandClient.killRunningCommands()
        FileHandle.standardError.write(
            Data("\ninterrupted: stopped the running clients and removed the run's files\n".utf8))
        Foundation.exit(128 + sig)
    }
}
