import Foundation
import PinningLab
import PinningLabCore
import PinningLabIntercept
import PinningLabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain TCP listener on 127.0.0.1 that nobody accepts on: it stands for the control API or any other service on
/// the proxy's machine. A connection the proxy dials to it waits in its queue, so `sawConnection` tells whether the
/// proxy dialled it (no packet ever leaves loopback).
/// Runs `work` on a thread started now — not when a cooperative thread next runs the caller's task, which a full test
/// run can keep busy for seconds — and hands back a task that waits for its result.
func startedNow<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) -> Task<T, Never> {
    let (results, continuation) = AsyncStream.makeStream(of: T.self, bufferingPolicy: .bufferingNewest(1))
    startThread(named: name) {
        continuation.yield(work())
        continuation.finish()
    }
    return Task {
        for await result in results { return result }
        preconditionFailure("the thread ended without a result")
    }
}

final class LoopbackListener: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try Sockets.listen(address: "127.0.0.1", port: 0, backlog: 16)
    }

    deinit { close(fd) }

    var sawConnection: Bool { Sockets.hasPendingConnection(fd) }

    /// Accepts the first connection within `timeout` and reads what arrives on it until EOF (or the time is up), on a
    /// thread started now (see ``acceptAndReset(within:payload:)``); await the returned task for what arrived.
    func receive(within timeout: Duration) -> Task<String?, Never> {
        let fd = self.fd
        return startedNow("test.listener") {
            let end = ContinuousClock.now.advanced(by: timeout)
            var accepted: Int32 = -1
            // poll(2) wakes the thread when a connection comes or bytes arrive: no fixed naps between tries.
            while accepted < 0, waitReadable(fd, until: end) {
                if let (c, _) = Sockets.accept(fd) { accepted = c }
            }
            guard accepted >= 0 else { return nil }
            defer { close(accepted) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while waitReadable(accepted, until: end) {
                let n = read(accepted, &chunk, chunk.count)
                if n == 0 { break }
                if n > 0 { bytes += chunk.prefix(n) } else if errno != EAGAIN && errno != EINTR { break }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Accepts connections until one whose first bytes begin with `payload` (each waited for up to `timeout`), then
    /// resets that one (RST: SO_LINGER 0). Returns false, and resets nothing, when no such connection came in time: a
    /// reset before the proxy's first bytes would hit it while it still dials, which is another closure (CI under load
    /// once spent the whole shared window starting Python and reset a connection that had sent nothing yet). Another
    /// connection — a client of another suite probing a stopped server whose freed port this listener was given (a
    /// full run once reset such a stray and left the proxy's connection waiting, which ended in an idle timeout) — is
    /// closed untouched and the wait goes on.
    ///
    /// The thread starts now, before the caller goes on: an `async let` of this waited for a cooperative thread, which a
    /// full test run keeps busy — the proxy's connection then sat in the listen queue until the tunnel's idle timeout.
    /// Await the returned task for the outcome.
    func acceptAndReset(within timeout: Duration, payload: [UInt8]) -> Task<Bool, Never> {
        let fd = self.fd
        return startedNow("test.reset") {
            let end = ContinuousClock.now.advanced(by: timeout)
            while waitReadable(fd, until: end) {
                guard let (accepted, _) = Sockets.accept(fd) else { continue }
                var bytes: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while bytes.count < payload.count, waitReadable(accepted, until: end) {
                    let n = read(accepted, &chunk, chunk.count)
                    if n == 0 { break }
                    if n > 0 { bytes += chunk.prefix(n) } else if errno != EAGAIN && errno != EINTR { break }
                }
                guard bytes.starts(with: payload) else {
                    close(accepted)
                    continue
                }
                var option = linger(l_onoff: 1, l_linger: 0)
                setsockopt(accepted, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                close(accepted)
                return true
            }
            return false
        }
    }
}

/// `pinlab intercept` is no relay (issue 20): a destination the client names on this machine or a local network is
/// refused unless a route names it; off loopback only allowed peers are served; name look-ups never stall a worker.
/// Every destination here is on loopback, or is refused before any dial (asserted on the reply, which comes first).
@Suite("The interception proxy is no relay")
struct ProxyRelayTests {
    static func start(_ configure: (inout InterceptProxy.Configuration) -> Void) async throws -> InterceptProxy {
        var c = InterceptProxy.Configuration(policies: PolicyTable(defaultPolicy: .passthrough))
        configure(&c)
        return try InterceptProxy.start(pki: try await TestLab.pki(), configuration: c)
    }

    /// Sends `CONNECT authority` for each authority on its own connection; returns each reply (the whole of a
    /// refusal, only the head of a 200: nothing is sent into a tunnel, so nothing is dialled on its account).
    static func connect(_ port: Int, _ authorities: [String]) async -> [String] {
        let script = """
            import socket, sys
            for a in sys.argv[2:]:
                s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
                s.sendall(b'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (a.encode(), a.encode()))
                data = b''
                while b'\\r\\n\\r\\n' not in data:
                    chunk = s.recv(4096)
                    if not chunk: break
                    data += chunk
                while not data.startswith(b'HTTP/1.1 200'):
                    chunk = s.recv(4096)
                    if not chunk: break
                    data += chunk
                s.close()
                print(data.decode(errors='replace').replace('\\r\\n', ' ') + '\\n=====')
            """
        let run = await ChildProcess.run(["python3", "-c", script, String(port)] + authorities, timeout: .seconds(60))
        return run.stdoutText.components(separatedBy: "\n=====\n").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        .filter { !$0.isEmpty }
    }

    /// CONNECT to a loopback listener under passthrough: 403 with the class and the fix, and the listener saw no
    /// connection — by address, IPv4-mapped address and by a name that resolves to loopback (`localhost`).
    @Test func loopbackDestinationsAreRefused() async throws {
        let service = try LoopbackListener()
        let proxy = try await Self.start { _ in }
        let authorities = [
            "127.0.0.1:\(service.port)", "[::ffff:127.0.0.1]:\(service.port)", "localhost:\(service.port)",
        ]
        let replies = await Self.connect(proxy.port, authorities)
        #expect(await proxy.settle())
        let report = proxy.report()
        await proxy.stop()  // joins the workers, which are the only ones that dial: no wait needed after it
        #expect(!service.sawConnection, "the proxy dialled the loopback service")
        #expect(replies.count == 3, "\(replies)")
        for reply in replies {
            #expect(reply.hasPrefix("HTTP/1.1 403 Forbidden"), "\(reply)")
            #expect(
                reply.contains("a loopback address (this machine)")
                    && reply.contains("name it with --upstream PATTERN=HOST:PORT to allow it"), "\(reply)")
        }
        #expect(replies.last?.contains("localhost resolves to ") == true, "\(replies)")
        #expect(
            report.connections.allSatisfy {
                $0.closure == "destination-refused" && $0.upstream == nil && $0.host == nil
            })
        #expect(report.summary.destinationsRefused == 3 && report.hosts.isEmpty && report.summary.otherConnections == 0)
        #expect(
            report.renderText().contains(
                "3 connection(s) asked for a destination on this machine or a local network and were refused"))
    }

    /// A route is the operator's explicit allow: the destination it names is tunnelled (the listener receives the
    /// client's bytes); a loopback port no route names is still refused.
    @Test func aRouteNamingTheDestinationAllowsIt() async throws {
        let routed = try LoopbackListener()
        let other = try LoopbackListener()
        let proxy = try await Self.start {
            $0.upstreams = [
                UpstreamRoute(
                    pattern: try! HostPattern(parsing: "api.pinning.test"), host: "127.0.0.1", port: routed.port)
            ]
        }
        let script = """
            import socket, sys
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
            s.sendall(b'CONNECT 127.0.0.1:%s HTTP/1.1\\r\\n\\r\\n' % sys.argv[2].encode())
            print(s.recv(4096).decode().split('\\r\\n')[0])
            s.sendall(b'hello through the tunnel')
            s.shutdown(socket.SHUT_WR)
            s.recv(4096)
            """
        let received = routed.receive(within: .seconds(10))
        let run = await ChildProcess.run(
            ["python3", "-c", script, String(proxy.port), String(routed.port)], timeout: .seconds(30))
        #expect(run.stdoutText.hasPrefix("HTTP/1.1 200"), "\(run.output)")
        #expect(await received.value == "hello through the tunnel")
        let refused = await Self.connect(proxy.port, ["127.0.0.1:\(other.port)"])
        #expect(await proxy.settle())
        let report = proxy.report()
        await proxy.stop()
        #expect(refused.first?.hasPrefix("HTTP/1.1 403 Forbidden") == true, "\(refused)")
        #expect(!other.sawConnection)
        #expect(report.connections.contains { $0.upstream == "127.0.0.1:\(routed.port)" && $0.bytesFromClient > 0 })
    }

    /// Private, link-local, unspecified, multicast and broadcast addresses: 403 naming the class, and no dial
    /// (the refusal is the reply to the CONNECT; before the fix the 200 came first, and the tunnel is never used
    /// here, so nothing ever left the machine).
    @Test func localNetworkAddressesAreRefusedBeforeAnyDial() async throws {
        let proxy = try await Self.start { _ in }
        let cases: [(String, String)] = [
            ("10.1.2.3:443", "a private-range address"), ("172.16.0.1:443", "a private-range address"),
            ("192.168.1.1:443", "a private-range address"), ("100.64.0.1:443", "a private-range address"),
            ("[fd00::1]:443", "a private-range address"), ("169.254.169.254:80", "a link-local address"),
            ("[fe80::1]:443", "a link-local address"), ("0.0.0.0:443", "an unspecified address"),
            ("[::]:443", "an unspecified address"), ("224.0.0.1:443", "a multicast address"),
            ("255.255.255.255:443", "a broadcast address"),
        ]
        let replies = await Self.connect(proxy.port, cases.map(\.0))
        #expect(await proxy.settle())
        let observations = proxy.observations()
        await proxy.stop()
        #expect(replies.count == cases.count, "\(replies)")
        for (reply, (authority, kind)) in zip(replies, cases) {
            #expect(
                reply.hasPrefix("HTTP/1.1 403 Forbidden") && reply.contains(kind)
                    && reply.contains("--upstream PATTERN=HOST:PORT"), "\(authority): \(reply)")
        }
        #expect(observations.allSatisfy { $0.upstream == nil && $0.closure == "destination-refused" })
    }

    @Test func addressClasses() {
        for (address, kind) in [
            ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("64:ff9b::7f00:1", "loopback"), ("10.0.0.1", "private-range"), ("172.31.255.255", "private-range"),
            ("192.168.0.1", "private-range"), ("100.127.255.255", "private-range"), ("fc00::1", "private-range"),
            ("fdff::1", "private-range"), ("169.254.0.1", "link-local"), ("fe80::1%eth0", "link-local"),
            ("febf::1", "link-local"), ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("::", "unspecified"),
            ("224.0.0.251", "multicast"), ("ff02::1", "multicast"), ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::ffff:0:127.0.0.1", "loopback"), ("::ffff:0:10.1.2.3", "private-range"),
            ("64:ff9b:1::a00:1", "private-range"),
            ("198.18.0.1", "reserved"), ("192.0.0.8", "reserved"), ("203.0.113.5", "reserved"),
            ("2001:db8::1", "reserved"),
        ] {
            #expect(DestinationClass.of(address)?.rawValue == kind, "\(address)")
        }
        for publicAddress in [
            "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255", "192.169.0.1",
            "11.0.0.1", "169.255.0.1", "2606:4700::1111", "::ffff:8.8.8.8",
        ] {
            #expect(DestinationClass.of(publicAddress) == nil, "\(publicAddress)")
        }
    }

    /// The host the proxy judges comes from the ClientHello when the authority is an address: an SNI naming a
    /// passthrough host must not open a tunnel to a loopback authority. The 200 is out by then, so the connection
    /// is closed, and the report says why.
    @Test func aPassthroughSNICannotReachALoopbackAuthority() async throws {
        let service = try LoopbackListener()
        let proxy = try await Self.start { $0.policies = try! PolicyTable.parse(["mint", "evil.test=passthrough"]) }
        let run = await ChildProcess.run(
            ["python3", "-c", Self.tlsScript, String(proxy.port), "127.0.0.1:\(service.port)", "evil.test"],
            timeout: .seconds(30))
        let observation = await proxy.observation(of: "127.0.0.1:\(service.port)")
        await proxy.stop()  // joins the workers, which are the only ones that dial
        #expect(run.stdoutText.hasPrefix("HTTP/1.1 200 Connection established closed"), "\(run.output)")
        #expect(!service.sawConnection, "the proxy dialled the loopback authority")
        #expect(
            observation?.closure == "destination-refused"
                && observation?.error?.contains("127.0.0.1 is a loopback address") == true,
            "\(String(describing: observation))")
    }

    /// `stuff` with the chain fetched from the upstream dials too: without a route, a loopback authority is not
    /// fetched from (the lab's chain is appended, and the observation says why); the session itself is intercepted.
    @Test func theGenuineChainFetchIsVettedToo() async throws {
        let service = try LoopbackListener()
        let proxy = try await Self.start {
            $0.policies = PolicyTable(defaultPolicy: .stuff)
            $0.genuineChainFromUpstream = true
        }
        let run = await ChildProcess.run(
            ["python3", "-c", Self.tlsScript, String(proxy.port), "127.0.0.1:\(service.port)", "api.pinning.test"],
            timeout: .seconds(30))
        let observation = await proxy.observation(of: "127.0.0.1:\(service.port)")
        // The observation (awaited above) holds the decision not to fetch, and stop() joins the workers, which are the
        // only ones that dial (the fetch is a phase of the connection on its worker): nothing can dial after it.
        await proxy.stop()
        #expect(run.stdoutText.contains("intercepted_by"), "\(run.output)")
        #expect(!service.sawConnection, "the proxy fetched a chain from the loopback authority")
        let chain = observation?.genuineChain ?? ""
        #expect(
            chain.hasPrefix(
                "the upstream's chain was not fetched: the proxy does not relay to 127.0.0.1:\(service.port)")
                && chain.hasSuffix("appended the lab's"), "\(chain)")
    }

    /// CONNECT, then a TLS handshake with SNI argv[3] that verifies nothing, then a GET: prints the CONNECT reply's
    /// status line and what followed (`closed` when the proxy ended the connection).
    static let tlsScript = """
        import socket, ssl, sys
        s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
        s.sendall(b'CONNECT %s HTTP/1.1\\r\\n\\r\\n' % sys.argv[2].encode())
        status = s.recv(4096).decode().split('\\r\\n')[0]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        try:
            t = ctx.wrap_socket(s, server_hostname=sys.argv[3])
            t.sendall(b'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
            print(status, 'TLS', t.recv(4096).decode(errors='replace'))
        except Exception as e:
            print(status, 'closed', type(e).__name__)
        """

    /// A look-up that hangs does not stall the only worker: a second CONNECT through the same proxy is answered
    /// while the first one's look-up is held (the resolver waits for the test's release, not for a clock); the slow
    /// one gets its 502 when its look-up ends.
    @Test func aSlowLookupDoesNotStallTheWorker() async throws {
        let service = try LoopbackListener()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Whatever happens below, the held look-up ends with the test (a failed #require must not leave it waiting).
        defer { release.signal() }
        let proxy = try await Self.start {
            $0.listener.workerThreads = 1
            // Neither the proxy's own look-up bound (5 s) nor the resolver's safety bound may end the held look-up
            // while a loaded machine starts the fast client (a full CI run took 93 s here): the test releases it.
            $0.lookupTimeout = .seconds(900)
            $0.upstreams = [
                UpstreamRoute(pattern: try! HostPattern(parsing: "fast.test"), host: "fast.test", port: service.port)
            ]
            $0.resolver = { host in
                if host == "slow.test" {
                    entered.signal()
                    _ = release.wait(timeout: .now() + 600)
                    return .failure(NameLookupFailure("slow on purpose"))
                }
                return .success(["127.0.0.1"])
            }
        }
        let slowOut = TestScratch.root.appendingPathComponent("pinlab-slow-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: slowOut) }
        let slow = try ChildProcess.spawnBackground(
            ["python3", "-c", Self.connectScript, String(proxy.port), "slow.test:443"],
            stdoutFile: slowOut, stderrFile: slowOut)
        defer { slow.terminate() }
        // The slow look-up has begun (the resolver holds it): only now does the fast CONNECT come.
        let held = await onAThreadOfItsOwn("test.lookup") {
            entered.wait(timeout: .now() + TestTimeouts.exchange.timeInterval) == .success
        }
        try #require(held, "the slow CONNECT never reached the resolver")
        let tunnelled = service.receive(within: .seconds(10))  // ends the fast tunnel once its client closed
        let fast = await ChildProcess.run(
            ["python3", "-c", Self.connectScript, String(proxy.port), "fast.test:443"],
            timeout: TestTimeouts.command)
        // By events, not a stopwatch: the fast CONNECT was answered while the slow look-up was held (a stalled worker
        // answers nothing until that look-up ends, and the resolver holds it until the release below).
        let slowAnswer = (try? String(contentsOfFile: slowOut, encoding: .utf8)) ?? ""
        release.signal()
        #expect(
            fast.stdoutText.hasPrefix("HTTP/1.1 200"),
            "the second CONNECT was not answered while the slow look-up was held: \(fast.output)")
        #expect(slowAnswer.isEmpty, "the slow CONNECT was answered before its look-up ended: \(slowAnswer)")
        #expect(await tunnelled.value == "")
        #expect(
            await eventually(TestTimeouts.exchange) { !slow.isRunning },
            "the slow CONNECT got no answer after its look-up ended")
        #expect(await proxy.settle())
        await proxy.stop()
        let slowReply = (try? String(contentsOfFile: slowOut, encoding: .utf8)) ?? ""
        #expect(slowReply.hasPrefix("HTTP/1.1 502 Bad Gateway"), "\(slowReply)")
        #expect(slowReply.contains("cannot resolve slow.test: slow on purpose"), "\(slowReply)")
    }

    /// `CONNECT argv[2]` on a new connection: prints the first reply, CRLFs as spaces, and closes. (A reply held by a
    /// resolver comes when the test releases it: the socket's bound is the test's, not a guess at the machine's speed.)
    static let connectScript = """
        import socket, sys
        s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=600)
        s.sendall(b'CONNECT %s HTTP/1.1\\r\\n\\r\\n' % sys.argv[2].encode())
        print(s.recv(4096).decode(errors='replace').replace('\\r\\n', ' '), flush=True)
        s.close()
        """

    /// A look-up has a bounded time: past it, 502 with the reason, without waiting for the resolver.
    @Test func aLookupHasABoundedTime() async throws {
        // The resolver is held until the client has its answer: the only way an answer can come is the proxy's bound.
        let release = DispatchSemaphore(value: 0)
        let proxy = try await Self.start {
            $0.lookupTimeout = .milliseconds(300)
            $0.resolver = { _ in
                _ = release.wait(timeout: .now() + 60)
                return .success(["192.0.2.1"])  // never dialled: the answer comes too late
            }
        }
        let script = """
            import socket, sys, time
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
            t = time.time()
            s.sendall(b'CONNECT stuck.test:443 HTTP/1.1\\r\\n\\r\\n')
            reply = s.recv(4096).decode()
            print('%d %s' % ((time.time() - t) * 1000, reply.replace('\\r\\n', ' ')))
            """
        let run = await ChildProcess.run(["python3", "-c", script, String(proxy.port)], timeout: .seconds(30))
        release.signal()
        await proxy.stop()
        let parts = run.stdoutText.split(separator: " ", maxSplits: 1).map(String.init)
        let milliseconds = try #require(Int(parts.first ?? ""), "\(run.output)")
        let reply = parts.last ?? ""
        #expect(
            reply.hasPrefix("HTTP/1.1 502 Bad Gateway") && reply.contains("cannot resolve stuck.test within 0.3 s"),
            "\(reply)")
        #expect(milliseconds >= 250, "answered after \(milliseconds) ms, before the 0.3 s bound")
    }

    /// Look-ups queued or running are bounded: one more is answered 503 at once.
    @Test func pendingLookupsAreBounded() async throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let proxy = try await Self.start {
            $0.lookupThreads = 1
            $0.maxPendingLookups = 1
            $0.resolver = { _ in
                entered.signal()
                _ = release.wait(timeout: .now() + 60)
                return .failure(NameLookupFailure("slow on purpose"))
            }
        }
        let firstOut = TestScratch.root.appendingPathComponent("pinlab-pending-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: firstOut) }
        let first = try ChildProcess.spawnBackground(
            ["python3", "-c", Self.connectScript, String(proxy.port), "one.test:443"],
            stdoutFile: firstOut, stderrFile: firstOut)
        defer { first.terminate() }
        // The first look-up is running (the resolver holds it until the release below): one is pending.
        let held = await onAThreadOfItsOwn("test.lookup") {
            entered.wait(timeout: .now() + TestTimeouts.exchange.timeInterval) == .success
        }
        try #require(held, "the first CONNECT never reached the resolver")
        let second = await ChildProcess.run(
            ["python3", "-c", Self.connectScript, String(proxy.port), "two.test:443"],
            timeout: TestTimeouts.command)
        release.signal()
        release.signal()  // a second look-up, should the bound fail to refuse it, is not held either
        #expect(
            await eventually(TestTimeouts.exchange) { !first.isRunning },
            "the first CONNECT got no answer after its look-up ended")
        await proxy.stop()
        let firstReply = (try? String(contentsOfFile: firstOut, encoding: .utf8)) ?? ""
        #expect(
            second.stdoutText.hasPrefix("HTTP/1.1 503 Service Unavailable")
                && second.stdoutText.contains("1 name look-ups are pending"),
            "\(second.output)")
        #expect(firstReply.hasPrefix("HTTP/1.1 502 Bad Gateway"), "\(firstReply)")
    }

    /// `--allow-peer`: IPv4 and IPv6 blocks, an IPv4 peer of a dual-stack socket (`::ffff:a.b.c.d`) matched as
    /// IPv4, this machine always served, bad blocks named with the fix.
    @Test func peerAllowList() throws {
        let phone = try AddressRange(parsing: "192.168.1.23/32")
        #expect(
            phone.contains("192.168.1.23") && !phone.contains("192.168.1.24") && phone.contains("::ffff:192.168.1.23"))
        let lan = try AddressRange(parsing: "192.168.1.77/24")
        #expect(lan.description == "192.168.1.0/24" && lan.contains("192.168.1.200") && !lan.contains("192.168.2.1"))
        let v6 = try AddressRange(parsing: "fd00:1234::/32")
        #expect(v6.contains("[fd00:1234::9]") && !v6.contains("fd00:1235::9") && !v6.contains("192.168.1.23"))
        #expect(
            try AddressRange(parsing: "10.0.0.0/0").contains("8.8.8.8")
                && !(try AddressRange(parsing: "::/0").contains("8.8.8.8")))
        var c = InterceptProxy.Configuration(allowedPeers: [phone, v6])
        for (peer, served) in [
            ("192.168.1.23:50000", true), ("[::ffff:192.168.1.23]:50000", true), ("[fd00:1234::9]:1", true),
            ("127.0.0.1:1", true), ("[::1]:1", true), ("[::ffff:127.0.0.1]:1", true),
            ("192.168.1.24:50000", false), ("[::ffff:192.168.1.24]:50000", false), ("10.0.0.1:1", false),
            ("[fe80::1]:1", false),
            ("?:0", false),
        ] {
            #expect(c.admits(peer: peer) == served, "\(peer)")
        }
        c.allowedPeers = []
        #expect(c.admits(peer: "10.0.0.1:1"))  // on loopback (the only place an empty list is accepted) nothing changes
        for bad in ["192.168.1.300/32", "10.0.0.0/33", "fd00::/129", "phone", "", "10.0.0.1/x"] {
            let error = #expect(throws: InterceptError.self, "\(bad)") { try AddressRange(parsing: bad) }
            #expect(
                error?.option == "--allow-peer" && error?.fix?.contains("192.168.1.23/32") == true,
                "\(String(describing: error))")
        }
    }

    /// Off loopback without an allow-list the proxy does not start, and says what to add — before it binds:
    /// 192.0.2.1 (TEST-NET-1) is no address of this machine, so a bind would fail with another error; with an
    /// allow-list it is that bind error that comes. Nothing is ever bound off loopback here.
    @Test func offLoopbackWithoutAllowPeerIsRefusedBeforeBinding() async throws {
        for address in ["192.0.2.1", "::"] {
            let error = await #expect(throws: InterceptError.self) {
                try await Self.start { $0.listener = ListenerSettings(bindAddress: address, allowNonLoopback: true) }
            }
            #expect(
                error?.option == "--allow-peer" && error?.fix?.contains("--allow-peer 192.168.1.23/32") == true,
                "\(String(describing: error))")
            #expect(error?.reason.contains("refusing to listen on \(address)") == true)
        }
        let bindError = await #expect(throws: InterceptError.self) {
            try await Self.start {
                $0.listener = ListenerSettings(bindAddress: "192.0.2.1", allowNonLoopback: true)
                $0.allowedPeers = [try! AddressRange(parsing: "192.168.1.23")]
            }
        }
        #expect(
            bindError?.option == "--listen" && bindError?.reason.contains("cannot listen on 192.0.2.1") == true,
            "\(String(describing: bindError))")
    }
}

extension InterceptProxy {
    /// The observation of the connection that asked for `authority`, once it has ended (nil after `timeout`). The
    /// suites share one process, and the kernel may give this proxy a port another suite's test still probes: a
    /// stray connection is observed too, and `observations().first` or `settle()` (which waits for it to end) once
    /// met one that sat idle until its timeout.
    func observation(of authority: String, within timeout: Duration = TestTimeouts.exchange) async
        -> InterceptObservation?
    {
        var found: InterceptObservation?
        await eventually(timeout) {
            found = observations().first(where: { $0.authority == authority })
            return found != nil
        }
        return found
    }
}
