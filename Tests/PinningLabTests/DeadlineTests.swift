import Foundation
import PinningLab
import Testing

/// A client or harness in this process that ignores its timeout and cancellation (a continuation never resumed)
/// used to hold `Lab.check` and the batch run forever; now the cell, or the batch, records that it did not finish.
/// Without the deadlines these tests never end: the time limit turns that into a failure. The runs themselves take
/// seconds alone and about a minute inside the whole suite on 2 cores (timers wait for a free cooperative thread).
@Suite("Deadlines for code that does not cooperate", .timeLimit(.minutes(4)))
struct DeadlineTests {
    /// Never returns: waits on a continuation that nobody resumes.
    struct Stuck: PinningClient {
        var name: String { "stuck" }
        func run(_ target: ClientTarget) async -> ClientOutcome {
            await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
            return .accepted()
        }
    }

    @Test func aClientThatNeverReturnsIsRecordedAsNotFinished() async throws {
        let t0 = ContinuousClock.now
        let report = try await TestLab.runner().run(
            .inProcess(Stuck()),
            options: CheckOptions(
                engines: [Engines.openssl], profiles: [.none], scenarios: ["baseline", "rekey"],
                timeout: .seconds(1)))
        print("a stuck client's run ended after \(ContinuousClock.now - t0)")
        let run = report.verdicts.filter { $0.profile == PinProfile.none }
        #expect(run.count == 2)
        for v in run {
            #expect(v.status == .error && v.reason.contains("did not finish"), "\(v.scenario): \(v.status) \(v.reason)")
        }
    }

    @Test func aBatchHarnessThatNeverReturnsEndsAtTheBatchTimeout() async throws {
        let t0 = ContinuousClock.now
        let run = try await TestLab.runner().runBatch(
            .inProcess(name: "stuck") { _ in
                await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
                return []
            },
            options: CheckOptions(engines: [Engines.gnutls], profiles: [.none], scenarios: ["baseline"]),
            batch: BatchOptions(cellTimeout: .seconds(1), batchTimeout: .seconds(2)))
        print("a stuck harness's run ended after \(ContinuousClock.now - t0)")
        #expect(run.problems.contains { $0.contains("did not finish within the batch timeout") }, "\(run.problems)")
    }
}
