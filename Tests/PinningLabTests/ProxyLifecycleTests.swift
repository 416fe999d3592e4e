import Foundation
import PinningLab
import PinningLabCore
import PinningLabIntercept
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Interception proxy lifecycle")
struct ProxyLifecycleTests {
    /// `settle()` after `stop()` must not poll the closed listening descriptor: here its number is reused by another
    /// listener with a connection waiting, which the old code took for a connection to the proxy (it waited out the
    /// whole timeout and answered false).
    @Test func settleAfterStopNeverPollsTheClosedDescriptor() async throws {
        let proxy = try InterceptProxy.start(
            pki: try await TestLab.pki(),
            configuration: InterceptProxy.Configuration(policies: PolicyTable(defaultPolicy: .mint)))
        let old = proxy.listeningDescriptorForTesting
        await proxy.stop()
        // Take descriptor numbers until the proxy's comes back (the lowest free number is handed out first).
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        var reused: (fd: Int32, port: Int)?
        for _ in 0..<64 where reused == nil {
            let l = try Sockets.listen(address: "127.0.0.1", port: 0, backlog: 4)
            held.append(l.fd)
            if l.fd == old { reused = l }
        }
        // (Another suite's thread may take the number first; then only the settle itself is checked.)
        var client: Int32 = -1
        defer { if client >= 0 { close(client) } }
        if let listener = reused {
            client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = in_port_t(UInt16(listener.port).bigEndian)
            sa.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            #expect(rc == 0)
            for _ in 0..<100 where !Sockets.hasPendingConnection(listener.fd) {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(Sockets.hasPendingConnection(listener.fd), "a connection waits on the reused descriptor")
        } else {
            print("the proxy's descriptor number \(old) went to another thread; settle is checked without the reuse")
        }
        let t0 = ContinuousClock.now
        #expect(await proxy.settle(timeout: .seconds(2)), "a stopped proxy with no connection open is settled")
        #expect(ContinuousClock.now - t0 < .seconds(1))
    }

    /// A long session keeps exact per-host counts while the list of connections stays bounded: the proxy used to keep
    /// every observation of a session, so a client (or a peer) could grow its memory without limit.
    @Test(.requiresPython(module: "ssl"))
    func aLongSessionKeepsExactCountsAndABoundedList() async throws {
        var c = InterceptProxy.Configuration(
            pinned: [try HostPattern(parsing: "api.pinning.test")],
            policies: PolicyTable(defaultPolicy: .mint))
        c.keepConnections = 3
        let proxy = try InterceptProxy.start(pki: try await TestLab.pki(), configuration: c)
        // 30 clients that complete a handshake through the tunnel (without checking the certificate) and leave
        // without a request.
        let script = """
            import socket, ssl, sys
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            done = 0
            for _ in range(30):
                s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
                s.sendall(b'CONNECT api.pinning.test:443 HTTP/1.1\\r\\nHost: api.pinning.test:443\\r\\n\\r\\n')
                reply = b''
                while b'\\r\\n\\r\\n' not in reply:
                    reply += s.recv(1)
                if reply.startswith(b'HTTP/1.1 200'):
                    ctx.wrap_socket(s, server_hostname='api.pinning.test').close()
                    done += 1
            print(done)
            """
        let run = await ChildProcess.run(["python3", "-c", script, String(proxy.port)], timeout: .seconds(60))
        #expect(
            run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "30",
            "\(run.stdoutText) \(run.stderrText)")
        #expect(await proxy.settle())
        let report = proxy.report()
        await proxy.stop()
        let host = try #require(report.verdict(for: "api.pinning.test"))
        #expect(host.connections == 30, "every connection is counted in the host's verdict")
        #expect(host.status == .refused, "no request was sent through the intercepted tunnel")
        #expect(report.connections.count == 3, "only the latest connections are listed")
        #expect(report.connectionsDropped == 27)
        // The latest to *finish*, in the order they finished: the proxy may see a client's close after the next
        // client's connection has begun (ids [29, 30, 28] were seen under load), so the ids are among the last few
        // started, not exactly 28, 29, 30.
        let ids = report.connections.map(\.id)
        #expect(Set(ids).count == 3 && ids.allSatisfy { (25...30).contains($0) }, "the latest to finish: \(ids)")
        #expect(proxy.observations().count == 3)
    }
}
