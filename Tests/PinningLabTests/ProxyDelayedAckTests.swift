import Foundation
import PinningLab
import PinningLabCore
import PinningLabIntercept
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// The interception proxy's own TLS server (it answers intercepted requests itself) met the same 40 ms stall as the
/// fixture server (DelayedAckTests in the engine tests): a client with Nagle's algorithm on waited for the proxy's
/// delayed ACK of its Finished before its request left.
@Suite("the interception proxy does not hold a client with Nagle on by its delayed ACK")
struct ProxyDelayedAckTests {
    /// `Tests/Nagle/nagle_client.py`: TLS 1.3 over a socket with Nagle on, through the proxy and straight to the
    /// control in turn.
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Nagle/nagle_client.py").path

    /// The control: an OpenSSL fixture server with TLS 1.3 tickets, whose NewSessionTicket carries the ACK (see
    /// DelayedAckTests in the engine tests); connections alternate, so a loaded machine slows both alike.
    @Test(
        "request to response through the proxy's own TLS as fast as the control (no 40 ms delayed ACK)",
        .requires("python3"))
    func noDelayedAckStall() async throws {
        let pki = try await TestLab.pki()
        let proxy = try InterceptProxy.start(
            pki: pki, configuration: .init(policies: PolicyTable(defaultPolicy: .stuff)))
        var config = ServerTLSConfiguration.makeServerConfiguration(try #require(pki["leaf-v1"]))
        config.setVersion(.tls13)
        config.resumption = SessionResumption(.tickets)
        let control = try await FixtureServer.start(
            engine: Engines.openssl, configuration: config, label: "nagle-control")
        let folder = TestScratch.root.appendingPathComponent("pinlab-proxy-nagle-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let trust = folder.appendingPathComponent("roots.pem")
        let roots = [try #require(pki["proxy-root"]).certificateDER, try #require(pki["lab-root"]).certificateDER]
        try PEM.encode(roots, label: "CERTIFICATE").write(to: trust, atomically: true, encoding: .utf8)
        let through = "proxy:\(proxy.port):api.pinning.test"
        let direct = String(control.port)
        let run = await ChildProcess.run(
            ["python3", Self.client, trust.path, "9", through, direct], timeout: .seconds(60))
        #expect(await proxy.settle())
        await proxy.stop()
        await control.stop()
        #expect(run.status == 0, "\(run.output)")
        var ms: [String: [Double]] = [:]
        for line in run.stdoutText.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let v = Double(parts[1]) { ms[String(parts[0]), default: []].append(v) }
        }
        let proxied = try #require(ms[through])
        let straight = try #require(ms[direct])
        try #require(proxied.count == 9 && straight.count == 9, "\(run.output)")
        let median = { (v: [Double]) in v.sorted()[v.count / 2] }
        let gap = median(proxied) - median(straight)
        print(
            "through the proxy: request → response median \(median(proxied)) ms, control \(median(straight)) ms (gap \(gap) ms): \(proxied.sorted())"
        )
        // With the stall every request through the proxy took ≥ 40 ms more (44.0–44.4 ms measured), the fastest one
        // too; a loaded machine adds jitter to some requests (medians 20.8 and 25 ms apart were seen on a busy CI
        // machine), never 40 ms to all of them. So the fastest requests are compared, 30 ms apart at most.
        let fastestGap = proxied.min()! - straight.min()!
        #expect(
            fastestGap < 30,
            "each request waited for the proxy's delayed ACK: \(proxied.sorted()) against \(straight.sorted()) (median gap \(gap) ms)"
        )
    }
}
