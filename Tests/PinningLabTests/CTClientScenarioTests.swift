import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The CT scenarios judged per declared CT policy. Predictions, by reasoning from each scenario's SCTs: a client
/// that checks no CT accepts wherever its pins do; `correct-ct-required` (two valid SCTs from distinct listed logs,
/// embedded, in the TLS extension or in a stapled OCSP response, for chains ending at lab-root) accepts only leaf-ct-valid and leaf-ct-tls, and
/// the proxy's chain to the user-installed proxy-root, which CT exempts.
@Suite("CT scenarios per declared client checks", .serialized)
struct CTClientScenarioTests {
    static let scenarios = [
        "ct-embedded-valid", "ct-tls-extension-valid", "ct-no-sct", "ct-one-sct", "ct-unknown-log", "ct-bad-signature",
        "ct-future-timestamp", "ct-private-anchor-exempt", "ct-ocsp-valid",
    ]

    /// What each client does (A/X per profile, `PinProfile.all` order), the same on both engines.
    static let rows: [String: [String: String]] = [
        "correct": [
            "ct-embedded-valid": "A X A A A A", "ct-tls-extension-valid": "A X A A A A", "ct-no-sct": "A A A A A A",
            "ct-one-sct": "A X A A A A", "ct-unknown-log": "A X A A A A", "ct-bad-signature": "A X A A A A",
            "ct-future-timestamp": "A X A A A A", "ct-private-anchor-exempt": "A X X X X X",
            "ct-ocsp-valid": "A X A A A A",
        ],
        "correct-ct-required": [
            "ct-embedded-valid": "A X A A A A", "ct-tls-extension-valid": "A X A A A A", "ct-no-sct": "X X X X X X",
            "ct-one-sct": "X X X X X X", "ct-unknown-log": "X X X X X X", "ct-bad-signature": "X X X X X X",
            "ct-future-timestamp": "X X X X X X", "ct-private-anchor-exempt": "A X X X X X",
            "ct-ocsp-valid": "A X A A A A",
        ],
    ]

    @Test(
        "each reference client passes every cell, doing what its declared CT policy predicts",
        arguments: ["correct", "correct-ct-required"])
    func referenceClient(_ name: String) async throws {
        let client = try #require(BuiltInClients.named(name))
        let report = try await TestLab.runner().run(
            .inProcess(client), options: CheckOptions(scenarios: Self.scenarios))
        #expect(report.verdicts.count == Self.scenarios.count * PinProfile.all.count * 2)
        // GnuTLS cannot send SCTs in the TLS extension on TLS 1.3 (ct.md): that scenario is unsupported there.
        let unsupported = Set(
            report.verdicts.filter { $0.status == .unsupported }.map { "\($0.scenario)/\($0.engine)" })
        #expect(unsupported.isSubset(of: ["ct-tls-extension-valid/gnutls"]), "\(unsupported.sorted())")
        let notPassed = report.verdicts.filter { $0.status != .pass && $0.status != .unsupported }
            .map { "\($0.scenario)/\($0.profile)/\($0.engine): \($0.status) \($0.reason)" }
        #expect(notPassed.isEmpty, "\(notPassed.joined(separator: "\n"))")
        #expect(report.verdicts.filter(\.wrongReason).isEmpty, "\(report.verdicts.filter(\.wrongReason).map(\.reason))")
        let rows = try #require(Self.rows[client.name])
        for s in Self.scenarios {
            for engine in ["openssl", "gnutls"] where !unsupported.contains("\(s)/\(engine)") {
                #expect(
                    RevocationScenarioTests.observedRow(report, s, engine) == rows[s],
                    "\(client.name) on \(s)/\(engine)")
            }
        }
        #expect(report.clientChecks == client.checks)
        if name == "correct-ct-required" {
            #expect(client.checks.ct == .required)
            let v = try #require(
                report.verdicts.first { $0.scenario == "ct-one-sct" && $0.profile == .none && $0.engine == "openssl" })
            #expect(v.reason.contains("ct=required client: a client that requires CT"), "\(v.reason)")
        }
    }

    @Test("the CT-requiring client refuses for CT, before any request, and says why")
    func refusalDetail() async throws {
        let client = try #require(BuiltInClients.named("correct-ct-required"))
        let options = CheckOptions(engines: [Engines.openssl], scenarios: ["ct-one-sct", "ct-no-sct"])
        let report = try await TestLab.runner().run(.inProcess(client), options: options)
        #expect(report.verdicts.count == 12)
        let unpinned = report.verdicts.filter { $0.profile == .none }
        #expect(unpinned.count == 2)
        for v in unpinned {
            #expect(v.observed == .refused && v.status == .pass, "\(v.scenario): \(v.status) \(v.reason)")
            #expect(
                (v.clientDetail ?? "").contains("certificate transparency: valid SCTs from"),
                "\(v.scenario): \(v.clientDetail ?? "")")
        }
        let one = try #require(unpinned.first { $0.scenario == "ct-one-sct" })
        #expect((one.clientDetail ?? "").contains("from 1 distinct listed log(s)"), "\(one.clientDetail ?? "")")
    }

    @Test("a client that claims ct=required but checks nothing fails every cell where CT decides")
    func claimNotKept() async throws {
        var options = CheckOptions(
            engines: [Engines.openssl], scenarios: ["ct-no-sct", "ct-bad-signature", "ct-embedded-valid"])
        options.clientChecks = ClientChecks(ct: .required)
        let report = try await TestLab.runner().run(
            .inProcess(try #require(BuiltInClients.named("correct"))), options: options)
        let failed = Set(report.verdicts.filter { $0.status == .fail }.map { "\($0.scenario)/\($0.profile)" })
        // ct-no-sct: all six profiles; ct-bad-signature: all but leaf-cert, which its pin refuses anyway.
        #expect(failed.count == 6 + 5, "\(failed.sorted())")
        #expect(
            !failed.contains("ct-bad-signature/leaf-cert") && !failed.contains { $0.hasPrefix("ct-embedded-valid/") })
    }
}
