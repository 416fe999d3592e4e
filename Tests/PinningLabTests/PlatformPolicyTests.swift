import Foundation
import PinningLab
import PinningLabModel
import PinningLabTestSupport
import Testing

/// The correct reference client, declaring a platform (``PinningClient/platform``).
struct OnPlatform: PinningClient {
    let inner: any PinningClient
    let platform: PlatformPolicy?
    var name: String { "correct-on-\(platform?.rawValue ?? "none")" }
    func run(_ target: ClientTarget) async -> ClientOutcome { await inner.run(target) }
}

/// How a cell's rule (platform policy, verifier variance) changes its verdict, and baselines, without servers.
@Suite("Platform policies, verifier variance and baselines in verdicts")
struct PlatformPolicyTests {
    static let accepted = ServerEvidence(
        connected: true, handshakeCompleted: true, applicationDataReceived: true, requestLine: "GET / HTTP/1.1")
    static let refused = ServerEvidence(connected: true, alertReceived: TLSAlert(code: 40))
    static let why = "static RSA: ATS refuses, OpenSSL's default accepts"

    static func judge(_ expected: PinningLabModel.Expectation, _ evidence: ServerEvidence, _ rule: CellRule) -> Verdict
    {
        Verdict.judge(
            scenario: "s", profile: .none, engine: "openssl", client: "c", expected: expected, evidence: evidence,
            outcome: nil, rule: rule)
    }

    @Test func aPolicyCellIsPolicyWhenTheOutcomeIsThePlatformsAndAFailureThatSaysSoWhenNot() {
        let asPrescribed = Self.judge(
            .accept, Self.accepted, CellRule(platform: .opensslDefault, policyReason: Self.why))
        #expect(asPrescribed.status == .policy)
        #expect(!asPrescribed.status.isDeviation)
        #expect(
            asPrescribed.reason.hasPrefix("policy: \(Self.why) — openssl-default accepts here"),
            "\(asPrescribed.reason)")
        let against = Self.judge(.refuse, Self.accepted, CellRule(platform: .ats, policyReason: Self.why))
        #expect(against.status == .fail)
        #expect(
            against.reason.hasPrefix("platform ats refuses here (\(Self.why)); expected refuse"), "\(against.reason)")
        // A refusal of what the platform allows (other platforms refuse it) is stricter than required, not a flaw.
        let stricter = Self.judge(.accept, Self.refused, CellRule(platform: .opensslDefault, policyReason: Self.why))
        #expect(stricter.status == .stricter)
        #expect(
            stricter.reason.hasPrefix(
                "stricter than required: \(Self.why) — openssl-default accepts here; the client aborted"),
            "\(stricter.reason)")
        // …unless the client refused on its pins: that is the pinning logic's doing, and stays a deviation.
        let pinned = Verdict.judge(
            scenario: "s", profile: .leafSPKI, engine: "openssl", client: "c", expected: .accept,
            evidence: Self.refused, outcome: .refused(.pinMismatch, "pin mismatch"),
            rule: CellRule(platform: .opensslDefault, policyReason: Self.why, variance: "x"))
        #expect(pinned.status == .fail, "\(pinned.reason)")
        // No platform named: judged by expect as before; the failure names the platforms whose clients do this.
        let unnamed = Self.judge(
            .refuse, Self.accepted, CellRule(policyReason: Self.why, otherPlatforms: [.android, .opensslDefault]))
        #expect(unnamed.status == .fail)
        #expect(
            unnamed.reason.hasSuffix(
                "policy: \(Self.why) — as on android, openssl-default: name the client's platform with --platform"))
        let plain = Self.judge(.refuse, Self.refused, CellRule(policyReason: Self.why))
        #expect(plain.status == .pass, "no platform named: a matching cell passes, as before")
    }

    @Test func aRefusalWhereVerifiersDifferIsStricterThanRequired() {
        let v = Self.judge(.accept, Self.refused, CellRule(variance: "GnuTLS does not try the trusted twin"))
        #expect(v.status == .stricter)
        #expect(!v.status.isDeviation)
        #expect(
            v.reason.hasPrefix("stricter than required: GnuTLS does not try the trusted twin; the client aborted"),
            "\(v.reason)")
        #expect(Self.judge(.accept, Self.accepted, CellRule(variance: "x")).status == .pass)
        // The client claims it accepted but sent nothing: still a deviation, never "stricter".
        let claim = Verdict.judge(
            scenario: "s", profile: .none, engine: "openssl", client: "c", expected: .accept,
            evidence: Self.refused, outcome: .accepted(), rule: CellRule(variance: "x"))
        #expect(claim.status == .fail)
        let summary = VerdictSummary([
            v, Self.judge(.accept, Self.accepted, CellRule(platform: .jdk, policyReason: "y")),
        ])
        #expect(summary.stricter == 1 && summary.policy == 1 && !summary.deviates)
        #expect(summary.line.hasSuffix(", 1 policy, 1 stricter than required"), "\(summary.line)")
    }

    /// An in-process client's own `platform` judges the policy cells on real servers; `CheckOptions.platform` overrides it.
    @Test func aPinningClientDeclaresItsPlatform() async throws {
        let correct = try #require(BuiltInClients.named("correct"))
        let runner = try await TestLab.runner()
        let options = CheckOptions(
            engines: [Engines.openssl], scenarios: ["tls-v1-2-no-forward-secrecy", "weak-rsa-1024"], jobs: 4)
        let ats = try await runner.run(.inProcess(OnPlatform(inner: correct, platform: .ats)), options: options)
        #expect(ats.platform == .ats)
        #expect(ats.summary.policy == 2 * PinProfile.all.count && !ats.deviates, "\(ats.summary.line)")
        // The correct client refuses static RSA, which the JDK refuses too but OpenSSL's default allows: stricter.
        let openssl = try await runner.run(
            .inProcess(OnPlatform(inner: correct, platform: .opensslDefault)), options: options)
        let rsa = try #require(openssl.verdict("tls-v1-2-no-forward-secrecy", .leafSPKI, "openssl"))
        #expect(rsa.status == .stricter && rsa.expected == .accept, "\(rsa.reason)")
        var overridden = options
        overridden.platform = .jdk
        let jdk = try await runner.run(
            .inProcess(OnPlatform(inner: correct, platform: .opensslDefault)), options: overridden)
        #expect(jdk.platform == .jdk)
        #expect(
            try #require(jdk.verdict("weak-rsa-1024", .none, "openssl")).status == .stricter, "the JDK accepts RSA-1024"
        )
        // No platform anywhere: exactly as before.
        let plain = try await runner.run(.inProcess(correct), options: options)
        #expect(plain.platform == nil && plain.summary.pass == plain.summary.total)
    }

    @Test func aBaselineMarksKnownDeviationsAndNamesChanges() throws {
        let fail = Self.judge(.refuse, Self.accepted, .plain)
        var ok = Self.judge(.accept, Self.accepted, .plain)
        ok.scenario = "t"
        var report = CheckReport(client: "c", engines: ["openssl"], verdicts: [fail, ok], scenarios: [])
        let baseline = Baseline(report)
        #expect(baseline.cells == ["s/none/openssl": .fail, "t/none/openssl": .pass])
        var same = report
        baseline.compare(&same, file: "b.json")
        #expect(same.baseline?.changed == false)
        #expect(same.verdicts[0].baselined == true && same.verdicts[1].baselined == nil)
        #expect(same.summary.baselined == 1)
        #expect(same.summaryLine.contains("deviates as in its baseline"))
        // t now fails: newly failing, named.
        report.verdicts[1] = {
            var v = Self.judge(.refuse, Self.accepted, .plain)
            v.scenario = "t"
            return v
        }()
        baseline.compare(&report, file: "b.json")
        let c = try #require(report.baseline)
        #expect(c.newlyFailing.map(\.cell) == ["t/none/openssl"] && c.newlyPassing.isEmpty)
        #expect(c.text.contains("newly failing (1):\n  t × none × openssl: pass → fail"), "\(c.text)")
        // Round trip through the file format.
        let decoded = try JSONDecoder().decode(Baseline.self, from: Data(try baseline.jsonString().utf8))
        #expect(decoded == baseline)
    }
}
