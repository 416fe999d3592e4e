import Foundation
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// One answer of a batch harness: a JSON object on one line of its standard output
/// (``BatchSchemas/output``, `pinlab check --print-schema batch-out`).
public struct BatchResult: Sendable, Hashable, Codable {
    /// The cell's `id` from the batch document.
    public var id: String
    /// What the client says it did: `accepted` (it sent its request) or `refused`.
    public var claim: ClientOutcome.Claim
    /// Why, in the client's words (its exception, its verification error).
    public var detail: String?
    /// Why it refused, when the client can tell: `pin-mismatch`, `chain-invalid`, `hostname`, `client-auth`, …
    public var category: RefusalCategory?
    /// How long the client spent on the cell.
    public var milliseconds: Double?

    public init(id: String, claim: ClientOutcome.Claim, detail: String? = nil, category: RefusalCategory? = nil,
                milliseconds: Double? = nil) {
        self.id = id
        self.claim = claim
        self.detail = detail
        self.category = category
        self.milliseconds = milliseconds
    }

    /// The line a harness prints: compact JSON, sorted keys.
    public func jsonLine() throws -> String {
        try JSONOutput.line(self)
    }
}

/// The client of a batch run: a command run once with the whole document, or Swift code in this process.
public enum BatchHarness: Sendable {
    /// Run once; the document arrives on standard input and as the file named by `$PINLAB_BATCH`. Its standard
    /// output must hold one ``BatchResult`` line per cell and nothing else (logs go to standard error).
    case command(name: String?, arguments: [String])
    /// Swift code judging every cell of the document in this process (a template for an XCTest in the Simulator).
    case inProcess(name: String, run: @Sendable (BatchDocument) async -> [BatchResult])

    public var name: String {
        switch self {
        case .command(let name, let args):
            return name ?? args.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "batch"
        case .inProcess(let name, _): return name
        }
    }
}

/// Limits of a batch run.
public struct BatchOptions: Sendable {
    /// What one cell may take: the servers close a connection silent for this long, the document tells the client,
    /// and once the first answer has arrived the harness is stopped when no answer follows within twice this.
    public var cellTimeout: Duration
    /// The whole harness run, start-up included; the harness is killed after it.
    public var batchTimeout: Duration
    /// The environment variable naming the document's file.
    public var environmentVariable: String

    public init(cellTimeout: Duration = .seconds(10), batchTimeout: Duration = .seconds(300),
                environmentVariable: String = "PINLAB_BATCH") {
        self.cellTimeout = cellTimeout
        self.batchTimeout = batchTimeout
        self.environmentVariable = environmentVariable
    }
}

/// The result of a batch run: the report, plus what the harness did wrong that belongs to no cell (an unknown id,
/// a line that is not JSON, a non-zero exit status). `pinlab check --batch` prints them and exits 1.
public struct BatchRun: Sendable {
    public var report: CheckReport
    public var problems: [String]
    public var deviates: Bool { report.deviates || !problems.isEmpty }
}

extension CheckRunner {
    /// Runs a batch harness once over the selected cells (`options.scenarios`, `options.profiles`,
    /// `options.engines`, `options.shard`) and judges every cell.
    ///
    /// Every cell gets a fixture server of its own, on its own port, started before the harness: a connection to a
    /// port can only belong to that port's cell, so the harness may judge cells in any order and many at once, and
    /// each verdict rests on its own server's observations exactly as in a per-cell run. The client's answer is its
    /// claim; a cell never answered, answered twice, or answered with a malformed line is an error verdict.
    public func runBatch(_ harness: BatchHarness, options: CheckOptions = CheckOptions(),
                         batch: BatchOptions = BatchOptions()) async throws -> BatchRun {
        let start = try RunStart(self, options)
        defer { start.cleanUp() }
        let (started, clock, selected, files, work) = (start.date, start.clock, start.selected, start.files, start.files.directory)
        let client = harness.name

        // Every cell keeps a server open until the harness is done: make room for their descriptors first, or say
        // at once how many are needed (EMFILE halfway through would turn cells into errors).
        let cellCount = selected.scenarios.count * options.engines.count * PinProfile.all.count
        let needed = cellCount * Sockets.descriptorsPerIdleServer + 128
        let limit = Sockets.raiseDescriptorLimit(to: needed)
        guard limit.soft >= needed else {
            throw CheckSetupError(
                .runOption, problem: "a batch run of \(cellCount) cells keeps a server per cell open: it needs about \(needed) open descriptors, and this process may open \(limit.soft) (hard limit \(limit.hard)).",
                fix: "raise the limit (ulimit -n \(needed)), or split the run with --shard 1/\(needed / max(limit.soft, 1) + 1) … or --scenarios.")
        }

        // Every cell of the run in report order; the runnable ones get a server.
        var slots: [Slot] = []
        let serverOptions = FixtureServer.Options(handshakeTimeout: batch.cellTimeout, idleTimeout: batch.cellTimeout,
                                                  workerThreads: 1)
        do {
            for s in selected.scenarios {
                let configuration = try serverConfiguration(for: s)
                for e in options.engines {
                    for p in PinProfile.all where options.shard?.contains(scenario: s.id, profile: p, engine: e.name) ?? true {
                        var slot = Slot(scenario: s, profile: p, engine: e.name)
                        if let profiles = options.profiles, !profiles.contains(p) {
                            slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                   expected: s.expected(p, platform: options.platform), status: .skipped,
                                                   reason: "the client does not support the profile \(p)")
                        } else {
                            do {
                                slot.server = try FixtureServer.startSync(engine: e, configuration: configuration,
                                                                          options: serverOptions, label: s.id)
                            } catch let err where err.code == .unsupported {
                                slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                       expected: s.expected(p, platform: options.platform), status: .unsupported,
                                                       reason: "\(e.name) cannot serve this scenario: \(err.reason)")
                            } catch {
                                slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                       expected: s.expected(p, platform: options.platform), status: .error,
                                                       reason: "the \(e.name) server could not start: \(error)")
                            }
                        }
                        slots.append(slot)
                    }
                }
            }
        } catch {
            await stopAll(slots.compactMap(\.server))
            throw error
        }
        // The servers are stopped (and their threads joined) before this returns, whatever happens: a stop still
        // under way when the process exits races the engines' exit-time cleanup (OpenSSL's atexit handler, GnuTLS's
        // destructor), which corrupted the heap at the end of `pinlab bench batch`.
        let servers = slots.compactMap(\.server)
        let run: BatchRun
        do {
            run = try await harnessAndJudge()
        } catch {
            await stopAll(servers)
            throw error
        }
        await stopAll(servers)
        return run

        func harnessAndJudge() async throws -> BatchRun {
            let addresses = slots.compactMap { sl in
                sl.server.map { BatchCellAddress(scenario: sl.scenario.id, profile: sl.profile, engine: sl.engine, port: $0.port) }
            }
            // Client credentials first, off the cooperative pool (a PKCS#12 file may wait for the PKI's lock).
            for sl in slots where sl.server != nil { try await files.prepareCredentials(for: sl.scenario) }
            let document = try {
                var d = try batchDocument(addresses, files: files, cellTimeout: batch.cellTimeout)
                d.platform = options.platform
                return d
            }()
            let index = Dictionary(uniqueKeysWithValues: slots.enumerated().compactMap { i, sl in
                sl.server == nil ? nil : (BatchCell.id(scenario: sl.scenario.id, profile: sl.profile, engine: sl.engine), i)
            })
            let tally = AnswerTally(index: index, progress: options.progress, total: addresses.count)

            // Run the harness.
            var problems: [String] = []
            var unanswered = "the harness never reported this cell"
            switch harness {
            case .command(_, let arguments):
                let docURL = work.appendingPathComponent("batch.json")
                try document.jsonData().write(to: docURL)
                let outURL = work.appendingPathComponent("batch-out.jsonl")
                _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
                let reader = LineReader(path: outURL.path)
                let stall = batch.cellTimeout * 2
                let r = await ProcessRunner.run(
                    arguments, extraEnvironment: [batch.environmentVariable: docURL.path], timeout: batch.batchTimeout,
                    scratch: work, stdinFile: docURL.path, stdoutFile: outURL.path,
                    stop: {
                        tally.takeText(reader.newLines())
                        if tally.complete { return nil }
                        if let last = tally.lastAnswer, ContinuousClock.now - last > stall {
                            return "no answer for \(stall) (twice the cell timeout) after the previous one"
                        }
                        return nil
                    })
                tally.takeText(reader.newLines(final: true))
                if let e = r.launchError {
                    problems.append("the harness could not be started: \(e)")
                    unanswered = "the harness could not be started: \(e)"
                } else if let why = r.stopReason {
                    problems.append("the harness was stopped: \(why)")
                    unanswered = "the harness was stopped before reporting this cell: \(why)"
                } else if r.timedOut {
                    problems.append("the harness was killed after the batch timeout (\(batch.batchTimeout))")
                    unanswered = "the harness was killed after the batch timeout (\(batch.batchTimeout)) before reporting this cell"
                } else if r.exitStatus != 0 {
                    problems.append("the harness exited with status \(r.exitStatus)" + (r.stderrTail.isEmpty ? "" : ": \(r.stderrTail)"))
                    unanswered = "the harness exited with status \(r.exitStatus) without reporting this cell"
                        + (r.stderrTail.isEmpty ? "" : " (\(r.stderrTail))")
                }
            case .inProcess(_, let run):
                // Raced, not grouped: a task group would wait for a harness that ignores cancellation.
                let answers: [BatchResult]? = await raceAgainstDeadline(batch.batchTimeout) { await run(document) }
                if let answers {
                    tally.take(answers.enumerated().map { ($0.offset + 1, AnswerLine.decoded($0.element)) })
                } else {
                    problems.append("the harness did not finish within the batch timeout (\(batch.batchTimeout))")
                    unanswered = "the harness did not finish within the batch timeout (\(batch.batchTimeout))"
                }
            }
            problems += tally.problems

            // Judge: each cell on its own server's observations.
            let evidence = await withTaskGroup(of: (Int, [Observation]).self) { group in
                for (i, sl) in slots.enumerated() {
                    guard let server = sl.server else { continue }
                    group.addTask { (i, await server.settle(timeout: .seconds(5)) ?? server.observations()) }
                }
                var out: [Int: [Observation]] = [:]
                for await (i, o) in group { out[i] = o }
                return out
            }
            let answers = tally.answers
            var verdicts: [Verdict] = []
            for (i, sl) in slots.enumerated() {
                if let v = sl.verdict {
                    verdicts.append(v)
                    continue
                }
                let s = sl.scenario
                switch answers[i] {
                case .answered(let a)?:
                    verdicts.append(Verdict.judge(
                        scenario: s.id, profile: sl.profile, engine: sl.engine, client: client,
                        expected: s.expected(sl.profile, platform: options.platform), evidence: ServerEvidence(evidence[i] ?? []),
                        outcome: ClientOutcome(claim: a.claim, category: a.category, detail: a.detail ?? ""),
                        clientAuth: s.server.clientAuth, expectedCategory: s.refusal, clientMilliseconds: a.milliseconds ?? 0,
                        rule: s.rule(sl.profile, platform: options.platform)))
                case .invalid(let why)?:
                    verdicts.append(.notRun(scenario: s.id, profile: sl.profile, engine: sl.engine, client: client,
                                            expected: s.expected(sl.profile, platform: options.platform), status: .error, reason: why))
                case nil:
                    verdicts.append(.notRun(scenario: s.id, profile: sl.profile, engine: sl.engine, client: client,
                                            expected: s.expected(sl.profile, platform: options.platform), status: .error, reason: unanswered))
                }
            }
            var report = CheckReport(
                client: client, engines: options.engines.map(\.name), profiles: PinProfile.all, startedAt: started,
                durationSeconds: seconds(ContinuousClock.now - clock), verdicts: verdicts,
                scenarios: selected.scenarios.map { ScenarioSheet(scenario: $0, pki: pki) })
            report.platform = options.platform
            return BatchRun(report: report, problems: problems)
        }
    }

    private struct Slot: Sendable {
        var scenario: Scenario
        var profile: PinProfile
        var engine: String
        var server: FixtureServer?
        /// Set when the cell is not run (skipped, unsupported, server error).
        var verdict: Verdict?
    }
}

/// What every run starts with: the time, the selected scenarios, and the folder of its trust and client files (a
/// temporary one unless `options.workDirectory` is set, removed by `cleanUp()`).
struct RunStart {
    let date = Date()
    let clock = ContinuousClock.now
    let selected: Catalogue
    let files: CellFiles
    private let ownsWork: Bool

    init(_ runner: CheckRunner, _ options: CheckOptions) throws {
        selected = try runner.catalogue.selecting(options.scenarios)
        ownsWork = options.workDirectory == nil
        let work = try options.workDirectory ?? makeTemporaryDirectory()
        do {
            files = try CellFiles(pki: runner.pki, directory: work)
        } catch {
            if ownsWork { ScratchFolders.remove(work) }
            throw error
        }
    }

    func cleanUp() { if ownsWork { ScratchFolders.remove(files.directory) } }
}

/// Stops servers concurrently (each stop joins its threads on a thread of its own).
func stopAll(_ servers: [FixtureServer]) async {
    await withTaskGroup(of: Void.self) { group in
        for s in servers { group.addTask { await s.stop() } }
    }
}

/// One line of a harness's output, parsed as far as it goes.
enum AnswerLine: Sendable {
    case decoded(BatchResult)
    /// Valid JSON naming a cell, but not a valid answer.
    case invalid(id: String, why: String)
    /// Not a JSON object with a string `id`.
    case malformed(text: String, why: String)

    init(_ text: String) {
        guard let data = text.data(using: .utf8),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            self = .malformed(text: text, why: "not a JSON object")
            return
        }
        guard let id = object["id"] as? String else {
            self = .malformed(text: text, why: "no string \"id\"")
            return
        }
        let known: Set<String> = ["id", "claim", "detail", "category", "milliseconds"]
        if let extra = object.keys.first(where: { !known.contains($0) }) {
            self = .invalid(id: id, why: "unknown field \"\(extra)\" (allowed: \(known.sorted().joined(separator: ", ")))")
            return
        }
        guard let claim = (object["claim"] as? String).flatMap(ClientOutcome.Claim.init(rawValue:)) else {
            self = .invalid(id: id, why: "\"claim\" must be \"accepted\" or \"refused\", got \(object["claim"].map { "\($0)" } ?? "nothing")")
            return
        }
        if let d = object["detail"], !(d is String) {
            self = .invalid(id: id, why: "\"detail\" must be a string")
            return
        }
        if let c = object["category"], !(c is String) {
            self = .invalid(id: id, why: "\"category\" must be a string")
            return
        }
        if let m = object["milliseconds"], !(m is NSNumber) || m is Bool {
            self = .invalid(id: id, why: "\"milliseconds\" must be a number")
            return
        }
        self = .decoded(BatchResult(
            id: id, claim: claim, detail: object["detail"] as? String,
            category: (object["category"] as? String).map(RefusalCategory.init(rawValue:)),
            milliseconds: (object["milliseconds"] as? NSNumber)?.doubleValue))
    }
}

/// The answers so far, matched to cells; shared between the process watcher and the runner.
final class AnswerTally: @unchecked Sendable {
    // @unchecked: every mutable field is touched under `lock`.
    enum Answer {
        case answered(BatchResult, line: Int)
        case invalid(String)
    }
    enum Final: Sendable {
        case answered(BatchResult)
        case invalid(String)
    }
    private let lock = NSLock()
    private let index: [String: Int]
    private let progress: (@Sendable (CheckProgress) -> Void)?
    private let total: Int
    private let started = ContinuousClock.now
    private var byCell: [Int: Answer] = [:]
    private var _problems: [String] = []
    private var _lastAnswer: ContinuousClock.Instant?
    private var lineCount = 0

    init(index: [String: Int], progress: (@Sendable (CheckProgress) -> Void)?, total: Int) {
        self.index = index
        self.progress = progress
        self.total = total
    }

    /// Takes raw output lines (line number, text).
    func takeText(_ lines: [(Int, String)]) {
        take(lines.compactMap { n, text in
            let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return t.isEmpty ? nil : (n, AnswerLine(t))
        })
    }

    func take(_ lines: [(Int, AnswerLine)]) {
        guard !lines.isEmpty else { return }
        lock.lock()
        for (n, line) in lines {
            switch line {
            case .malformed(let text, let why):
                let shown = text.count > 120 ? String(text.prefix(120)) + "…" : text
                _problems.append("line \(n) of the harness's output is not an answer (\(why)): \(shown)")
            case .invalid(let id, let why):
                guard let i = index[id] else {
                    _problems.append("line \(n) names an unknown cell id '\(id)'")
                    continue
                }
                record(i, .invalid("line \(n) answers this cell with a malformed result: \(why)"), line: n)
            case .decoded(let a):
                guard let i = index[a.id] else {
                    let hint = suggestion(a.id, in: Array(index.keys)).map { " (did you mean '\($0)'?)" } ?? ""
                    _problems.append("line \(n) names an unknown cell id '\(a.id)'\(hint)")
                    continue
                }
                record(i, .answered(a, line: n), line: n)
            }
        }
        let (done, bad) = (byCell.count, byCell.values.filter { if case .invalid = $0 { true } else { false } }.count)
        lock.unlock()
        progress?(CheckProgress(done: done, total: total, deviations: bad,
                                elapsedSeconds: seconds(ContinuousClock.now - started)))
    }

    private func record(_ i: Int, _ answer: Answer, line n: Int) {
        _lastAnswer = .now
        if let previous = byCell[i] {
            let first: String
            switch previous {
            case .answered(_, let line): first = "line \(line)"
            case .invalid(let why): first = why.hasPrefix("reported twice") ? String(why.prefix(while: { $0 != ";" })) : "an earlier line"
            }
            byCell[i] = .invalid("reported twice (\(first) and line \(n)); a cell must be answered exactly once")
            return
        }
        byCell[i] = answer
    }

    var problems: [String] { lock.withLock { _problems } }
    var lastAnswer: ContinuousClock.Instant? { lock.withLock { _lastAnswer } }
    var complete: Bool { lock.withLock { byCell.count == index.count } }

    var answers: [Int: Final] {
        lock.withLock {
            byCell.mapValues {
                switch $0 {
                case .answered(let a, _): return .answered(a)
                case .invalid(let why): return .invalid(why)
                }
            }
        }
    }
}

/// Reads the complete lines appended to a file since the last call.
final class LineReader: Sendable {
    private struct Position {
        var offset: UInt64 = 0
        var pending = Data()
        var lineNumber = 0
    }
    private let path: String
    private let position = Locked(Position())

    init(path: String) { self.path = path }

    /// New complete lines with their numbers (from 1); with `final`, a last line without a newline too.
    func newLines(final: Bool = false) -> [(Int, String)] {
        position.withLock { p in
            if let h = FileHandle(forReadingAtPath: path) {
                defer { try? h.close() }
                try? h.seek(toOffset: p.offset)
                if let data = try? h.readToEnd(), !data.isEmpty {
                    p.pending.append(data)
                    p.offset += UInt64(data.count)
                }
            }
            var out: [(Int, String)] = []
            while let nl = p.pending.firstIndex(of: 0x0A) {
                p.lineNumber += 1
                out.append((p.lineNumber, String(decoding: p.pending[p.pending.startIndex..<nl], as: UTF8.self)))
                p.pending = Data(p.pending[p.pending.index(after: nl)...])
            }
            if final, !p.pending.isEmpty {
                p.lineNumber += 1
                out.append((p.lineNumber, String(decoding: p.pending, as: UTF8.self)))
                p.pending = Data()
            }
            return out
        }
    }
}
