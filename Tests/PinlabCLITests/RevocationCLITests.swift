import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab check --client-checks`, judged with curl `--cert-status` (curl's hard-fail staple check: no staple, an
/// unverifiable, stale or "revoked" one fails the handshake) as an independent client.
@Suite("pinlab check: client checks (revocation)", .serialized)
struct RevocationCLITests {
    static let scenarios =
        "ocsp-stapled-good,ocsp-stapled-revoked,ocsp-stapled-unknown,ocsp-stapled-expired,ocsp-stapled-bad-signature,ocsp-stapled-wrong-responder,must-staple-missing,revoked-key-replay"

    @Test("a bad --client-checks names the flag, what is wrong and the form")
    func badFlag() async throws {
        let r = try await CLI.run(
            ["check", "--client", "correct", "--client-checks", "revocation=maybe"] + CLI.dirArgs)
        #expect(r.status == 64 || r.status == 2, "\(r.status)")
        #expect(
            r.stderr.contains("--client-checks: revocation 'maybe' is not none, soft or hard")
                && r.stderr.contains("ct=none|required"), "\(r.stderr)")
    }

    @Test(
        "curl --cert-status declared revocation=hard passes every revocation cell; undeclared, those cells are undecided",
        .requires("curl"))
    func curlCertStatus() async throws {
        let curl = [
            "--", "curl", "-sf", "--cert-status", "-o", "/dev/null", "--cacert", "{ca}", "--resolve", "{resolve}",
            "[--pinnedpubkey {pins.curl}]", "{url}",
        ]
        let common = [
            "check", "--scenarios", Self.scenarios, "--profiles", "none,leaf-spki,leaf-spki+backup", "--format", "json",
        ]
        let hard = try await CLI.run(common + ["--client-checks", "revocation=hard"] + CLI.dirArgs + curl)
        #expect(hard.status == 0, "\(hard.stdout.suffix(3000))\(hard.stderr)")
        let report = try CheckReport.decode(json: Data(hard.stdout.utf8), file: "stdout")
        #expect(report.clientChecks == ClientChecks(revocation: .hard))
        #expect(report.summary.fail == 0 && report.summary.pass == 8 * 3 * 2, "\(report.summary)")
        let replay = report.verdicts.filter { $0.scenario == "revoked-key-replay" && $0.profile == .leafSPKIBackup }
        #expect(
            replay.count == 2 && replay.allSatisfy { $0.observed == .refused },
            "curl --cert-status refuses the replayed K1 leaf")

        let text = try await CLI.run(
            common.filter { $0 != "json" && $0 != "--format" } + ["--client-checks", "revocation=hard"] + CLI.dirArgs
                + curl)
        #expect(text.stdout.contains("· checks revocation=hard"), "\(text.stdout.prefix(400))")

        // Declared as not checking revocation, curl --cert-status is stricter than it claims: red.
        let none = try await CLI.run(common + ["--client-checks", "revocation=none"] + CLI.dirArgs + curl)
        #expect(none.status != 0)
        // Declaring nothing: every cell that depends on revocation is undecided (policy), never pass or fail.
        let undeclared = try await CLI.run(common + CLI.dirArgs + curl)
        let u = try CheckReport.decode(json: Data(undeclared.stdout.utf8), file: "stdout")
        #expect(u.summary.fail == 0 && u.summary.policy > 0, "\(u.summary)")
        #expect(u.verdicts.filter { $0.status == .policy }.allSatisfy { $0.reason.hasPrefix("undecided:") })
    }
}
