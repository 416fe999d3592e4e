// AsyncHTTPClient validates with BoringSSL (through swift-nio-ssl) and has no verification callback, so it cannot
// pin: it is judged under the profile `none` — the chain and the host name against the lab root. This is the client
// that refused `baseline` while the lab root carried IP constraints over leaves with IP SANs.
import AsyncHTTPClient
import NIOSSL
import PinningLabTesting
import Testing

@Suite("AsyncHTTPClient (BoringSSL verification) under the profile none")
struct AsyncHTTPClientTests {
    static let scenarios: [ScenarioID] = [
        .baseline, .renewalSameKey, .reversedChain, .ecdsaP384, .rsa2048,  // must accept
        .untrustedRogue, .interceptingProxy, .wrongHost, .expiredLeaf, .incompleteChain, .selfSignedPinnedKey,
    ]

    @Test(arguments: scenarios, ServerEngine.both)
    func validatesAgainstTheLabRoot(_ id: ScenarioID, _ engine: ServerEngine) async throws {
        try await Lab.withServer(id, engine: engine) { server in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(
                try server.trustRootsDER.map { try NIOSSLCertificate(bytes: $0, format: .der) })
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            let verdict = await server.verdict(.none, client: "async-http-client") { target in
                let response = try await http.execute(HTTPClientRequest(url: target.url), timeout: .seconds(5))
                _ = try await response.body.collect(upTo: 1 << 16)
            }
            try await http.shutdown()
            #expect(verdict.status == .pass, "\(id) on \(engine): \(verdict.reason)")
        }
    }
}
