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
                                                   expected: s.expected(p, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .skipped,
                                                   reason: "the client does not support the profile \(p)")
                        } else if s.isMultiStep {
                            // The batch document has one address per cell: a cell of several connections (steps) is
                            // not expressible yet, so it is reported, never judged — as for a per-cell command.
                            slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                   expected: s.expected(p, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .unsupported,
                                                   reason: "this scenario is \(s.steps.count) connections that share the client's TLS session cache; the batch document carries one connection per cell, so it is not judged here")
                        } else {
                            do {
                                slot.server = try FixtureServer.startSync(engine: e, configuration: configuration,
                                                                          options: serverOptions, label: s.id)
                            } catch let err where err.code == .unsupported {
                                slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                       expected: s.expected(p, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .unsupported,
                                                       reason: "\(e.name) cannot serve this scenario: \(err.reason)")
                            } catch {
                                slot.verdict = .notRun(scenario: s.id, profile: p, engine: e.name, client: client,
                                                       expected: s.expected(p, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .error,
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
                d.clientChecks = options.clientChecks
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
                    unanswered = "the harness was killed after the batch timeout (\(batch.batchTimeout)) before reporting this cell"
                } else if r.status != 0 {
                    problems.append("the harness exited with status \(r.status)" + (r.stderrGist.isEmpty ? "" : ": \(r.stderrGist)"))
                    unanswered = "the harness exited with status \(r.status) without reporting this cell"
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
                        expected: s.expected(sl.profile, platform: options.platform, checks: options.clientChecks ?? .undeclared), evidence: ServerEvidence(evidence[i] ?? []),
                        outcome: ClientOutcome(claim: a.claim, category: a.category, detail: a.detail ?? ""),
                        clientAuth: s.server.clientAuth, expectedCategory: s.refusal, clientMilliseconds: a.milliseconds ?? 0,
                        rule: s.rule(sl.profile, platform: options.platform, checks: options.clientChecks ?? .undeclared)))
                case .invalid(let why)?:
                    verdicts.append(.notRun(scenario: s.id, profile: sl.profile, engine: sl.engine, client: client,
                                            expected: s.expected(sl.profile, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .error, reason: why))
                case nil:
                    verdicts.append(.notRun(scenario: s.id, profile: sl.profile, engine: sl.engine, client: client,
                                            expected: s.expected(sl.profile, platform: options.platform, checks: options.clientChecks ?? .undeclared), status: .error, reason: unanswered))
                }
            }
            var report = CheckReport(
                client: client, engines: options.engines.map(\.name), profiles: PinProfile.all, startedAt: started,
                durationSeconds: seconds(ContinuousClock.now - clock), verdicts: verdicts,
                scenarios: selected.scenarios.map { ScenarioSheet(scenario: $0, pki: pki) })
            report.platform = options.platform
            report.clientChecks = options.clientChecks
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

/// Stops servers concurrently (each stop joins its threads on a thread of its own).
func stopAll(_ servers: [FixtureServer]) async {
    await withTaskGroup(of: Void.self) { group in
        for s in servers { group.addTask { await s.stop() } }
    }
}
