// pinlab-reliability: in-process reliability checks of the fixture servers (RELIABILITY.md).
//
//   pinlab-reliability hostile PKI_DIR ENGINE [N]        N hostile connections (never speak / one byte a second /
//                                                      stop mid-handshake) while a good client keeps handshaking
//   pinlab-reliability soak PKI_DIR ENGINE [N]           N handshakes against one server, accepting and refusing
//                                                      clients mixed; fds, threads and RSS per batch; every
//                                                      observation checked against the client that made it
//   pinlab-reliability scopes PKI_DIR [SECONDS] [TASKS]  TASKS `Lab.withServer` scopes started and stopped in
//                                                      parallel for SECONDS: no port collision, no cross-talk
//
// PINLAB_EVENT_LOOP=poll makes hostile's servers wait with poll(2) instead of epoll, to measure one against the other.
//
// Each prints one `RESULT PASS|FAIL <check>: <figures>` line at the end and exits 1 on FAIL. The clients are
// OpenSSL clients in this process (blocking sockets on their own threads) on 127.0.0.1.
import CPinningLabOpenSSL
import Foundation
import PinningLab
import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL
import PinningLabTesting

#if canImport(Glibc)
import Glibc
#endif

// MARK: measurements of this process

/// Descriptors of this process that are sockets.
func socketCount() -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.filter { ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? "").hasPrefix("socket:") }.count
}

/// Threads of this process whose name starts with `prefix` (a fixture server's workers are `pl<port>-<n>`).
func threads(named prefix: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "").hasPrefix(prefix) }.count
}


/// Raises the soft descriptor limit to the hard one; returns (before, after).
func raiseFDLimit() -> (UInt64, UInt64) {
    var r = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    let before = UInt64(r.rlim_cur)
    r.rlim_cur = r.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r)
    return (before, UInt64(r.rlim_cur))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("pinlab-reliability: \(message)\n".utf8))
    exit(2)
}

/// Runs blocking work on a thread of its own, off Swift's cooperative pool.
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        Thread { c.resume(returning: body()) }.start()
    }
}

/// Runs `count` blocking jobs on `threads` threads; returns their results in order.
func parallel<T: Sendable>(_ count: Int, threads: Int, _ job: @escaping @Sendable (Int) -> T) async -> [T] {
    let chunks = await withTaskGroup(of: [(Int, T)].self) { group in
        for t in 0..<threads {
            group.addTask {
                await offPool {
                    stride(from: t, to: count, by: threads).map { ($0, job($0)) }
                }
            }
        }
        var all: [(Int, T)] = []
        for await c in group { all += c }
        return all
    }
    return chunks.sorted { $0.0 < $1.0 }.map(\.1)
}

// MARK: the in-process client

/// OpenSSL client contexts: `accepting` verifies nothing (it proceeds); `refusing` fails every chain, so the
/// client sends a fatal alert during the handshake, as a pinning client does on a mismatch.
final class ClientContexts: @unchecked Sendable {  // SSL_CTX is thread-safe once configured
    let accepting: OpaquePointer
    let refusing: OpaquePointer
    let tls12: OpaquePointer
    init() {
        accepting = SSL_CTX_new(TLS_client_method())!
        refusing = SSL_CTX_new(TLS_client_method())!
        SSL_CTX_set_verify(refusing, SSL_VERIFY_PEER) { _, _ in 0 }
        tls12 = SSL_CTX_new(TLS_client_method())!
        _ = SSL_CTX_ctrl(tls12, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
    }
    deinit {
        SSL_CTX_free(accepting)
        SSL_CTX_free(refusing)
        SSL_CTX_free(tls12)
    }
}

struct Exchange: Sendable {
    var connected = false
    var handshakeDone = false
    var localPort = 0
    var response: [UInt8] = []
    var handshakeSeconds = 0.0
    /// The `connection` and `request` fields of the server's JSON answer.
    var answeredConnection: Int?
    var answeredRequest: String?
    var answeredScenario: String?
}

/// The loopback source address that names client `k` (127.1.0.0 + k): every connection of a run has its own, so the
/// server's record of its peer identifies exactly one client (source ports alone repeat within a few hundred).
func sourceAddress(_ k: Int) -> String { "127.\(1 + (k >> 16) & 0x7f).\((k >> 8) & 0xff).\(k & 0xff)" }

/// Connects to 127.0.0.1:port (from `source` when given), handshakes with `context`, and if `request` is given
/// sends it and reads the answer.
func exchange(port: Int, context: OpaquePointer, request: String?, source: String? = nil) -> Exchange {
    var x = Exchange()
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return x }
    defer { close(fd) }
    if let source {
        var from = sockaddr_in()
        from.sin_family = sa_family_t(AF_INET)
        from.sin_addr.s_addr = inet_addr(source)
        let rc = withUnsafePointer(to: &from) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { return x }
    }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var tv = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = in_port_t(UInt16(port).bigEndian)
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    let t0 = Sockets.now()
    let rc = withUnsafePointer(to: &sa) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0, let ssl = SSL_new(context) else { return x }
    defer { SSL_free(ssl) }
    x.connected = true
    var local = sockaddr_in()
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    x.localPort = Int(UInt16(bigEndian: local.sin_port))
    SSL_set_fd(ssl, fd)
    _ = cpl_client_set_tlsext_host_name(ssl, "localhost")
    x.handshakeDone = SSL_connect(ssl) == 1
    x.handshakeSeconds = Double(Sockets.now() - t0) / 1e9
    guard x.handshakeDone, let request else { return x }
    let bytes = Array(request.utf8)
    guard SSL_write(ssl, bytes, Int32(bytes.count)) == Int32(bytes.count) else { return x }
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = SSL_read(ssl, &buffer, Int32(buffer.count))
        if n <= 0 { break }
        x.response += buffer[0..<Int(n)]
    }
    SSL_shutdown(ssl)
    if let start = x.response.firstRange(of: [13, 10, 13, 10])?.upperBound,
        let json = try? JSONSerialization.jsonObject(with: Data(x.response[start...])) as? [String: Any]
    {
        x.answeredConnection = json["connection"] as? Int
        x.answeredRequest = json["request"] as? String
        x.answeredScenario = json["scenario"] as? String
    }
    return x
}

extension Array where Element == UInt8 {
    func firstRange(of needle: [UInt8]) -> Range<Int>? {
        guard count >= needle.count else { return nil }
        for i in 0...(count - needle.count) where self[i..<(i + needle.count)].elementsEqual(needle) {
            return i..<(i + needle.count)
        }
        return nil
    }
}

func engine(named name: String) -> any TLSEngine {
    switch name {
    case "openssl": return OpenSSLEngine()
    case "gnutls": return GnuTLSEngine()
    default: fail("engine must be openssl or gnutls, not \(name)")
    }
}

func result(_ ok: Bool, _ check: String, _ figures: String) -> Never {
    print("RESULT \(ok ? "PASS" : "FAIL") \(check): \(figures)")
    exit(ok ? 0 : 1)
}

// MARK: hostile

/// `hostile_clients.py` as a child process: started before the idle counts are taken, told to connect later.
final class HostileProcess: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    private var pending = Data()

    init(script: String, port: Int, count: Int) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, String(port), String(count)]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    func go() { input.fileHandleForWriting.write(Data("go\n".utf8)) }

    /// The next line the script prints (blocking).
    func line() -> String? {
        while true {
            if let nl = pending.firstIndex(of: 0x0A) {
                let l = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeSubrange(...nl)
                return l
            }
            let d = output.fileHandleForReading.availableData
            if d.isEmpty { return nil }
            pending += d
        }
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        try? output.fileHandleForReading.close()
    }
}

func hostile(pki: LabPKI, engineName: String, count: Int) async {
    let limits = raiseFDLimit()
    let leaf = try! pki.identity("leaf-v1")
    let configuration = ServerTLSConfiguration.makeServerConfiguration(leaf)
    // Long enough for all N to be open at once on a loaded machine (opening 5,000 took 20–25 s at load 16–25).
    let handshakeTimeout = 60
    // The connection cap must exceed the hostile connections, or they fill it and the good client waits in the
    // listen queue until they time out (the default cap is 512; see RELIABILITY.md).
    let options = FixtureServer.Options(
        handshakeTimeout: .seconds(handshakeTimeout), idleTimeout: .seconds(handshakeTimeout),
        maxConnections: count + 512, maxStoredObservations: count + 2000)
    let loop = options.eventLoop  // PINLAB_EVENT_LOOP=poll: both servers poll
    #if os(Linux)
    let loopName = loop == .poll ? "poll" : "epoll"
    #else
    let loopName = "poll"
    #endif
    let server = try! await FixtureServer.start(engine: engine(named: engineName), configuration: configuration, options: options, label: "hostile")
    // A control server on the same engine, never attacked: probed alternately with the attacked one, so that both
    // medians come from the same moments of a shared, noisy machine.
    let control = try! await FixtureServer.start(engine: engine(named: engineName), configuration: configuration, label: "control")
    let contexts = ClientContexts()
    let port = server.port, controlPort = control.port
    let probes = 100
    /// Alternating handshakes to the server and the control: (server median ms, control median ms, failures).
    func measure() async -> (median: Double, control: Double, failures: Int) {
        let xs = await offPool {
            (0..<probes).map { _ in
                (exchange(port: port, context: contexts.accepting, request: nil),
                 exchange(port: controlPort, context: contexts.accepting, request: nil))
            }
        }
        return (median(xs.map(\.0).filter(\.handshakeDone).map(\.handshakeSeconds)) * 1000,
                median(xs.map(\.1).filter(\.handshakeDone).map(\.handshakeSeconds)) * 1000,
                xs.filter { !$0.0.handshakeDone || !$0.1.handshakeDone }.count)
    }
    _ = await measure()  // warm-up
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("hostile_clients.py").path
    let hostile = try! HostileProcess(script: script, port: port, count: count)
    _ = await server.settle()
    let idle = await measure()
    _ = await server.settle()
    let workers = "pl\(port)-"
    let idleSockets = socketCount(), idleThreads = threadCount(), idleWorkers = threads(named: workers)
    let before = server.connectionsAccepted
    hostile.go()
    let t0 = Sockets.now()
    guard let ready = await offPool({ hostile.line() }), ready.hasPrefix("ready ") else { fail("the hostile clients did not connect") }
    let openedIn = Double(Sockets.now() - t0) / 1e9
    let openWhileMeasuring = server.connectionsOpen
    let peakSockets = socketCount()
    let loaded = await measure()
    let openAfterMeasuring = server.connectionsOpen
    // Every hostile connection must be reclaimed by the handshake timeout.
    let deadline = Sockets.now() + UInt64(handshakeTimeout + 60) * 1_000_000_000
    while server.connectionsOpen > 0 && Sockets.now() < deadline { try? await Task.sleep(for: .milliseconds(100)) }
    let reclaimedIn = Double(Sockets.now() - t0) / 1e9
    let closedLine = await offPool { hostile.line() } ?? "?"
    hostile.stop()
    _ = await server.settle()
    let after = await measure()
    _ = await server.settle()
    let endSockets = socketCount(), endThreads = threadCount(), endWorkers = threads(named: workers)
    let hostileObservations = server.observations().filter { $0.id > before && !$0.handshakeCompleted }
    var closures: [String: Int] = [:]
    for o in hostileObservations { closures[o.closure.rawValue, default: 0] += 1 }
    await server.stop()
    await control.stop()
    let ratio = loaded.median / loaded.control
    let ok = ready == "ready \(count)" && openWhileMeasuring >= count && loaded.failures == 0 && ratio <= 2
        && hostileObservations.count == count && endSockets <= idleSockets && endWorkers == idleWorkers
        && after.failures == 0 && server.connectionsOpen == 0
    func ms(_ x: Double) -> String { String(format: "%.2f", x) }
    result(
        ok, "hostile \(engineName)",
        "\(loopName) loop; fd limit \(limits.0) raised to \(limits.1); \(count) hostile connections (\(ready) in \(String(format: "%.1f", openedIn)) s; "
            + "\(openWhileMeasuring) open on the server before and \(openAfterMeasuring) after the probes); good-client median handshake under attack "
            + "\(ms(loaded.median)) ms vs \(ms(loaded.control)) ms on an unattacked control server probed alternately (\(String(format: "%.2f", ratio))×, "
            + "\(loaded.failures) failures of \(probes)); before the attack \(ms(idle.median)) / \(ms(idle.control)) ms, after \(ms(after.median)) / \(ms(after.control)) ms; "
            + "all reclaimed \(String(format: "%.1f", reclaimedIn)) s after the attack began (handshake timeout \(handshakeTimeout) s; hostile side: \(closedLine)); "
            + "server closures \(closures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); "
            + "sockets idle \(idleSockets) / peak \(peakSockets) / after \(endSockets), worker threads \(idleWorkers) / \(endWorkers), "
            + "all threads \(idleThreads) / \(endThreads)")
}

// MARK: soak

func soak(pki: LabPKI, engineName: String, total: Int) async {
    let leaf = try! pki.identity("leaf-v1")
    let configuration = ServerTLSConfiguration.makeServerConfiguration(leaf)
    let maxStored = 500
    let server = try! await FixtureServer.start(
        engine: engine(named: engineName), configuration: configuration,
        options: .init(maxStoredObservations: maxStored), label: "soak")
    let contexts = ClientContexts()
    let port = server.port
    let batch = 500
    let batches = max(1, total / batch)
    // Warm-up: the first fifth of the run, and at least until the stored observations reach their bound.
    let warmup = max(batches / 5, (maxStored * 5 / 4) / batch + 2)
    var samples: [(fds: Int, threads: Int, rss: Int)] = []
    var wrong: [String] = []
    var accepted = 0, refused = 0, checked = 0, refusalsWithAlert = 0
    var lastID = 0
    let t0 = Sockets.now()
    for b in 0..<batches {
        let base = b * batch
        // A mix: 2 of 5 refuse during the handshake (fatal alert), 3 of 5 proceed and send a tagged request; every
        // other connection is limited to TLS 1.2.
        let xs = await parallel(batch, threads: 2) { i -> (Int, Exchange) in
            let k = base + i
            let refuse = k % 5 == 1 || k % 5 == 3
            let ctx = refuse ? contexts.refusing : (k % 2 == 0 ? contexts.tls12 : contexts.accepting)
            return (k, exchange(port: port, context: ctx, request: refuse ? nil : "GET /soak/\(k) HTTP/1.1\r\nHost: localhost\r\n\r\n",
                                source: sourceAddress(k)))
        }
        guard let all = await server.settle(timeout: .seconds(60)) else { wrong.append("batch \(b): the server did not settle"); break }
        let seen = all.filter { $0.id > lastID }
        lastID = seen.map(\.id).max() ?? lastID
        if seen.count != batch { wrong.append("batch \(b): \(seen.count) observations for \(batch) connections") }
        var byPeer: [String: [Observation]] = [:]
        for o in seen { byPeer[String(o.peerAddress.split(separator: ":").first ?? ""), default: []].append(o) }
        for (k, x) in xs {
            let refuse = k % 5 == 1 || k % 5 == 3
            let peer = sourceAddress(k)
            guard x.connected, let candidates = byPeer[peer], candidates.count == 1, let o = candidates.first else {
                wrong.append("connection \(k): \(byPeer[peer]?.count ?? 0) observations from its address \(peer) (connected: \(x.connected))")
                continue
            }
            checked += 1
            if refuse {
                refused += 1
                if o.closure == .alert && o.alertReceived != nil { refusalsWithAlert += 1 }
                if x.handshakeDone || o.applicationDataReceived || o.handshakeCompleted {
                    wrong.append("refusing connection \(k): client handshake \(x.handshakeDone), observation \(o.closure), data \(o.applicationDataReceived)")
                }
            } else {
                accepted += 1
                let line = "GET /soak/\(k) HTTP/1.1"
                if o.requestLine != line || o.closure != .responseSent || x.answeredConnection != o.id || x.answeredRequest != line {
                    wrong.append("accepting connection \(k): observation \(o.id) \(String(describing: o.requestLine)) \(o.closure), answer names \(String(describing: x.answeredConnection))")
                }
            }
        }
        samples.append((fdCount(), threadCount(), rssKiB()))
        if wrong.count > 20 { break }
    }
    let seconds = Double(Sockets.now() - t0) / 1e9
    await server.stop()
    let steady = samples.dropFirst(min(warmup, max(samples.count - 1, 0)))
    let rss0 = Double(steady.first?.rss ?? 0)
    let rssMin = Double(steady.map(\.rss).min() ?? 0), rssMax = Double(steady.map(\.rss).max() ?? 0)
    let rssLast = Double(steady.last?.rss ?? 0)
    let fdSet = Set(steady.map(\.fds)), threadSet = Set(steady.map(\.threads))
    let rssSpread = rss0 > 0 ? (rssMax - rssMin) / rss0 * 100 : .nan
    // Descriptors and threads: a sample may catch one connection that was recorded but not yet closed, or a client
    // thread not yet gone, so a spread of one is jitter; growth is anything more.
    let fdSpread = (steady.map(\.fds).max() ?? 0) - (steady.map(\.fds).min() ?? 0)
    let threadSpread = (steady.map(\.threads).max() ?? 0) - (steady.map(\.threads).min() ?? 0)
    let ok = wrong.isEmpty && checked == batches * batch && steady.count >= 3 && rssSpread <= 5 && fdSpread <= 1 && threadSpread <= 1
    result(
        ok, "soak \(engineName)",
        "\(checked) handshakes in \(String(format: "%.0f", seconds)) s (\(accepted) accepting with a tagged request, \(refused) refusing during the handshake, "
            + "\(refusalsWithAlert) of them recorded with the client's alert, the rest as a reset), every observation matched to its client by its own source address and tag, \(wrong.count) mismatches\(wrong.isEmpty ? "" : " (first: \(wrong[0]))"); "
            + "after warm-up (\(warmup) of \(samples.count) batches of \(batch)): RSS \(String(format: "%.1f", rss0 / 1024))–\(String(format: "%.1f", rssMax / 1024)) MB "
            + "(spread \(String(format: "%.2f", rssSpread)) %, last \(String(format: "%.1f", rssLast / 1024)) MB), fds \(fdSet.sorted()), threads \(threadSet.sorted())")
}

// MARK: scopes

final class LivePorts: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var live: Set<Int> = []
    private(set) var collisions = 0
    func enter(_ p: Int) { lock.withLock { if !live.insert(p).inserted { collisions += 1 } } }
    func leave(_ p: Int) { lock.withLock { _ = live.remove(p) } }
}

func scopes(pkiDirectory: URL, seconds: Double, tasks: Int) async {
    let scenarios: [ScenarioID] = ["baseline", "renewal-same-key", "rekey", "emergency-rekey", "sibling-intermediate",
                                   "expired-leaf", "wrong-host", "untrusted-rogue"]
    let ports = LivePorts()
    let contexts = ClientContexts()
    let end = Sockets.now() + UInt64(seconds * 1e9)
    let threadsBefore = threadCount(), fdsBefore = fdCount()
    let counts = await withTaskGroup(of: (Int, [String]).self) { group in
        for t in 0..<tasks {
            group.addTask {
                var scopes = 0
                var problems: [String] = []
                while Sockets.now() < end && problems.count < 5 {
                    let id = scenarios[(t + scopes) % scenarios.count]
                    let engine: ServerEngine = (t + scopes) % 2 == 0 ? .openssl : .gnutls
                    let tag = "/scope/\(t)/\(scopes)"
                    do {
                        try await Lab.withServer(id, engine: engine, pkiDirectory: pkiDirectory) { server in
                            ports.enter(server.port)
                            defer { ports.leave(server.port) }
                            let port = server.port
                            let x = await offPool {
                                exchange(port: port, context: contexts.accepting, request: "GET \(tag) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                            }
                            let seen = await server.server?.settle() ?? []
                            if x.answeredScenario != id.rawValue || x.answeredRequest != "GET \(tag) HTTP/1.1" || x.answeredConnection != 1 {
                                problems.append("\(tag): answered by \(String(describing: x.answeredScenario)) \(String(describing: x.answeredRequest)) #\(String(describing: x.answeredConnection)) on \(engine)")
                            }
                            if seen.count != 1 || seen.first?.requestLine != "GET \(tag) HTTP/1.1" || seen.first?.label != id.rawValue {
                                problems.append("\(tag): the server observed \(seen.map { $0.requestLine ?? "-" })")
                            }
                        }
                        scopes += 1
                    } catch {
                        problems.append("\(tag): \(error)")
                    }
                }
                return (scopes, problems)
            }
        }
        var all: [(Int, [String])] = []
        for await c in group { all.append(c) }
        return all
    }
    // Stopped servers' threads are joined before stop() returns.
    try? await Task.sleep(for: .milliseconds(200))
    let total = counts.map(\.0).reduce(0, +)
    let problems = counts.flatMap(\.1)
    let threadsAfter = threadCount(), fdsAfter = fdCount()
    let ok = problems.isEmpty && ports.collisions == 0 && total >= tasks && fdsAfter <= fdsBefore + 2
    result(
        ok, "scopes",
        "\(tasks) tasks × \(String(format: "%.0f", seconds)) s: \(total) Lab.withServer scopes started and stopped (per task \(counts.map(\.0).min() ?? 0)–\(counts.map(\.0).max() ?? 0)), "
            + "both engines, \(scenarios.count) scenarios; port collisions among live servers \(ports.collisions); wrong answers or observations \(problems.count)"
            + (problems.isEmpty ? "" : " (first: \(problems[0]))")
            + "; fds \(fdsBefore) → \(fdsAfter), threads \(threadsBefore) → \(threadsAfter)")
}

// MARK: main

let args = CommandLine.arguments
guard args.count >= 3 else {
    fail("usage: pinlab-reliability hostile|soak PKI_DIR ENGINE [N] | scopes PKI_DIR [SECONDS] [TASKS]")
}
let directory = URL(fileURLWithPath: args[2], isDirectory: true)
let pki = try Lab.pki(directory: directory)
switch args[1] {
case "hostile":
    await hostile(pki: pki, engineName: args.count > 3 ? args[3] : "openssl", count: args.count > 4 ? Int(args[4])! : 5000)
case "soak":
    await soak(pki: pki, engineName: args.count > 3 ? args[3] : "openssl", total: args.count > 4 ? Int(args[4])! : 100_000)
case "scopes":
    await scopes(pkiDirectory: directory, seconds: args.count > 3 ? Double(args[3])! : 60, tasks: args.count > 4 ? Int(args[4])! : 16)
default:
    fail("unknown check \(args[1])")
}
