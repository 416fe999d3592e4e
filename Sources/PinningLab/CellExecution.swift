import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

// The executors of a cell: how a client is run on the servers of a resolved cell and judged. Every entry point —
// `pinlab check`, `Lab.check`, `ScenarioServer.verdict` in each of its forms — comes here (batch harnesses answer
// for many cells at once and are judged by the same `Cell.judge`), so no two of them can judge a cell differently.

/// What an in-process client did on one connection.
enum ConnectionRun: Sendable {
    /// It returned: with its outcome, or `nil` when it makes no claim (a test closure that returned normally).
    case finished(ClientOutcome?)
    /// It did not return within its timeout and 5 s more.
    case didNotFinish
}

/// A client as the executors run it: in-process (a function from the target to what it did) or a command.
enum CellClient {
    case inProcess(run: (ClientTarget) async -> ConnectionRun, keepsSessionsAcrossSteps: Bool)
    case command(CommandClient)

    /// A `ClientUnderTest`, raced against its timeout and 5 s more (a client that ignores cancellation no longer
    /// holds the run).
    static func of(_ client: ClientUnderTest, timeout: Duration) -> CellClient {
        switch client {
        case .inProcess(let c):
            return .inProcess(
                run: { target in
                    guard let o = await raceAgainstDeadline(timeout + .seconds(5), { await c.run(target) }) else {
                        return .didNotFinish
                    }
                    return .finished(o)
                },
                keepsSessionsAcrossSteps: c.keepsSessionsAcrossSteps)
        case .command(let c):
            return .command(c)
        }
    }
}

extension CheckRunner {
    /// Runs the client of a one-connection cell against `server` and judges the connections it made.
    func runConnection(
        _ cell: Cell, on server: FixtureServer, client: CellClient, timeout: Duration, files: CellFiles
    ) async -> Verdict {
        let s = cell.scenario
        let before = server.connectionsAccepted
        let outcome: ClientOutcome?
        let ms: Double
        do {
            try await files.prepareCredentials(for: s)  // off the cooperative pool: it may wait for the PKI's lock
            switch client {
            case .inProcess(let run, _):
                let target = try files.target(for: s, profile: cell.profile, port: server.port, timeout: timeout)
                let t0 = ContinuousClock.now
                guard case .finished(let o) = await run(target) else {
                    return cell.notRun(
                        .error,
                        "the client did not finish: it had not returned \(Int(milliseconds(timeout) / 1000) + 5) s after the cell started (it ignores its timeout and cancellation)"
                    )
                }
                outcome = o
                ms = milliseconds(ContinuousClock.now - t0)
            case .command(let c):
                let ctx = try files.context(for: s, profile: cell.profile, port: server.port)
                (outcome, ms) = await c.run(ctx, scratch: files.directory)
            }
        } catch {
            return cell.notRun(.error, "cannot prepare the cell: \(error)")
        }
        let observations = (await server.settle(timeout: .seconds(5)) ?? server.observations()).filter {
            $0.id > before
        }
        return cell.judge(evidence: ServerEvidence(observations), outcome: outcome, clientMilliseconds: ms)
    }

    enum CellServerStart {
        case started(FixtureServer)
        case notStarted(Verdict.Status, String)
    }

    /// The server of a one-connection scenario for a run's cells (one worker thread, the cell's timeouts).
    func startCellServer(_ s: Scenario, engine: any TLSEngine, timeout: Duration) async -> CellServerStart {
        do {
            return .started(
                try await FixtureServer.start(
                    engine: engine, configuration: try serverConfiguration(for: s),
                    options: .init(handshakeTimeout: timeout, idleTimeout: timeout, workerThreads: 1), label: s.id))
        } catch let e as TLSEngineError where e.code == .unsupported {
            return .notStarted(.unsupported, "\(engine.name) cannot serve this scenario: \(e.reason)")
        } catch {
            return .notStarted(.error, "the \(engine.name) server could not start: \(error)")
        }
    }
}
