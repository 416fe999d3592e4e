import Foundation
import PinningLab
import PinningLabModel
import PinningLabTestSupport
import Testing

/// What a command's claim changes, and what it does not (the CommandTemplates article): a client that sends its
/// request and only then refuses (it checks its pins after sending) has leaked the request — `fail`, with the reason
/// "sent its request, then refused" — while `disagree` is for a claim that contradicts an observation matching the
/// expectation: a client that exits 0 without ever sending a request where a refusal is expected.
@Suite struct ClaimAfterSendTests {
    /// `pin-scope-exact-host` serves the proxy's leaf for api.pinning.test with proxy-root in `{ca}`: every pinned
    /// cell expects a refusal, and a client that ignores the pins is accepted by its trust store.
    static let scenario = "pin-scope-exact-host"

    static func check(_ words: [String]) async throws -> [Verdict] {
        let client = CommandClient(name: "claim", template: try CommandTemplate(words), timeout: .seconds(30))
        let report = try await TestLab.runner().run(
            .command(client), options: CheckOptions(profiles: [.leafSPKI], scenarios: [scenario], jobs: 2))
        let cells = report.verdicts.filter { $0.profile == .leafSPKI }
        #expect(cells.count == 2, "one cell per engine")
        return cells
    }

    @Test(.requires("curl", "sh"))
    func aClientThatSendsThenRefusesFails() async throws {
        // curl without the pins: the request reaches the server; the command then exits 3, claiming a refusal.
        let verdicts = try await Self.check([
            "sh", "-c",
            "curl -s -o /dev/null --max-time 8 --noproxy '*' --resolve \"$PINLAB_RESOLVE\" --cacert \"$PINLAB_CA\" \"$PINLAB_URL\"; exit 3",
        ])
        for v in verdicts {
            #expect(v.expected == .refuse && v.observed == .accepted && v.claim == .refused, "\(v.engine): \(v.reason)")
            #expect(v.status == .fail, "\(v.engine): \(v.status): \(v.reason)")
            #expect(v.reason.contains("sent its request, then refused"), "\(v.engine): \(v.reason)")
            print("send-then-refuse on \(v.engine): \(v.status) — \(v.reason)")
        }
    }

    @Test(.requires("true"))
    func aClientThatClaimsSuccessWithoutSendingDisagrees() async throws {
        let verdicts = try await Self.check(["true", "{url}"])
        for v in verdicts {
            #expect(v.expected == .refuse && v.observed == .refused && v.claim == .accepted, "\(v.engine): \(v.reason)")
            #expect(v.status == .disagree, "\(v.engine): \(v.status): \(v.reason)")
            print("exit-0-without-sending on \(v.engine): \(v.status) — \(v.reason)")
        }
    }
}
