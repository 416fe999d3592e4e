import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

extension CheckRunner {
    /// Runs a batch harness once over the selected cells (`options.scenarios`, `options.profiles`,
    /// `options.engines`, `options.shard`) and judges every cell.
    ///
    /// Every cell gets a fixture server of its own, on its own port, started before the harness: a connection to a
    /// port can only belong to that port's cell, so the harness may judge cells in any order and many at once, and
    /// each verdict rests on its own server's observations exactly as in a per-cell run. The client's answer is its
    /// claim; a cell never answered, answered twice, or answered with a malformed line is an error verdict.
    public func runBatch(
        _ harness: BatchHarness, options: CheckOptions = CheckOptions(),
        batch: BatchOptions = BatchOptions()
    ) async throws -> BatchRun {
        let start = try RunStart(self, options)
        defer { start.cleanUp() }
        let (started, clock, selected, files, work) = (
            start.date, start.clock, start.selected, start.files, start.files.directory
        )
        let client = harness.name

        // Every cell keeps a server open until the harness is done: make room for their descriptors first, or say
        // at once how many are needed (EMFILE halfway through would turn cells into errors).
        let cellCount = selected.scenarios.count * options.engines.count * PinProfile.all.count
        let needed = cellCount * Sockets.descriptorsPerIdleServer + 128
        let limit = Sockets.raiseDescriptorLimit(to: needed)
        guard limit.soft >= needed else {
            throw CheckSetupError(
                .runOption,
                problem:
                    "a batch run of \(cellCount) cells keeps a server per cell open: it needs about \(needed) open descriptors, and this process may open \(limit.soft) (hard limit \(limit.hard)).",
                fix:
                    "raise the limit (ulimit -n \(needed)), or split the run with --shard 1/\(needed / max(limit.soft, 1) + 1) … or --scenarios."
            )
        }

        // Every cell of the run in report order; the runnable ones get a server.
        var slots: [Slot] = []
        let serverOptions = FixtureServer.Options(
            handshakeTimeout: batch.cellTimeout, idleTimeout: batch.cellTimeout,
            workerThreads: 1)
        do {
            let plan = options.shard.map {
                ShardPlan(
                    shard: $0, scenarios: selected.scenarios, engines: options.engines.map(\.name),
                    runs: { p in options.profiles?.contains(p) ?? true }, weights: options.shardWeights)
            }
            for s in selected.scenarios {
                // A scenario whose identities this PKI lacks (the post-quantum part) is `unsupported` on every engine.
                let configuration: ServerTLSConfiguration
                let notServable: String?
                do {
                    configuration = try serverConfiguration(for: s)
                    notServable = nil
                } catch let err as TLSEngineError where err.code == .unsupported {
                    configuration = ServerTLSConfiguration(identities: [])
                    notServable = err.reason
                }
                for e in options.engines {
                    for p in PinProfile.all
                    where plan?.contains(BatchCell.id(scenario: s.id, profile: p, engine: e.name)) ?? true {
                        var slot = Slot(
                            cell: Cell(
                                scenario: s, profile: p, engine: e.name, client: client,
                                platform: options.platform, checks: options.clientChecks ?? .undeclared))
                        if let profiles = options.profiles, !profiles.contains(p) {
                            slot.verdict = slot.cell.notRun(.skipped, "the client does not support the profile \(p)")
                        } else if let notServable {
                            slot.verdict = slot.cell.notRun(
                                .unsupported, "\(e.name) cannot serve this scenario: \(notServable)")
                        } else if s.isMultiStep {
                            if let why = Self.batchStepsUnsupported(s, batch) {
                                slot.verdict = slot.cell.notRun(.unsupported, why)
                            } else {
                                // A server per party, with the cell's own ticket keys: each cell starts with fresh
                                // session state, as in a per-cell run.
                                do {
                                    slot.parties = try await startParties(
                                        of: s, engine: e, options: serverOptions, scheduleRotations: true
                                    ).servers
                                } catch {
                                    let unsupported = (error as? PartyStartError)?.error.code == .unsupported
                                    slot.verdict = slot.cell.notRun(
                                        unsupported ? .unsupported : .error,
                                        unsupported ? "\(error)" : "the \(e.name) servers could not start: \(error)")
                                }
                            }
                        } else {
                            do {
                                slot.server = try FixtureServer.startSync(
                                    engine: e, configuration: configuration,
                                    options: serverOptions, label: s.id)
                            } catch let err where err.code == .unsupported {
                                slot.verdict = slot.cell.notRun(
                                    .unsupported, "\(e.name) cannot serve this scenario: \(err.reason)")
                            } catch {
                                slot.verdict = slot.cell.notRun(
                                    .error, "the \(e.name) server could not start: \(error)")
                            }
                        }
                        slots.append(slot)
                    }
                }
            }
        } catch {
            await stopAll(slots.flatMap(\.servers))
            throw error
        }
        // The servers are stopped (and their threads joined) before this returns, whatever happens: a stop still
        // under way when the process exits races the engines' exit-time cleanup (OpenSSL's atexit handler, GnuTLS's
        // destructor), which corrupted the heap at the end of `pinlab bench batch`.
        let servers = slots.flatMap(\.servers)
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
            // Client credentials first, off the cooperative pool (a PKCS#12 file may wait for the PKI's lock).
            for sl in slots where !sl.servers.isEmpty { try await files.prepareCredentials(for: sl.scenario) }
            var cells: [BatchCell] = []
            // What each answer line is matched to: a cell (a slot), or one step of it.
            var answerKeys: [(key: String, slot: Int, step: Int?)] = []
            for (i, sl) in slots.enumerated() {
                let id = BatchCell.id(scenario: sl.scenario.id, profile: sl.profile, engine: sl.engine)
                if let server = sl.server {
                    let address = BatchCellAddress(
                        scenario: sl.scenario.id, profile: sl.profile, engine: sl.engine, port: server.port)
                    cells += try batchDocument([address], files: files, cellTimeout: batch.cellTimeout).cells
                    answerKeys.append((id, i, nil))
                } else if !sl.parties.isEmpty {
                    cells.append(try stepCell(sl.cell, parties: sl.parties.mapValues(\.port), files: files))
                    for n in 1...sl.scenario.steps.count { answerKeys.append((BatchResult.key(id, step: n), i, n)) }
                }
            }
            let document = {
                var d = BatchDocument(cells: cells, cellTimeoutSeconds: seconds(batch.cellTimeout))
                d.platform = options.platform
                d.clientChecks = options.clientChecks
                return d
            }()
            let index = Dictionary(uniqueKeysWithValues: answerKeys.enumerated().map { ($0.element.key, $0.offset) })
            let tally = AnswerTally(index: index, progress: options.progress, total: answerKeys.count)

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
                let r = await CommandClient.runCommand(
                    arguments, environment: [batch.environmentVariable: docURL.path], timeout: batch.batchTimeout,
                    stdinFile: docURL.path, stdoutFile: outURL.path,
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
                    unanswered =
                        "the harness was killed after the batch timeout (\(batch.batchTimeout)) before reporting this cell"
                } else if r.status != 0 {
                    problems.append(
                        "the harness exited with status \(r.status)" + (r.stderrGist.isEmpty ? "" : ": \(r.stderrGist)")
                    )
                    unanswered =
                        "the harness exited with status \(r.status) without reporting this cell"
                        + (r.stderrGist.isEmpty ? "" : " (\(r.stderrGist))")
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

            // Judge: each cell on its own server's observations (a cell of several connections: its parties').
            let (evidence, streams) = await withTaskGroup(of: (Int, String, [Observation], [ObservedHTTP2Stream]).self)
            { group in
                for (i, sl) in slots.enumerated() {
                    if let server = sl.server {
                        group.addTask {
                            (i, "", await server.settle(timeout: .seconds(5)) ?? server.observations(), [])
                        }
                    }
                    for (name, server) in sl.parties {
                        group.addTask {
                            (
                                i, name, await server.settle(timeout: .seconds(5)) ?? server.observations(),
                                server.http2Streams()
                            )
                        }
                    }
                }
                var out: [Int: [String: [Observation]]] = [:]
                var streams: [Int: [String: [ObservedHTTP2Stream]]] = [:]
                for await (i, name, o, h2) in group {
                    out[i, default: [:]][name] = o
                    streams[i, default: [:]][name] = h2
                }
                return (out, streams)
            }
            let byKey = tally.answers
            var answers: [Int: AnswerTally.Final] = [:]
            var stepAnswers: [Int: [Int: AnswerTally.Final]] = [:]
            for (k, a) in byKey {
                let (_, slot, step) = answerKeys[k]
                if let step { stepAnswers[slot, default: [:]][step] = a } else { answers[slot] = a }
            }
            var verdicts: [Verdict] = []
            for (i, sl) in slots.enumerated() {
                if let v = sl.verdict {
                    verdicts.append(v)
                    continue
                }
                if !sl.parties.isEmpty {
                    verdicts.append(
                        judgeSteps(
                            sl, answers: stepAnswers[i] ?? [:], evidence: evidence[i] ?? [:],
                            streams: streams[i] ?? [:], unanswered: unanswered))
                    continue
                }
                switch answers[i] {
                case .answered(let a)?:
                    verdicts.append(
                        sl.cell.judge(
                            evidence: ServerEvidence(evidence[i]?[""] ?? []),
                            outcome: ClientOutcome(claim: a.claim, category: a.category, detail: a.detail ?? ""),
                            clientMilliseconds: a.milliseconds ?? 0))
                case .invalid(let why)?:
                    verdicts.append(sl.cell.notRun(.error, why))
                case nil:
                    verdicts.append(sl.cell.notRun(.error, unanswered))
                }
            }
            var report = CheckReport(
                client: client, engines: options.engines.map(\.name), profiles: PinProfile.all, startedAt: started,
                durationSeconds: seconds(ContinuousClock.now - clock), verdicts: verdicts,
                scenarios: selected.scenarios.map { ScenarioSheet(scenario: $0, pki: pki) })
            report.platform = options.platform
            report.clientChecks = options.clientChecks
            report.shard = options.shard
            report.shardCut = options.shard.map { _ in ShardPlan.cut(weights: options.shardWeights) }
            return BatchRun(report: report, problems: problems)
        }

        /// A cell of several connections: a verdict per step on its party's k-th connection, then the cell's.
        func judgeSteps(
            _ sl: Slot, answers: [Int: AnswerTally.Final], evidence: [String: [Observation]],
            streams: [String: [ObservedHTTP2Stream]], unanswered: String
        ) -> Verdict {
            let cell = sl.cell
            let connections = StepEvidence.assign(cell.scenario, connections: evidence, streams: streams)
            var stepVerdicts: [(Cell.Step, Verdict)] = []
            var milliseconds = 0.0
            let plan = cell.plan
            for step in plan {
                switch answers[step.number] {
                case .answered(let a)?:
                    milliseconds += a.milliseconds ?? 0
                    stepVerdicts.append(
                        (
                            step,
                            cell.judge(
                                step, evidence: connections[step.number - 1],
                                outcome: ClientOutcome(claim: a.claim, category: a.category, detail: a.detail ?? ""),
                                clientMilliseconds: a.milliseconds ?? 0)
                        ))
                case .invalid(let why)?:
                    return cell.notRun(.error, "step \(step.number) of \(plan.count): \(why)")
                case nil:
                    return cell.notRun(.error, "step \(step.number) of \(plan.count): \(unanswered)")
                }
            }
            return cell.combining(stepVerdicts, clientMilliseconds: milliseconds)
        }
    }

    /// Why the cells of `s` (several connections) are not judged in this batch run, or `nil` when they are.
    static func batchStepsUnsupported(_ s: Scenario, _ batch: BatchOptions) -> String? {
        guard batch.steps else {
            return
                "this scenario is \(s.steps.count) connections that share the client's TLS session cache; the harness did not say it keeps state between connections (pinlab check --batch --batch-steps), so it is not judged here"
        }
        return nil
    }

    /// The document's cell for a scenario of several connections whose parties listen on `parties` (name → port).
    func stepCell(_ c: Cell, parties: [String: Int], files: CellFiles) throws -> BatchCell {
        let plan = c.plan
        let first = plan[0]
        var cell = try batchDocument(
            [
                BatchCellAddress(
                    scenario: c.scenario.id, profile: c.profile, engine: c.engine, port: parties[first.party]!)
            ],
            files: files, cellTimeout: .seconds(1)
        ).cells[0]
        cell.steps = plan.map { step in
            let place = StepContext(
                step: step.number, host: step.host, port: parties[step.party]!, pins: [], certificatePins: [])
            return BatchStep(
                step: step.number, url: place.url, host: step.host, ip: place.ip, port: place.port,
                pins: step.pinsInForce ? cell.pins : cell.pins.emptied)
        }
        cell.url = cell.steps![0].url
        cell.host = first.host
        return cell
    }

    private struct Slot: Sendable {
        var cell: Cell
        var scenario: Scenario { cell.scenario }
        var profile: PinProfile { cell.profile }
        var engine: String { cell.engine }
        var server: FixtureServer?
        /// The servers of a cell of several connections, by party.
        var parties: [String: FixtureServer] = [:]
        /// Set when the cell is not run (skipped, unsupported, server error).
        var verdict: Verdict?

        var servers: [FixtureServer] { (server.map { [$0] } ?? []) + Array(parties.values) }
    }
}

/// Stops servers concurrently (each stop joins its threads on a thread of its own).
func stopAll(_ servers: [FixtureServer]) async {
    await withTaskGroup(of: Void.self) { group in
        for s in servers { group.addTask { await s.stop() } }
    }
}
