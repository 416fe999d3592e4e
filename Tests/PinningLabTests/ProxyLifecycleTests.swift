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
            pki: try TestLab.pki(), configuration: InterceptProxy.Configuration(policies: PolicyTable(defaultPolicy: .mint)))
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
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(rc == 0)
            for _ in 0..<100 where !Sockets.hasPendingConnection(listener.fd) { try await Task.sleep(for: .milliseconds(10)) }
            #expect(Sockets.hasPendingConnection(listener.fd), "a connection waits on the reused descriptor")
        } else {
            print("the proxy's descriptor number \(old) went to another thread; settle is checked without the reuse")
        }
        let t0 = ContinuousClock.now
        #expect(await proxy.settle(timeout: .seconds(2)), "a stopped proxy with no connection open is settled")
        #expect(ContinuousClock.now - t0 < .seconds(1))
    }
}
