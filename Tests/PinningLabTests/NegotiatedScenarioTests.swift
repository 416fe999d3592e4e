import Foundation
import PinningLab
import PinningLabModel
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// The scenario format of negotiated servers — a host's alternative chains (`server.alternatives`, judged by the chain
/// served through `expect-served`), its key-exchange groups (`tls.groups`), ECH service (`ech`) and the declared
/// `key-exchange` check — read, refused with file:line, field and fix, and judged by `Cell.judge`.
@Suite("Negotiated scenarios: alternatives, groups, ECH service, key-exchange checks")
struct NegotiatedScenarioTests {
    /// A host with an ECDSA and an RSA certificate; the RSA key is the backup pin.
    static let dualYAML = """
        id: dual
        title: Two certificates
        tags: [negotiation]
        teaching: >
          Text.
        server:
          chain: [leaf-v1, lab-intermediate-a]
          alternatives:
            - [leaf-rsa-2048, lab-intermediate-a]
          tls: {groups: [x25519, secp256r1]}
        client:
          trust: lab-root
          backup: leaf-rsa-2048
        refusal: pin-mismatch
        expect:
          none: accept
          leaf-cert: accept
          leaf-spki: accept
          leaf-spki+backup: accept
          intermediate-spki: accept
          root-spki: accept
        expect-served:
          leaf-rsa-2048: {leaf-cert: refuse, leaf-spki: refuse}
        """

    static func parse(_ yaml: String) throws -> Scenario {
        try ScenarioLoader.parse(yaml: yaml, file: "scenarios/dual.yaml", expectedID: "dual")
    }

    static func refused(_ yaml: String) -> ScenarioError? {
        do {
            _ = try parse(yaml)
            return nil
        } catch let e as ScenarioError {
            return e
        } catch {
            return nil
        }
    }

    @Test func alternativesGroupsAndServedExpectationsAreRead() throws {
        let s = try Self.parse(Self.dualYAML)
        #expect(s.server.chains == [["leaf-v1", "lab-intermediate-a"], ["leaf-rsa-2048", "lab-intermediate-a"]])
        #expect(s.server.groups == ["x25519", "secp256r1"])
        #expect(s.expected(.leafSPKI, served: "leaf-v1") == .accept)
        #expect(s.expected(.leafSPKI, served: "leaf-rsa-2048") == .refuse)
        #expect(s.expected(.leafSPKIBackup, served: "leaf-rsa-2048") == .accept)
        // The pin sets that cover one of the two certificates are outages waiting for a stack update; the others not.
        #expect(s.outageWarning(.leafSPKI)?.contains("a client served leaf-rsa-2048 is refused") == true)
        #expect(s.outageWarning(.leafCert) != nil)
        for p in [PinProfile.none, .leafSPKIBackup, .intermediateSPKI, .rootSPKI] { #expect(s.outageWarning(p) == nil) }
        // The JSON form (`pinlab scenarios show --format json`) carries them.
        let json = String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
        #expect(json.contains("\"alternatives\":[[\"leaf-rsa-2048\",\"lab-intermediate-a\"]]"), "\(json)")
        #expect(json.contains("\"expect-served\":{\"leaf-rsa-2048\":{"), "\(json)")
    }

    /// The judge takes the expectation of the chain the server sent, says which it was, and names the outage.
    @Test func theJudgeFollowsTheCertificateServed() throws {
        let s = try Self.parse(Self.dualYAML)
        let cell = PinningLabModel.Cell(scenario: s, profile: .leafSPKI, engine: "openssl", client: "c")
        var sent = ServerEvidence(
            connected: true, handshakeCompleted: true, applicationDataReceived: true, requestLine: "GET / HTTP/1.1")
        sent.servedIdentity = "leaf-rsa-2048"
        // Served RSA under K1 alone, the client sent its request: it should have refused.
        let wrong = cell.judge(evidence: sent, outcome: nil)
        #expect(wrong.status == .fail, "\(wrong.reason)")
        #expect(wrong.expected == .refuse)
        #expect(wrong.reason.contains("served leaf-rsa-2048 of the host's 2 certificates"), "\(wrong.reason)")
        #expect(wrong.reason.contains("does not cover every certificate"), "\(wrong.reason)")
        #expect(wrong.outage?.contains("a client served leaf-rsa-2048 is refused") == true)
        // The same request on the ECDSA certificate passes.
        sent.servedIdentity = "leaf-v1"
        let right = cell.judge(evidence: sent, outcome: nil)
        #expect(right.status == .pass, "\(right.reason)")
        #expect(right.expected == .accept)
        // A refusal of the RSA certificate passes, for the scenario's refusal reason.
        var refused = ServerEvidence(connected: true, alertReceived: TLSAlert(code: 42))
        refused.servedIdentity = "leaf-rsa-2048"
        let v = cell.judge(evidence: refused, outcome: nil)
        #expect(v.status == .pass, "\(v.reason)")
        #expect(v.expectedCategory == .pinMismatch)
    }

    @Test func keyExchangeIsADeclaredCheckThatDefaultsToAny() throws {
        let yaml = Self.dualYAML.replacingOccurrences(
            of: "expect-served:\n  leaf-rsa-2048: {leaf-cert: refuse, leaf-spki: refuse}",
            with: "expect-if:\n  reason: \"hybrids are client policy\"\n  key-exchange=hybrid: refuse")
        let s = try Self.parse(yaml)
        #expect(s.expected(.none, platform: nil, checks: .undeclared) == .accept)
        #expect(s.expected(.none, platform: nil, checks: ClientChecks(keyExchange: .any)) == .accept)
        #expect(s.expected(.none, platform: nil, checks: ClientChecks(keyExchange: .hybrid)) == .refuse)
        // Undeclared is judged as `any`, never undecided (unlike revocation and CT).
        #expect(s.undeclaredChecks(.none, checks: .undeclared).isEmpty)
        let checks = try ClientChecks(parsing: "key-exchange=hybrid,ct=required")
        #expect(checks.description == "ct=required,key-exchange=hybrid")
        #expect(throws: ClientChecksError.self) { try ClientChecks(parsing: "key-exchange=pq") }
        // On any scenario, a client that requires a hybrid refuses a classical key exchange: the group decides.
        let baseline = try #require(try Catalogue.bundled()["baseline"])
        let hybrid = PinningLabModel.Cell(
            scenario: baseline, profile: .leafSPKI, engine: "openssl", client: "c",
            checks: ClientChecks(keyExchange: .hybrid))
        var sent = ServerEvidence(
            connected: true, handshakeCompleted: true, applicationDataReceived: true, requestLine: "GET / HTTP/1.1")
        sent.negotiatedGroup = "x25519"
        let classical = hybrid.judge(evidence: sent, outcome: nil)
        #expect(classical.status == .fail && classical.expected == .refuse, "\(classical.reason)")
        sent.negotiatedGroup = "X25519MLKEM768"
        #expect(hybrid.judge(evidence: sent, outcome: nil).status == .pass)
        // A hybrid-only ClientHello the server could not answer: refused, rightly.
        var failed = ServerEvidence(connected: true, alertSent: TLSAlert(code: 40))
        failed.offered = ClientHelloOffers(groups: [.group(0x11ec)], keyShares: [.group(0x11ec)])
        let v = hybrid.judge(evidence: failed, outcome: nil)
        #expect(v.status == .pass && v.expected == .refuse, "\(v.reason)")
        // The same client undeclared is judged by the scenario.
        let any = PinningLabModel.Cell(scenario: baseline, profile: .leafSPKI, engine: "openssl", client: "c")
        sent.negotiatedGroup = "x25519"
        #expect(any.judge(evidence: sent, outcome: nil).status == .pass)
    }

    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var old: String
        var new: String
        var line: Int
        var field: String
        var mentions: [String]
        var testDescription: String { name }
    }

    static let broken: [Broken] = [
        Broken(
            name: "an alternative with the same server certificate",
            old: "- [leaf-rsa-2048, lab-intermediate-a]", new: "- [leaf-v1, lab-intermediate-a]", line: 9,
            field: "server.alternatives[0]", mentions: ["already the server certificate", "its own server certificate"]
        ),
        Broken(
            name: "an alternative led by a CA", old: "- [leaf-rsa-2048, lab-intermediate-a]",
            new: "- [lab-intermediate-a]", line: 9, field: "server.alternatives[0][0]", mentions: ["leaf"]),
        Broken(
            name: "alternatives not a list of chains",
            old: "  alternatives:\n    - [leaf-rsa-2048, lab-intermediate-a]",
            new: "  alternatives: leaf-rsa-2048", line: 8, field: "server.alternatives",
            mentions: ["list of chains", "alternatives: [[leaf-rsa-2048"]),
        Broken(
            name: "an unknown group", old: "groups: [x25519, secp256r1]", new: "groups: [x25519, X25519MLKEM786]",
            line: 10, field: "server.tls.groups[1]", mentions: ["not a key-exchange group", "X25519MLKEM768"]),
        Broken(
            name: "expect-served for a certificate the host does not hold", old: "  leaf-rsa-2048: {leaf-cert",
            new: "  leaf-rsa-3072: {leaf-cert", line: 23, field: "expect-served.leaf-rsa-3072",
            mentions: ["not the first certificate of one of the host's alternatives", "leaf-rsa-2048"]),
        Broken(
            name: "expect-served that changes nothing",
            old: "leaf-rsa-2048: {leaf-cert: refuse, leaf-spki: refuse}", new: "leaf-rsa-2048: {leaf-cert: accept}",
            line: 23, field: "expect-served.leaf-rsa-2048", mentions: ["changes nothing"]),
        Broken(
            name: "expect-served on a host with one chain",
            old: "  alternatives:\n    - [leaf-rsa-2048, lab-intermediate-a]\n", new: "", line: 21,
            field: "expect-served", mentions: ["one chain", "add `server.alternatives`"]),
        Broken(
            name: "an ECH service the lab does not know", old: "  tls: {groups: [x25519, secp256r1]}",
            new: "  tls: {groups: [x25519, secp256r1]}\n  ech: retry", line: 11, field: "server.ech",
            mentions: ["Did you mean 'retry-configs'"]),
    ]

    @Test(arguments: broken)
    func aBrokenFieldIsNamedWithItsFix(_ c: Broken) {
        #expect(Self.dualYAML.contains(c.old), "the case does not apply")
        guard let e = Self.refused(Self.dualYAML.replacingOccurrences(of: c.old, with: c.new)) else {
            Issue.record("parsed without error")
            return
        }
        #expect(e.line == c.line, "\(e)")
        #expect(e.field == c.field, "\(e)")
        #expect(!e.fix.isEmpty, "\(e)")
        for m in c.mentions { #expect(e.description.contains(m), "\(e) should mention \(m)") }
    }

    /// A real run on both engines: the correct client is served the host's preferred RSA certificate, refuses under
    /// the leaf pins (K1 + K2 hold no RSA key), and the report lists those pin sets as outages.
    @Test func aRealRunFollowsTheServedCertificateAndListsTheOutages() async throws {
        let runner = try await TestLab.runner()
        let report = try await runner.run(
            .inProcess(BuiltInClients.named("correct")!),
            options: CheckOptions(scenarios: ["dual-certificates-rsa-first"]))
        #expect(report.verdicts.count == 12)
        for v in report.verdicts {
            #expect(v.status == .pass, "\(v.profile) \(v.engine): \(v.reason)")
            #expect(v.evidence?.servedIdentity == "leaf-rsa-2048", "\(v.profile) \(v.engine)")
            let covered = [PinProfile.none, .intermediateSPKI, .rootSPKI].contains(v.profile)
            #expect((v.outage == nil) == covered, "\(v.profile) \(v.engine): \(v.outage ?? "no outage")")
        }
        let text = report.renderText()
        #expect(text.contains("dual-certificates-rsa-first/leaf-spki+backup (served leaf-rsa-2048)"), "\(text)")
    }

    /// What no engine of this build can serve says so per engine, naming the library, and is never served otherwise.
    @Test func whatNoEngineCanServeIsUnsupportedWithTheLibrary() async throws {
        let runner = try await TestLab.runner()
        let report = try await runner.run(
            .inProcess(BuiltInClients.named("correct")!),
            options: CheckOptions(scenarios: ["ech-accepted", "post-quantum-rekey"]))
        #expect(report.verdicts.count == 24)
        for v in report.verdicts {
            #expect(v.status == .unsupported, "\(v.scenario) \(v.engine): \(v.reason)")
            if v.scenario == "ech-accepted" {
                #expect(v.reason.contains("needs an ECH-capable server (OpenSSL 4.0 or later); this build runs"))
                #expect(v.reason.contains(v.engine == "openssl" ? "OpenSSL 3." : "GnuTLS 3."), "\(v.reason)")
            } else if runner.pki.identities.contains(where: { $0.name == "leaf-pq-rekey" }) {
                #expect(v.reason.contains("ML-DSA-65 keys need"), "\(v.reason)")
            } else {
                #expect(v.reason.contains("pinlab pki init --post-quantum"), "\(v.reason)")
            }
        }
    }
}
