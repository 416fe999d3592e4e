import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabIntercept
import PinningLabPKI

extension BenchCommand {
    struct Intercept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "intercept",
            abstract:
                "pinlab intercept: leaf minting, added latency per tunnelled connection, concurrent tunnels held.",
            discussion: """
                Side by side in one run: minting a per-host leaf with the cached key (pinlab's LeafMinter vs the way \
                mitmproxy mints with Python's cryptography, both P-256); one client connection (TCP, TLS handshake, \
                GET, response) straight to a fixture server vs through the proxy's passthrough tunnel to the same \
                server, interleaved; then N tunnels held open at once and each used for a TLS request.
                Run from the repository root with a release build: swift run -c release pinlab bench intercept
                Needs python3 (tunnels.py) and Python's cryptography for the mitmproxy-style column.
                """)
        @Option(help: "Mints timed.") var mints = 2000
        @Option(help: "Connections timed on each side (direct, tunnelled, intercepted).") var connections = 300
        @Option(help: "Tunnels held at once.") var tunnels = 500
        @Option(help: "Folder holding mint_cryptography.py and tunnels.py.") var scripts = "Benchmarks/intercept"
        @OptionGroup var pkiFolder: PKIFolder

        func run() async throws {
            let pki = await pkiFolder.open()
            let proxyRoot = try pki.identity("proxy-root")
            print(
                "pinlab bench intercept — \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage())\n"
            )

            // 1. Minting with the cached key (the key is generated once in LeafMinter.init).
            let minter = try LeafMinter(issuer: proxyRoot)
            for i in 0..<50 { _ = try minter.mint(host: "warm\(i).pinning.test") }
            var mint: [Double] = []
            var mintContext: [Double] = []
            for i in 0..<mints {
                mint.append(try milliseconds { _ = try minter.mint(host: "h\(i).pinning.test") })
            }
            for i in 0..<min(mints, 500) {
                mintContext.append(
                    try milliseconds {
                        let leaf = try minter.mint(host: "c\(i).pinning.test")
                        _ = try Engines.openssl.makeContext(
                            .makeServerConfiguration(chainDER: [leaf], privateKeyPKCS8DER: minter.leafKeyPKCS8DER))
                    })
            }
            var python: [Double] = []
            let script = "\(scripts)/mint_cryptography.py"
            if FileManager.default.fileExists(atPath: script) {
                let r = try timedProcess(["python3", script, String(mints)])
                python = r.out.split(separator: "\n").compactMap { Double($0) }
            }

            // 2. Added latency per connection: direct vs passthrough tunnel vs intercepted (cached leaf), interleaved.
            let leafV1 = try pki.identity("leaf-v1")
            let server = try await FixtureServer.start(
                engine: Engines.openssl, configuration: .makeServerConfiguration(leafV1),
                options: .init(
                    handshakeTimeout: .seconds(300), idleTimeout: .seconds(300), maxConnections: tunnels + 64),
                label: "bench-intercept")
            var configuration = InterceptProxy.Configuration(
                listener: ListenerSettings(
                    handshakeTimeout: .seconds(300), idleTimeout: .seconds(300), maxConnections: tunnels + 64))
            configuration.policies = PolicyTable(
                defaultPolicy: .mint,
                rules: [
                    .init(pattern: try HostPattern(parsing: "api.pinning.test"), policy: .passthrough)
                ])
            configuration.upstreams = [UpstreamRoute(host: "127.0.0.1", port: server.port)]
            let proxy = try InterceptProxy.start(pki: pki, configuration: configuration)
            let client = try requireClient()
            let trust = [try pki.identity("lab-root").certificateDER, proxyRoot.certificateDER]
            func target(_ host: String, proxy address: String?) -> ClientTarget {
                ClientTarget(
                    host: host, ip: "127.0.0.1", port: address == nil ? server.port : 443, trustRootsDER: trust,
                    pins: .empty, scenario: "bench", profile: .none, timeout: .seconds(30), proxy: address)
            }
            var direct: [Double] = []
            var tunnelled: [Double] = []
            var intercepted: [Double] = []
            var refusedAny = 0
            for i in 0..<(connections + 10) {
                let order = [0, 1, 2].shuffled()
                for side in order {
                    let t = DispatchTime.now().uptimeNanoseconds
                    let outcome: ClientOutcome
                    switch side {
                    case 0: outcome = await client.run(target("api.pinning.test", proxy: nil))
                    case 1: outcome = await client.run(target("api.pinning.test", proxy: proxy.address))
                    default: outcome = await client.run(target("cdn.pinning.test", proxy: proxy.address))
                    }
                    let ms = Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6
                    if outcome.claim != .accepted { refusedAny += 1 }
                    guard i >= 10 else { continue }  // warm-up
                    switch side {
                    case 0: direct.append(ms)
                    case 1: tunnelled.append(ms)
                    default: intercepted.append(ms)
                    }
                }
            }

            // 3. Tunnels held at once, then each used for a TLS request while the others stay open.
            var held = "not run (python3 or \(scripts)/tunnels.py missing)"
            let tunnelsScript = "\(scripts)/tunnels.py"
            if FileManager.default.fileExists(atPath: tunnelsScript) {
                // A folder of this run's own (random name, 0700): a predictable one could be planted with classes or
                // scripts that the benchmark would then run.
                let work = try ScratchFolders.make("pinlab-bench-intercept")
                defer { ScratchFolders.remove(work) }
                let ca = work.appendingPathComponent("ca.pem")
                try PEM.encode(try pki.identity("lab-root").certificateDER).write(
                    to: ca, atomically: true, encoding: .utf8)
                let go = work.appendingPathComponent("go").path
                let out = work.appendingPathComponent("out").path
                let baseProxy = proxy.connectionsAccepted
                let child = try ChildProcess.spawnBackground(
                    [
                        "python3", tunnelsScript, String(proxy.port), "api.pinning.test", "443", String(tunnels),
                        ca.path, go,
                    ],
                    stdoutFile: out, stderrFile: out)
                var peakProxy = 0
                var peakServer = 0
                let start = Date()
                while Date().timeIntervalSince(start) < 120 {
                    peakProxy = max(peakProxy, proxy.connectionsOpen)
                    peakServer = max(peakServer, server.connectionsOpen)
                    if peakProxy >= tunnels && peakServer >= tunnels { break }
                    if !child.isRunning { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                _ = FileManager.default.createFile(atPath: go, contents: Data())
                while child.isRunning && Date().timeIntervalSince(start) < 300 {
                    try await Task.sleep(for: .milliseconds(50))
                }
                child.terminate()
                let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                held =
                    "peak open at the proxy \(peakProxy), at the server \(peakServer); "
                    + text.split(separator: "\n").joined(separator: "; ")
                    + "; proxy connections accepted \(proxy.connectionsAccepted - baseProxy)"
            }
            await proxy.stop()
            await server.stop()

            func f(_ x: Double) -> String { x.isNaN ? "n/a" : String(format: "%.3f ms", x) }
            let (m, mc, py) = (median(mint), median(mintContext), median(python))
            let (d, tu, ic) = (median(direct), median(tunnelled), median(intercepted))
            var rows = [["measurement", "median", "side by side"]]
            rows.append(["mint a per-host leaf, cached key (pinlab LeafMinter, P-256), \(mint.count) hosts", f(m), ""])
            rows.append([
                "mitmproxy-style mint (Python cryptography, cached key, P-256)", f(py),
                py.isNaN ? "" : String(format: "pinlab %.1fx faster", py / m),
            ])
            rows.append(["mint + OpenSSL server context (a host's first connection)", f(mc), ""])
            rows.append(["connection straight to the fixture server (TCP + TLS 1.3 + GET + response)", f(d), ""])
            rows.append([
                "the same through the passthrough tunnel (CONNECT + 200 first)", f(tu),
                String(format: "+%.3f ms (%.2fx)", tu - d, tu / d),
            ])
            rows.append([
                "intercepted by the proxy (mint policy, leaf cached)", f(ic), String(format: "%.2fx direct", ic / d),
            ])
            print(table(rows), terminator: "")
            print("\n\(tunnels) tunnels: \(held)")
            if refusedAny > 0 { print("warning: \(refusedAny) client runs did not complete") }
        }

        private func loadAverage() -> String {
            ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3)
                .joined(separator: " ")
        }
    }
}

/// The correct reference client (always built in).
private func requireClient() throws -> any PinningClient {
    guard let c = BuiltInClients.named("correct") else {
        throw ValidationError("the correct reference client is missing")
    }
    return c
}
