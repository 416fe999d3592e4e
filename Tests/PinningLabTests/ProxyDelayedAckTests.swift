import Foundation
import PinningLab
import PinningLabCore
import PinningLabIntercept
import PinningLabTestSupport
import Testing

/// The interception proxy's own TLS server (it answers intercepted requests itself) met the same 40 ms stall as the
/// fixture server (DelayedAckTests in the engine tests): a client with Nagle's algorithm on waited for the proxy's
/// delayed ACK of its Finished before its request left.
@Suite("the interception proxy does not hold a client with Nagle on by its delayed ACK")
struct ProxyDelayedAckTests {
    /// Alternates a connection through the proxy (CONNECT, then TLS with the proxy's minted leaf) with one straight
    /// to the control server; prints, per connection, which it was and the milliseconds from the request's `sendall`
    /// to the response's end. Nagle stays on.
    static let client = """
        import socket, ssl, sys, time
        proxy, control, ca, count = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
        ctx = ssl.create_default_context(cafile=ca)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        def exchange(raw, host):
            with ctx.wrap_socket(raw, server_hostname=host) as tls:
                t = time.monotonic()
                tls.sendall(b"GET / HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % host.encode())
                answer = b""
                while True:
                    data = tls.recv(16384)
                    if not data:
                        break
                    answer += data
                assert answer.startswith(b"HTTP/1.1 "), answer[:40]
                return (time.monotonic() - t) * 1000
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", proxy), timeout=10)
            raw.sendall(b"CONNECT api.pinning.test:443 HTTP/1.1\\r\\nHost: api.pinning.test:443\\r\\n\\r\\n")
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += raw.recv(1)
            assert head.startswith(b"HTTP/1.1 200"), head
            print("proxy %.3f" % exchange(raw, "api.pinning.test"))
            print("control %.3f" % exchange(socket.create_connection(("127.0.0.1", control), timeout=10), "localhost"))
        """

    /// The control: an OpenSSL fixture server with TLS 1.3 tickets, whose NewSessionTicket carries the ACK (see
    /// DelayedAckTests in the engine tests); connections alternate, so a loaded machine slows both alike.
    @Test("request to response through the proxy's own TLS as fast as the control (no 40 ms delayed ACK)", .requires("python3"))
    func noDelayedAckStall() async throws {
        let pki = try await TestLab.pki()
        let proxy = try InterceptProxy.start(pki: pki, configuration: .init(policies: PolicyTable(defaultPolicy: .stuff)))
        var config = ServerTLSConfiguration.makeServerConfiguration(try #require(pki["leaf-v1"]))
        config.setVersion(.tls13)
        config.resumption = SessionResumption(.tickets)
        let control = try await FixtureServer.start(engine: Engines.openssl, configuration: config, label: "nagle-control")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-proxy-nagle-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let trust = folder.appendingPathComponent("roots.pem")
        let roots = [try #require(pki["proxy-root"]).certificateDER, try #require(pki["lab-root"]).certificateDER]
        try PEM.encode(roots, label: "CERTIFICATE").write(to: trust, atomically: true, encoding: .utf8)
        let run = await ChildProcess.run(["python3", "-c", Self.client, String(proxy.port), String(control.port), trust.path, "9"],
                                         timeout: .seconds(60))
        #expect(await proxy.settle())
        await proxy.stop()
        await control.stop()
        #expect(run.status == 0, "\(run.output)")
        var ms: [String: [Double]] = [:]
        for line in run.stdoutText.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let v = Double(parts[1]) { ms[String(parts[0]), default: []].append(v) }
        }
        let through = try #require(ms["proxy"]), direct = try #require(ms["control"])
        try #require(through.count == 9 && direct.count == 9, "\(run.output)")
        let median = { (v: [Double]) in v.sorted()[v.count / 2] }
        let gap = median(through) - median(direct)
        print("through the proxy: request → response median \(median(through)) ms, control \(median(direct)) ms (gap \(gap) ms): \(through.sorted())")
        // With the stall every request through the proxy took ≥ 40 ms more (41.5–43.7 ms measured).
        #expect(gap < 20, "each request waited for the proxy's delayed ACK: \(through.sorted()) against \(direct.sorted())")
    }
}
