import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The correct client, declaring nothing about revocation (as a user's own client does until it says).
private struct Undeclared: PinningClient {
    var name: String { "correct-undeclared" }
    var keepsSessionsAcrossSteps: Bool { true }
    func run(_ target: ClientTarget) async -> ClientOutcome { await BuiltInClients.named("correct")!.run(target) }
}

/// The revocation scenarios judged per declared policy. Predictions, by reasoning from each scenario's staple:
/// a client that checks no revocation accepts every stapled scenario (and revoked-key-replay wherever its pins
/// match); soft-fail refuses only a validly signed, current "revoked" and a Must-Staple leaf without a staple;
/// hard-fail refuses everything but a validly signed, current "good" for a leaf that names a responder.
/// Without a staple the soft and hard clients fetch what the leaf names from the scenario's lab responder
/// (`server.responder`): the CRL scenarios and the unreachable responder are decided by what they fetch. They check
/// every certificate below the trust anchor the same way (a staple speaks for the leaf only), so lab-root's CRL
/// listing crl-revoked-intermediate's CA refuses it under both, every pin matching.
@Suite("Revocation scenarios per declared client checks", .serialized)
struct RevocationScenarioTests {
    static let scenarios = [
        "ocsp-stapled-good", "ocsp-stapled-revoked", "ocsp-stapled-unknown", "ocsp-stapled-expired",
        "ocsp-stapled-bad-signature", "ocsp-stapled-wrong-responder", "must-staple-missing", "revoked-key-replay",
        "crl-good", "crl-revoked-leaf", "crl-stale", "ocsp-responder-unreachable", "crl-revoked-intermediate",
    ]

    /// What each client does (A/X per profile, `PinProfile.all` order), the same on both engines.
    static let rows: [String: [String: String]] = [
        "correct": [
            "ocsp-stapled-good": "A A A A A A", "ocsp-stapled-revoked": "A A A A A A",
            "ocsp-stapled-unknown": "A A A A A A",
            "ocsp-stapled-expired": "A A A A A A", "ocsp-stapled-bad-signature": "A A A A A A",
            "ocsp-stapled-wrong-responder": "A A A A A A", "must-staple-missing": "A A A A A A",
            "revoked-key-replay": "A X A A A A",
            "crl-good": "A A A A A A", "crl-revoked-leaf": "A A A A A A", "crl-stale": "A A A A A A",
            "ocsp-responder-unreachable": "A A A A A A", "crl-revoked-intermediate": "A A A A A A",
        ],
        "correct-revocation-soft": [
            "ocsp-stapled-good": "A A A A A A", "ocsp-stapled-revoked": "X X X X X X",
            "ocsp-stapled-unknown": "A A A A A A",
            "ocsp-stapled-expired": "A A A A A A", "ocsp-stapled-bad-signature": "A A A A A A",
            "ocsp-stapled-wrong-responder": "A A A A A A", "must-staple-missing": "X X X X X X",
            "revoked-key-replay": "A X A A A A",
            // Nothing stapled: it fetches the CRL the leaf names; only a current, signed CRL that lists it refuses.
            "crl-good": "A A A A A A", "crl-revoked-leaf": "X X X X X X", "crl-stale": "A A A A A A",
            "ocsp-responder-unreachable": "A A A A A A",
            // The leaf's CRL does not list it; lab-root's CRL, which its intermediate names, lists the intermediate.
            "crl-revoked-intermediate": "X X X X X X",
        ],
        "correct-revocation-hard": [
            "ocsp-stapled-good": "A A A A A A", "ocsp-stapled-revoked": "X X X X X X",
            "ocsp-stapled-unknown": "X X X X X X",
            "ocsp-stapled-expired": "X X X X X X", "ocsp-stapled-bad-signature": "X X X X X X",
            "ocsp-stapled-wrong-responder": "X X X X X X", "must-staple-missing": "X X X X X X",
            "revoked-key-replay": "X X X X X X",
            // No current status that says good: a listed serial, a stale CRL, a responder that refuses connections.
            "crl-good": "A A A A A A", "crl-revoked-leaf": "X X X X X X", "crl-stale": "X X X X X X",
            "ocsp-responder-unreachable": "X X X X X X", "crl-revoked-intermediate": "X X X X X X",
        ],
    ]

    static func observedRow(_ report: CheckReport, _ scenario: String, _ engine: String) -> String {
        PinProfile.all.map { p in
            report.verdicts.first { $0.scenario == scenario && $0.profile == p && $0.engine == engine }?.observed
                == .accepted ? "A" : "X"
        }.joined(separator: " ")
    }

    @Test(
        "each reference client passes every cell, doing what its declared policy predicts",
        arguments: ["correct", "correct-revocation-soft", "correct-revocation-hard"])
    func referenceClient(_ name: String) async throws {
        let client = try #require(BuiltInClients.named(name))
        let report = try await TestLab.runner().run(
            .inProcess(client), options: CheckOptions(scenarios: Self.scenarios))
        #expect(report.verdicts.count == Self.scenarios.count * PinProfile.all.count * 2)
        let notPassed = report.verdicts.filter { $0.status != .pass }.map {
            "\($0.scenario)/\($0.profile)/\($0.engine): \($0.status) \($0.reason)"
        }
        #expect(notPassed.isEmpty, "\(notPassed.joined(separator: "\n"))")
        #expect(report.verdicts.filter(\.wrongReason).isEmpty, "\(report.verdicts.filter(\.wrongReason).map(\.reason))")
        let rows = try #require(Self.rows[client.name])
        for s in Self.scenarios {
            for engine in ["openssl", "gnutls"] {
                #expect(Self.observedRow(report, s, engine) == rows[s], "\(client.name) on \(s)/\(engine)")
            }
        }
        #expect(report.clientChecks == client.checks)
        #expect(client.checks.revocation != nil && client.checks.ct == ClientChecks.CT.none)
    }

    @Test("without a staple, the checking clients fetch the status the leaf names from the scenario's responder")
    func fetchedStatusDecides() async throws {
        let client = try #require(BuiltInClients.named("correct-revocation-hard"))
        let report = try await TestLab.runner().run(
            .inProcess(client),
            options: CheckOptions(
                engines: [Engines.openssl], profiles: [.leafSPKI],
                scenarios: [
                    "crl-revoked-leaf", "crl-stale", "ocsp-responder-unreachable", "revoked-key-replay",
                    "crl-revoked-intermediate",
                ]))
        func detail(_ s: String) -> String {
            report.verdicts.first { $0.scenario == s && $0.profile == .leafSPKI }?.clientDetail ?? ""
        }
        #expect(
            detail("crl-revoked-leaf").contains(
                "the CRL at http://crl.pinning.test/lab-intermediate-a.crl lists the certificate as revoked"),
            "\(detail("crl-revoked-leaf"))")
        // The leaf's own CRL does not list it: the intermediate's, lab-root's, lists the intermediate.
        #expect(
            detail("crl-revoked-intermediate").contains(
                "the issuing CA certificate at depth 1: the CRL at http://crl.pinning.test/lab-root.crl lists the certificate as revoked"
            ),
            "\(detail("crl-revoked-intermediate"))")
        #expect(
            detail("crl-stale").contains("not current (its nextUpdate has passed: stale)"), "\(detail("crl-stale"))")
        #expect(
            detail("ocsp-responder-unreachable").contains(
                "OCSP http://ocsp.pinning.test/lab-intermediate-a: connect to 127.0.0.1:"),
            "\(detail("ocsp-responder-unreachable"))")
        // revoked-key-replay runs no responder: the lab's names lead nowhere, as when the attacker blocks them.
        #expect(
            detail("revoked-key-replay").contains("no lab responder serves this scenario"),
            "\(detail("revoked-key-replay"))")
    }

    @Test("server.responder takes the three behaviours; anything else is an error naming the field and the choices")
    func responderField() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scenarios/crl-stale.yaml")
        let good = try String(contentsOf: file, encoding: .utf8)
        let s = try ScenarioLoader.parse(yaml: good, file: "scenarios/crl-stale.yaml", expectedID: "crl-stale")
        #expect(s.server.responder == .staleCRL)
        let bad = good.replacingOccurrences(of: "responder: stale-crl", with: "responder: stale-crll")
        do {
            _ = try ScenarioLoader.parse(yaml: bad, file: "scenarios/crl-stale.yaml")
            Issue.record("an unknown responder behaviour was accepted")
        } catch let e as ScenarioError {
            let text = String(describing: e)
            #expect(
                text.contains("server.responder") && text.contains("stale-crll")
                    && text.contains("as-issued, stale-crl, refuses-connections"), "\(text)")
        }
    }

    @Test("a client that declares nothing is undecided exactly where the outcome depends on revocation")
    func undeclaredIsUndecided() async throws {
        let report = try await TestLab.runner().run(
            .inProcess(Undeclared()), options: CheckOptions(engines: [Engines.openssl], scenarios: Self.scenarios))
        for v in report.verdicts {
            let hardRow = try #require(Self.rows["correct-revocation-hard"]?[v.scenario])
            let softRow = try #require(Self.rows["correct-revocation-soft"]?[v.scenario])
            let noneRow = try #require(Self.rows["correct"]?[v.scenario])
            let i = try #require(PinProfile.all.firstIndex(of: v.profile)) * 2
            let depends = Set([hardRow, softRow, noneRow].map { Array($0)[i] }).count > 1
            if depends {
                #expect(
                    v.status == .policy && v.reason.hasPrefix("undecided:") && v.reason.contains("--client-checks"),
                    "\(v.scenario)/\(v.profile): \(v.status) \(v.reason)")
            } else {
                #expect(v.status == .pass, "\(v.scenario)/\(v.profile): \(v.status) \(v.reason)")
            }
        }
        #expect(report.summary.fail == 0 && report.summary.policy > 0)
    }

    @Test("a client that claims hard-fail but checks nothing fails revoked-key-replay where K1 is still pinned")
    func claimNotKept() async throws {
        var options = CheckOptions(
            engines: [Engines.openssl], scenarios: ["revoked-key-replay", "ocsp-stapled-revoked"])
        options.clientChecks = ClientChecks(revocation: .hard)
        let report = try await TestLab.runner().run(
            .inProcess(try #require(BuiltInClients.named("correct"))), options: options)
        let failed = Set(report.verdicts.filter { $0.status == .fail }.map { "\($0.scenario)/\($0.profile)" })
        #expect(
            failed.contains("revoked-key-replay/leaf-spki+backup") && failed.contains("revoked-key-replay/leaf-spki"))
        #expect(!failed.contains("revoked-key-replay/leaf-cert"), "the leaf-cert pin refuses it anyway")
        #expect(failed.count == 5 + 6, "\(failed.sorted())")
        let v = try #require(
            report.verdicts.first { $0.scenario == "revoked-key-replay" && $0.profile == .leafSPKIBackup })
        #expect(v.reason.contains("as a revocation=hard client"), "\(v.reason)")
    }
}
