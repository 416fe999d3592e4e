// pinlab-serve-bench: in-process measurements of fixture servers that a load generator cannot make.
//
//   pinlab-serve-bench startup PKI_DIR [N]   time from FixtureServer.start to the first completed handshake
//   pinlab-serve-bench rss PKI_DIR [N]       RSS with N servers per engine running at once (one handshake each)
//   pinlab-serve-bench cycles PKI_DIR [N]    RSS over N start → one handshake → stop cycles of the `baseline`
//                                            scenario server (CheckRunner.startServer, as Lab.withServer does)
//
// The client is a blocking OpenSSL client in this process (no verification: it measures server readiness).
import CPinningLabOpenSSL
import Foundation
import PinningLab
import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// Connects to 127.0.0.1:port and completes a TLS handshake; true on success.
func handshake(port: Int, _ clientContext: OpaquePointer) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    var sa = sockaddr_in()
    sa.sin_family = sa_family_t(AF_INET)
    sa.sin_port = in_port_t(UInt16(port).bigEndian)
    sa.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &sa) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0, let ssl = SSL_new(clientContext) else { return false }
    defer { SSL_free(ssl) }
    SSL_set_fd(ssl, fd)
    let ok = SSL_connect(ssl) == 1
    if ok { SSL_shutdown(ssl) }
    return ok
}


let args = CommandLine.arguments
guard args.count >= 3 else {
    FileHandle.standardError.write(Data("usage: pinlab-serve-bench startup|rss|cycles PKI_DIR [N]\n".utf8))
    exit(2)
}
let mode = args[1]
let lab = try Lab.pki(directory: URL(fileURLWithPath: args[2], isDirectory: true))
let leaf = try lab.identity("leaf-v1")
let configuration = ServerTLSConfiguration.makeServerConfiguration(leaf)
let engines: [any TLSEngine] = [OpenSSLEngine(), GnuTLSEngine()]
let clientContext = SSL_CTX_new(TLS_client_method())!

switch mode {
case "startup":
    let n = args.count > 3 ? Int(args[3]) ?? 200 : 200
    for engine in engines {
        // Warm-up: first use of the library and the code paths.
        for _ in 0..<5 {
            let s = try FixtureServer.startSync(engine: engine, configuration: configuration)
            _ = handshake(port: s.port, clientContext)
            s.stopSync()
        }
        // The handshake alone, against a server already running: the client's share of the figure below.
        let warm = try FixtureServer.startSync(engine: engine, configuration: configuration)
        var handshakeOnly: [Double] = []
        for _ in 0..<n {
            let t0 = Sockets.now()
            _ = handshake(port: warm.port, clientContext)
            handshakeOnly.append(Double(Sockets.now() - t0) / 1e6)
        }
        warm.stopSync()
        var startOnly: [Double] = []
        var toHandshake: [Double] = []
        var coldStart: [Double] = []
        var coldToHandshake: [Double] = []
        var failures = 0
        for i in 0..<n {
            // A configuration this process has not served yet (a new name: no context reuse).
            var fresh = configuration
            fresh.identities[0].name = "bench-\(engine.name)-\(i)"
            let c0 = Sockets.now()
            let c = try FixtureServer.startSync(engine: engine, configuration: fresh)
            let c1 = Sockets.now()
            if !handshake(port: c.port, clientContext) { failures += 1 }
            let c2 = Sockets.now()
            c.stopSync()
            coldStart.append(Double(c1 - c0) / 1e6)
            coldToHandshake.append(Double(c2 - c0) / 1e6)

            let t0 = Sockets.now()
            let s = try FixtureServer.startSync(engine: engine, configuration: configuration)
            let t1 = Sockets.now()
            let ok = handshake(port: s.port, clientContext)
            let t2 = Sockets.now()
            s.stopSync()
            if !ok { failures += 1 }
            startOnly.append(Double(t1 - t0) / 1e6)
            toHandshake.append(Double(t2 - t0) / 1e6)
        }
        print(
            String(
                format:
                    "startup engine=%@ n=%d handshake_only_ms=%.3f new_config_start_ms=%.3f new_config_start_to_handshake_ms=%.3f same_config_start_ms=%.3f same_config_start_to_handshake_ms=%.3f p90=%.3f failures=%d",
                engine.name, n, median(handshakeOnly), median(coldStart), median(coldToHandshake), median(startOnly),
                median(toHandshake), percentile(toHandshake, 0.9), failures))
    }
case "rss":
    let n = args.count > 3 ? Int(args[3]) ?? 30 : 30
    let base = rssKiB()
    var servers: [FixtureServer] = []
    var line = "rss n_per_engine=\(n) baseline_kib=\(base)"
    for engine in engines {
        for _ in 0..<n {
            let s = try FixtureServer.startSync(engine: engine, configuration: configuration)
            guard handshake(port: s.port, clientContext) else { fatalError("no handshake with \(engine.name)") }
            servers.append(s)
        }
        _ = await servers.last!.settle()
        line += " after_\(engine.name)_kib=\(rssKiB())"
    }
    line += " threads=\(threadCount())"
    print(line)
    for s in servers { s.stopSync() }
    print("rss after_stop_kib=\(rssKiB()) threads=\(threadCount())")
case "cycles":
    let n = args.count > 3 ? Int(args[3]) ?? 4000 : 4000
    let runner = CheckRunner(pki: lab, catalogue: try Catalogue.bundled())
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("serve-bench-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let checkpoints: Set<Int> = [100, 500, 1000, 2000, 4000, 8000, 16000]
    var line = "cycles engine=openssl scenario=baseline"
    for i in 1...n {
        let server = try await runner.startServer("baseline", engine: OpenSSLEngine(), workDirectory: work)
        guard handshake(port: server.port, clientContext) else { fatalError("no handshake in cycle \(i)") }
        _ = await server.server?.settle()
        await server.stop()
        if checkpoints.contains(i) || i == n { line += " rss_kib@\(i)=\(rssKiB())" }
    }
    line += " threads=\(threadCount())"
    print(line)
default:
    FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
    exit(2)
}
