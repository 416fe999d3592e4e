import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

@Suite("curl against both engines", .requires("curl"))
struct CurlTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    func curl(_ server: FixtureServer, trust: String, pin: String, extra: [String] = []) async -> ProcessResult {
        await run(
            ["curl", "-sS", "--max-time", "5", "--cacert", f.path(trust), "--pinnedpubkey", pin] + extra + [server.url])
    }

    @Test("a pinned curl accepts the good chain and its request is recorded", arguments: EngineKind.allCases)
    func goodChain(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]), label: "baseline")
        defer { server.stopSync() }
        let r = await curl(server, trust: "lab-root.pem", pin: f.curlPin("leaf-v1"))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\"engine\":\"\(engine.rawValue)\""))
        #expect(r.stdout.contains("\"scenario\":\"baseline\""))
        #expect(r.stdout.contains("\"tls_version\":\"TLSv1.3\""))
        // Every key is present, null when unknown: no client certificate here.
        #expect(r.stdout.contains("\"client_certificate_subject\":null"), "\(r.stdout)")
        let seen = try #require(await server.settle())
        #expect(seen.count == 1)
        let o = try #require(seen.first)
        #expect(o.handshakeCompleted)
        #expect(o.applicationDataReceived)
        #expect(o.clientAccepted)
        #expect(o.requestLine == "GET / HTTP/1.1")
        #expect(o.closure == .responseSent)
        #expect(o.alpn == "http/1.1")
        #expect(o.serverName == "localhost")
        #expect(o.identity == "leaf-v1")
        #expect(o.tlsVersion == .tls13)
        #expect(o.cipherSuite?.hasPrefix("TLS_") == true)
        #expect(o.alertReceived == nil)
        #expect(o.serverCertificates?.map(\.der) == [f.der("leaf-v1"), f.der("lab-intermediate-a")])
        #expect(o.handshakeMilliseconds != nil)
    }

    @Test(
        "an untrusted proxy leaf: curl exits 60, the server records unknown_ca and no application data",
        arguments: EngineKind.allCases)
    func untrusted(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["proxy-leaf"]), label: "intercepting-proxy")
        defer { server.stopSync() }
        let r = await curl(server, trust: "lab-root.pem", pin: f.curlPin("leaf-v1"))
        #expect(r.status == 60, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(!o.applicationDataReceived)
        #expect(!o.clientAccepted)
        #expect(!o.handshakeCompleted)
        #expect(o.closure == .alert, "\(o.error ?? "")")
        #expect(o.alertReceived?.code == TLSAlert.unknownCA)
        #expect(o.alertReceived?.name == "unknown_ca")
        #expect(o.requestLine == nil)
    }

    @Test(
        "a trusted proxy leaf with a leaf pin: curl exits 90 after the handshake and sends nothing",
        arguments: EngineKind.allCases)
    func pinMismatch(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["proxy-leaf"]), label: "intercepting-proxy")
        defer { server.stopSync() }
        let r = await curl(server, trust: "lab-root+proxy-root.pem", pin: f.curlPin("leaf-v1"))
        #expect(r.status == 90, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.handshakeCompleted)
        #expect(!o.applicationDataReceived)
        #expect(o.requestLine == nil)
        #expect(o.closure == .closedAfterHandshake || o.closure == .reset)
        // The same curl without the wrong pin proceeds: the pin, not the chain, refused.
        let ok = await curl(server, trust: "lab-root+proxy-root.pem", pin: f.curlPin("proxy-leaf"))
        #expect(ok.status == 0, "\(ok.stderr)")
        let seen = try #require(await server.settle())
        #expect(seen.count == 2)
        #expect(seen.last?.applicationDataReceived == true)
    }

    @Test("the server listens on ::1 when asked", arguments: EngineKind.allCases)
    func ipv6(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]),
            options: .init(bindAddress: "::1"))
        defer { server.stopSync() }
        #expect(server.host == "::1")
        let r = await run([
            "curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), "--resolve",
            "localhost:\(server.port):::1", server.url,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.peerAddress.hasPrefix("[::1]:"))
    }
}
