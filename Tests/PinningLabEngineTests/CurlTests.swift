import Foundation
import PinningLab
import PinningLabCore
import Testing

@Suite("curl against both engines")
struct CurlTests {
    let f = Fixtures.shared

    @Test("a pinned curl accepts the good chain and its request is recorded", arguments: EngineKind.allCases)
    func goodChain(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]), label: "baseline")
        defer { server.stopSync() }
        let r = await run([
            "curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), "--pinnedpubkey", f.curlPin("leaf-v1"),
            server.url,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\"engine\":\"\(engine.rawValue)\""))
        #expect(r.stdout.contains("\"scenario\":\"baseline\""))
        let seen = try #require(await server.settle())
        #expect(seen.count == 1)
        let o = try #require(seen.first)
        #expect(o.handshakeCompleted)
        #expect(o.applicationDataReceived)
        #expect(o.requestLine == "GET / HTTP/1.1")
        #expect(o.closure == .responseSent)
        #expect(o.alpn == "http/1.1")
        #expect(o.serverName == "localhost")
        #expect(o.tlsVersion == .tls13)
        #expect(o.serverCertificates?.map(\.der) == [f.der("leaf-v1"), f.der("lab-intermediate-a")])
    }
}
