import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// What a capturing client sees on the wire is exactly the chain asked for, in order, on both engines.
@Suite("wire check: exact chains")
struct WireTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    enum Shape: String, CaseIterable, Sendable, CustomStringConvertible {
        case normal
        case leafOnly = "leaf-only"
        case reversed, stuffed
        var chain: [String] {
            switch self {
            case .normal: return ["leaf-v1", "lab-intermediate-a"]
            case .leafOnly: return ["leaf-v1"]
            case .reversed: return ["leaf-v1", "lab-root", "lab-intermediate-a"]
            case .stuffed: return ["proxy-leaf", "leaf-v1", "lab-intermediate-a", "lab-root"]
            }
        }
        var description: String { rawValue }
    }

    enum Capture: String, CaseIterable, Sendable, CustomStringConvertible {
        case opensslSClient = "openssl s_client"
        case gnutlsCLI = "gnutls-cli"
        var description: String { rawValue }
    }

    static let cases: [(EngineKind, Shape, TLSVersion)] = EngineKind.allCases.flatMap { e in
        Shape.allCases.flatMap { s in [TLSVersion.tls12, .tls13].map { (e, s, $0) } }
    }

    @Test("openssl s_client sees exactly the configured DER list", .requires("openssl"), arguments: cases)
    func exactChainOpenSSL(engine: EngineKind, shape: Shape, version: TLSVersion) async throws {
        try await exactChain(engine: engine, shape: shape, version: version, capture: .opensslSClient)
    }

    @Test("gnutls-cli sees exactly the configured DER list", .requires("gnutls-cli"), arguments: cases)
    func exactChainGnuTLS(engine: EngineKind, shape: Shape, version: TLSVersion) async throws {
        try await exactChain(engine: engine, shape: shape, version: version, capture: .gnutlsCLI)
    }

    /// One capturing client connects; what it printed and the server's own record of its Certificate message are
    /// both exactly the configured chain.
    func exactChain(engine: EngineKind, shape: Shape, version: TLSVersion, capture: Capture) async throws {
        var config = f.configuration(shape.chain)
        config.setVersion(version)
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config, label: shape.rawValue)
        defer { server.stopSync() }
        let expected = shape.chain.map(f.der)

        let arguments: [String]
        switch capture {
        case .opensslSClient:
            arguments = [
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-showcerts",
                version == .tls13 ? "-tls1_3" : "-tls1_2",
            ]
        case .gnutlsCLI:
            arguments = [
                "gnutls-cli", "--insecure", "--print-cert", "--priority",
                "NORMAL:-VERS-ALL:+VERS-TLS\(version.shortName)",
                "-p", "\(server.port)", "127.0.0.1",
            ]
        }
        let r = await run(arguments, timeout: .seconds(60))
        #expect(derBlocks(inPEM: r.stdout) == expected, "\(capture) saw a different chain: \(r.stderr)")

        let seen = try #require(await server.settle())
        #expect(seen.count == 1)
        for o in seen {
            #expect(o.serverCertificates?.map(\.der) == expected)
            #expect(o.tlsVersion == version || !o.handshakeCompleted)
        }
    }

    @Test(
        "a chain whose first certificate is not the key's: OpenSSL says unsupported, GnuTLS serves it as given",
        .requires("openssl"))
    func firstCertificateNotTheKeys() async throws {
        let config = f.configuration(["lab-intermediate-a", "leaf-v1"], keyOf: "leaf-v1")
        let support = EngineKind.openssl.engine.supports(config)
        #expect(!support.isSupported)
        #expect(support.reason?.contains("does not belong to the first certificate") == true)
        await #expect(throws: TLSEngineError(.unsupported, "")) {
            _ = try await FixtureServer.start(engine: EngineKind.openssl.engine, configuration: config)
        }
        #expect(EngineKind.gnutls.engine.supports(config).isSupported)
        let server = try await FixtureServer.start(engine: EngineKind.gnutls.engine, configuration: config)
        defer { server.stopSync() }
        let s = await run([
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-showcerts",
        ])
        #expect(derBlocks(inPEM: s.stdout) == [f.der("lab-intermediate-a"), f.der("leaf-v1")])
    }
}
