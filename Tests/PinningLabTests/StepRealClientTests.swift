import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// Real TLS stacks nobody on the project wrote, through the scenarios made of two connections, each keeping one
/// TLS session across them in one process (`Tests/Steps/session_pinning.*`, command templates naming `{url.1}` and
/// `{url.2}`). Each pins the leaf's SPKI in two places: where its TLS stack's documented behaviour runs the check on
/// every connection, and where it runs only on full handshakes. The second must be caught by
/// `resumption-after-unpinned-handshake` — step 2 resumes the interceptor's session made in step 1 — and the first
/// must pass it; both must pass `resumption-genuine` (no false refusals), on both engines.
@Suite("Real clients across the steps of a cell", .serialized)
struct StepRealClientTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Steps")
    static let pinned: [PinProfile] = [.leafSPKI, .leafSPKIBackup]

    static func client(_ name: String, _ command: [String]) throws -> CommandClient {
        // The step placeholders tell the runner to run both connections in this one process; the script reads
        // them from PINLAB_STEPS.
        CommandClient(
            name: name, template: try CommandTemplate(command + ["{url.1}", "{url.2}"]),
            supportedProfiles: [.none, .leafSPKI, .leafSPKIBackup], timeout: .seconds(30))
    }

    /// Runs `client` through the two scenarios on both engines and checks that it fails exactly `predicted`
    /// (cells of resumption-after-unpinned-handshake), and that every pinned step 2 there really resumed the
    /// interceptor's session (the server's observation), so the verdict is about resumption.
    func expect(_ client: CommandClient, fails predicted: [PinProfile]) async throws {
        let report = try await TestLab.runner().run(
            .command(client),
            options: CheckOptions(scenarios: ["resumption-genuine", "resumption-after-unpinned-handshake"], jobs: 4))
        #expect(report.cells(.unsupported, engine: "openssl").isEmpty)
        for engine in ["openssl", "gnutls"] {
            let failed = report.cells(.fail, engine: engine)
            let expected = cells(["resumption-after-unpinned-handshake"], predicted)
            #expect(
                failed == expected,
                "\(client.name) on \(engine): failed \(failed.sorted()), predicted \(expected.sorted()); \(report.verdicts.filter { $0.status == .fail || $0.status == .error }.map(\.reason))"
            )
            for p in [PinProfile.none] + Self.pinned {
                let v = try #require(report.verdict("resumption-after-unpinned-handshake", p, engine))
                let steps = try #require(v.steps, "\(v.reason)")
                #expect(steps[0].observed == .accepted, "\(client.name) \(engine) \(p) step 1: \(steps[0].reason)")
                // Where step 2 was accepted (no pins, or the pinner that is caught), the server records that it
                // resumed step 1's session: the catch is about resumption. A client that refuses inside the
                // handshake (Go's VerifyConnection, before its Finished) leaves the server no completed resumption
                // to record; where its detail reaches the reason, it says itself that the session was resumed.
                if steps[1].observed == .accepted {
                    #expect(
                        steps[1].evidence?.resumption != nil,
                        "\(client.name) \(engine) \(p): step 2 did not resume step 1's session: \(steps[1].reason)")
                } else if steps[1].reason.contains("resumed session:") {
                    #expect(
                        steps[1].reason.contains("resumed session: true"),
                        "\(client.name) \(engine) \(p): \(steps[1].reason)")
                }
                let genuine = try #require(report.verdict("resumption-genuine", p, engine))
                #expect(genuine.status == .pass, "\(client.name) \(engine) \(p): \(genuine.reason)")
            }
        }
    }

    /// Python's `ssl`: `getpeercert()` of a resumed connection is the certificate the session was made with, so a
    /// check after every `wrap_socket` catches the interceptor; a check guarded by `not ssock.session_reused` (as a
    /// certificate callback would be) lets step 2 through under every pinned profile.
    @Test(.requires("python3"))
    func pythonSSLWithSession() async throws {
        let script = Self.folder.appendingPathComponent("session_pinning.py").path
        try await expect(
            try Self.client("python-every-connection", ["python3", script, "every-connection"]), fails: [])
        try await expect(
            try Self.client("python-full-handshake-only", ["python3", script, "full-handshake-only"]),
            fails: Self.pinned)
    }

    /// Node's `tls`: `onConnectSecure` (lib/_tls_wrap.js) calls `checkServerIdentity` only when
    /// `!this.isSessionReused()` — the place Node's documentation shows pinning in is skipped on a resumed session,
    /// so that pinner is caught; the same check in the 'secureConnect' handler runs on every connection and passes.
    @Test(.requires("node"))
    func nodeTLSWithSession() async throws {
        let script = Self.folder.appendingPathComponent("session_pinning.js").path
        try await expect(try Self.client("node-secure-connect", ["node", script, "secure-connect"]), fails: [])
        try await expect(
            try Self.client("node-check-server-identity", ["node", script, "check-server-identity"]),
            fails: Self.pinned)
    }

    /// Node's `http2`, keeping its sessions open and coalescing: step 2's request for the pinned api.pinning.test
    /// rides the session opened for cdn.pinning.test when the certificate covers both names. The runner reads all
    /// steps after the process ends (one process for the cell), so the request must be found as an HTTP/2 stream on
    /// step 1's connection — by "the k-th connection is the k-th step" it read as "never connected", and the client
    /// that coalesces without checking the pinned host's pins passed. Checking them before reuse passes; reusing
    /// blindly fails exactly the pinned profiles.
    @Test(.requires("node"))
    func nodeHTTP2Coalescing() async throws {
        let script = Self.folder.appendingPathComponent("h2_coalescing.js").path
        for (mode, predicted) in [("checks-pins", [PinProfile]()), ("reuses-blindly", Self.pinned)] {
            let client = try Self.client("node-h2-\(mode)", ["node", script, mode])
            let report = try await TestLab.runner().run(
                .command(client), options: CheckOptions(scenarios: ["h2-coalescing-pinned-host"], jobs: 4))
            for engine in ["openssl", "gnutls"] {
                let failed = report.cells(.fail, engine: engine)
                let expected = cells(["h2-coalescing-pinned-host"], predicted)
                #expect(
                    failed == expected,
                    "\(mode) on \(engine): failed \(failed.sorted()), predicted \(expected.sorted()); \(report.verdicts.filter { $0.status == .fail || $0.status == .error }.map(\.reason))"
                )
                for p in [PinProfile.none] + Self.pinned {
                    let v = try #require(report.verdict("h2-coalescing-pinned-host", p, engine))
                    let steps = try #require(v.steps, "\(v.reason)")
                    #expect(steps[0].observed == .accepted, "\(mode) \(engine) \(p) step 1: \(steps[0].reason)")
                    // Where step 2 reached the interceptor, it did so as a stream on step 1's connection: coalesced.
                    if p == .none || mode == "reuses-blindly" {
                        #expect(
                            steps[1].observed == .accepted
                                && steps[1].evidence?.requestLine?.contains(
                                    "on connection 1, opened in an earlier step") == true,
                            "\(mode) \(engine) \(p) step 2: \(steps[1].reason)")
                    } else {
                        #expect(steps[1].observed == .refused, "\(mode) \(engine) \(p) step 2: \(steps[1].reason)")
                    }
                }
            }
        }
    }

    /// Go's `crypto/tls` with a shared `ClientSessionCache`: `VerifyPeerCertificate` is not called on resumed
    /// connections (golang/go #31641), `VerifyConnection` is called on every connection.
    @Test(.requires("go"))
    func goCryptoTLSWithSessionCache() async throws {
        let build = TestScratch.root.appendingPathComponent("pinlab-go-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: build, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: build) }
        let binary = build.appendingPathComponent("session-pinning").path
        var env = ProcessInfo.processInfo.environment
        // Go's own build cache (warm after the first build of crypto/tls, which took over 180 s cold at a CI run's
        // load); a folder of this test's only where there is no HOME to keep one in.
        if env["GOCACHE"] == nil && env["HOME"] == nil { env["GOCACHE"] = build.appendingPathComponent("cache").path }
        env["GO111MODULE"] = "off"
        let made = await ChildProcess.run(
            ["go", "build", "-o", binary, Self.folder.appendingPathComponent("session_pinning.go").path],
            environment: env, timeout: .seconds(180))
        try #require(made.status == 0, "go build: \(String(decoding: made.stderr, as: UTF8.self))")
        try await expect(try Self.client("go-verify-connection", [binary, "verify-connection"]), fails: [])
        try await expect(
            try Self.client("go-verify-peer-certificate", [binary, "verify-peer-certificate"]),
            fails: Self.pinned)
    }
}
