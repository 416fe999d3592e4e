import Foundation
import PinningLab
import PinningLabModel
import PinningLabTestSupport
import Testing

/// Cells of several connections in a batch run (`pinlab check --batch --batch-steps`): the document gives each such
/// cell its steps, a server per party listens for it, the harness answers every step, and each step is judged on
/// the connection its party's server received — with the Python harness of Examples/Batch as the client.
@Suite("batch runs with steps")
struct BatchStepsTests {
    static let harness = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/Batch/python").path
    /// The resumption scenarios (rotation-between-connections is judged too: its server is scheduled to rotate as
    /// the harness's second connection arrives).
    static let resumption = ["resumption-genuine", "resumption-after-unpinned-handshake", "resumption-cross-host"]
    static let pinned = PinProfile.all.filter { $0 != .none }

    /// The example harness, or a copy whose pin check drops the pins whenever it offers a session (as a pinner in a
    /// certificate callback, which a resumed handshake never calls, would).
    static func python(skipsPinsOnResumption: Bool = false) -> BatchHarness {
        let patch =
            skipsPinsOnResumption
            ? """
            original = h.connect
            def connect(ctx, host, port, profile, pins, *args, resume=None, **kwargs):
                return original(ctx, host, port, profile, [] if resume else pins, *args, resume=resume, **kwargs)
            h.connect = connect
            """ : ""
        return .command(
            name: skipsPinsOnResumption ? "python-skips-pins-on-resumption" : "python",
            arguments: [
                "python3", "-c",
                """
                import sys
                sys.path.insert(0, \(String(reflecting: harness)))
                import pinlab_batch as h
                \(patch)
                h.batch()
                """,
            ])
    }

    @Test(
        "a harness that keeps one session per cell is judged on every step; pins skipped on resumption fail exactly the bypasses",
        .requires("python3"))
    func harnessesAreJudgedPerStep() async throws {
        let runner = try await TestLab.runner()
        let good = try await runner.runBatch(
            Self.python(), options: CheckOptions(scenarios: Self.resumption + ["rotation-between-connections"]),
            batch: BatchOptions(steps: true))
        #expect(good.problems.isEmpty, "\(good.problems)")
        #expect(good.report.verdicts.count == 4 * 6 * 2)
        for v in good.report.verdicts {
            let cell = "\(v.scenario) \(v.profile) \(v.engine)"
            #expect(v.status == .pass, "\(cell): \(v.status) \(v.reason)")
            #expect(v.steps?.count == 2, "\(cell)")
        }
        // The rotation met the harness's second connection: a full handshake with the emergency re-key (refused under
        // the leaf pins), never a resumption of the first one's session.
        for v in good.report.verdicts where v.scenario == "rotation-between-connections" {
            #expect(v.steps?[1].evidence?.resumption == nil, "\(v.profile) \(v.engine)")
            let leafPinned: Set<PinProfile> = [.leafCert, .leafSPKI, .leafSPKIBackup]
            #expect(
                v.steps?[1].observed == (leafPinned.contains(v.profile) ? .refused : .accepted),
                "\(v.profile) \(v.engine)")
        }
        let options = CheckOptions(scenarios: Self.resumption)
        // The wire says the second connection resumed the first one's session (no certificate was sent).
        let genuine = good.report.verdicts.filter { $0.scenario == "resumption-genuine" }
        #expect(genuine.count == 12)
        for v in genuine {
            #expect(
                v.steps?[0].evidence?.resumption == nil && v.steps?[1].evidence?.resumption != nil,
                "\(v.profile) \(v.engine): \(String(describing: v.steps?.map { $0.evidence?.resumption }))")
        }

        let bad = try await runner.runBatch(
            Self.python(skipsPinsOnResumption: true), options: options, batch: BatchOptions(steps: true))
        // Predicted: the two bypass scenarios fail under every pinned profile on both engines (step 2 resumes the
        // interceptor's session and sends its request); everything else passes.
        let failed = Set(
            bad.report.verdicts.filter { $0.status == .fail }.map {
                "\($0.scenario) \($0.profile.rawValue) \($0.engine)"
            })
        var predicted: Set<String> = []
        for s in ["resumption-after-unpinned-handshake", "resumption-cross-host"] {
            for p in Self.pinned { for e in ["openssl", "gnutls"] { predicted.insert("\(s) \(p.rawValue) \(e)") } }
        }
        #expect(
            failed == predicted,
            "unpredicted: \(failed.subtracting(predicted).sorted()), missing: \(predicted.subtracting(failed).sorted())"
        )
        for v in bad.report.verdicts where v.status == .fail {
            #expect(v.reason.hasPrefix("step 2 of 2"), "\(v.reason)")
        }
    }

    @Test("without --batch-steps the cells of several connections are unsupported, with the option named")
    func stepsAreOptIn() async throws {
        let runner = try await TestLab.runner()
        let run = try await runner.runBatch(
            BatchTests.python("[]"),
            options: CheckOptions(engines: [Engines.openssl], scenarios: ["resumption-genuine"]))
        #expect(run.report.verdicts.count == 6)
        #expect(
            run.report.verdicts.allSatisfy { $0.status == .unsupported && $0.reason.contains("--batch-steps") },
            "\(run.report.verdicts.map(\.reason))")
    }

    @Test(
        "the document gives each step its address, host and pins; answers without, with a wrong or a boolean step are errors that say why"
    )
    func protocolOfSteps() async throws {
        let runner = try await TestLab.runner()
        let options = CheckOptions(
            engines: [Engines.gnutls], profiles: [.leafSPKI], scenarios: ["resumption-after-unpinned-handshake"])
        let run = try await runner.runBatch(
            .inProcess(name: "inspector") { document in
                // Checked here, in the harness, so the document is the one the run handed out.
                let cell = document.cells.first { $0.profile == .leafSPKI }!
                let steps = cell.steps ?? []
                guard steps.count == 2, steps[0].pins.base64.isEmpty, steps[1].pins.base64 == cell.pins.base64,
                    !cell.pins.base64.isEmpty, steps.map(\.step) == [1, 2], steps[0].url == cell.url,
                    steps.allSatisfy({ $0.url == "https://\($0.host):\($0.port)/" && $0.ip == "127.0.0.1" })
                else { return [BatchResult(id: "document-was-wrong", claim: .refused, detail: "\(cell)")] }
                return [
                    BatchResult(id: cell.id, claim: .refused),  // no step
                    BatchResult(id: cell.id, step: 3, claim: .refused),  // no such step
                    BatchResult(id: cell.id, step: 1, claim: .refused),
                ]
            }, options: options, batch: BatchOptions(steps: true))
        #expect(!run.problems.contains { $0.contains("document-was-wrong") }, "\(run.problems)")
        #expect(
            run.problems.contains { $0.contains("is 2 connections; answer each with \"step\": 1 … 2") },
            "\(run.problems)")
        #expect(run.problems.contains { $0.contains("has steps 1 … 2, not 3") }, "\(run.problems)")
        let cell = try #require(run.report.verdicts.first { $0.profile == .leafSPKI })
        #expect(cell.status == .error && cell.reason.hasPrefix("step 2 of 2"), "\(cell.reason)")

        // A boolean is no step number (JSONSerialization reads `true` and `1` alike; the answer must not).
        let line = AnswerLineProbe.parse(#"{"id": "a/leaf-spki/gnutls", "step": true, "claim": "refused"}"#)
        #expect(line.contains("\"step\" must be a whole number"), "\(line)")
        #expect(
            AnswerLineProbe.parse(#"{"id": "a/leaf-spki/gnutls", "step": 1, "claim": "refused", "milliseconds": 1}"#)
                == "a/leaf-spki/gnutls#1")
        #expect(
            AnswerLineProbe.parse(#"{"id": "a/leaf-spki/gnutls", "claim": "refused", "milliseconds": true}"#).contains(
                "\"milliseconds\" must be a number"))
    }
}
