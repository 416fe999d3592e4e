// The Swift batch harness (Sources/SwiftBatchHarness) in-process: PinningLab's runner starts one server per cell,
// hands the harness the document as JSON — as a Simulator test would read it from $PINLAB_BATCH — and judges the
// answers on the servers' observations. It must get every cell right, and the same verdicts as the same client run
// cell by cell.
import Foundation
import PinningLab
import PinningLabTesting
import SwiftBatchHarness
import Testing

@Suite("Swift batch harness")
struct BatchHarnessTests {
    static let harness = BatchHarness.inProcess(name: "swift-nio-ssl (batch)") { document in
        let lines = (try? await SwiftBatchHarness.answers(for: try document.jsonData())) ?? []
        return lines.compactMap { try? JSONDecoder().decode(BatchResult.self, from: Data($0.utf8)) }
    }

    @Test("the whole catalogue on both engines in one batch: every cell right, as per cell")
    func wholeCatalogue() async throws {
        let runner = try CheckRunner(pki: await Lab.openPKI(), catalogue: Catalogue.bundled())
        let run = try await runner.runBatch(Self.harness)
        #expect(run.problems.isEmpty, "\(run.problems)")
        #expect(run.report.verdicts.count == runner.catalogue.scenarios.count * 6 * 2)
        #expect(
            run.report.deviations.isEmpty,
            "\(run.report.deviations.prefix(5).map { "\($0.scenario) \($0.profile) \($0.engine): \($0.reason)" })")
        // Every cell of one connection answered; those of several are unsupported in a batch (one address per cell).
        #expect(run.report.verdicts.allSatisfy { $0.claim != nil || $0.status == .unsupported }, "every cell answered")
        // …and what no engine of this build serves: SCTs in GnuTLS's TLS extension, ECH acceptance, ML-DSA keys.
        #expect(
            Set(run.report.verdicts.filter { $0.status == .unsupported }.map(\.scenario))
                == Set(ScenarioID.withSteps.map(\.rawValue) + CatalogueTests.unservable))
        print("swift batch: \(run.report.summaryLine)")

        let perCell = try await Lab.check(NIOPinningClient(), engines: .both)
        for (b, p) in zip(run.report.verdicts, perCell.verdicts) {
            #expect(b.scenario == p.scenario && b.profile == p.profile && b.engine == p.engine)
            #expect(
                b.status == p.status && b.observed == p.observed && b.claim == p.claim,
                "\(b.scenario) \(b.profile) \(b.engine): batch \(b.status), per cell \(p.status)")
        }
    }
}
