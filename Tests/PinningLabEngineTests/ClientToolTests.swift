import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

@Suite("openssl s_client and gnutls-cli handshakes")
struct ClientToolTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    static let cases: [(EngineKind, TLSVersion)] = EngineKind.allCases.flatMap { e in [(e, .tls12), (e, .tls13)] }

    @Test(
        "openssl s_client verifies the chain, sends a request and reads the answer", .requires("openssl"),
        arguments: cases)
    func sClient(engine: EngineKind, version: TLSVersion) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(version)
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config, label: "s_client")
        defer { server.stopSync() }
        let r = await run(
            [
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-CAfile",
                f.path("lab-root.pem"), "-verify_return_error", "-verify_hostname", "localhost", "-ign_eof", "-crlf",
                version == .tls13 ? "-tls1_3" : "-tls1_2",
            ], input: "GET /s_client HTTP/1.1\nHost: localhost\n\n")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Verify return code: 0 (ok)"))
        #expect(r.stdout.contains("\"tls_version\":\"\(version.rawValue)\""))
        let o = try #require(await server.settle()?.first)
        #expect(o.tlsVersion == version)
        #expect(o.requestLine == "GET /s_client HTTP/1.1")
        #expect(o.closure == .responseSent)
    }

    @Test(
        "gnutls-cli verifies the chain and completes the handshake", .requires("gnutls-cli"), arguments: cases)
    func gnutlsCLI(engine: EngineKind, version: TLSVersion) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(version)
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config, label: "gnutls-cli")
        defer { server.stopSync() }
        let r = await run(
            [
                "gnutls-cli", "--x509cafile", f.path("lab-root.pem"), "--priority",
                "NORMAL:-VERS-ALL:+VERS-TLS\(version.shortName)", "-p", "\(server.port)", "localhost",
            ], input: "GET /gnutls-cli HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(
            r.stderr.contains("Handshake was completed") || r.stdout.contains("Handshake was completed"), "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.handshakeCompleted)
        #expect(o.tlsVersion == version)
        #expect(o.alpn == nil)
    }

    @Test("TLS 1.0 where the library allows it", .requires("openssl"), arguments: EngineKind.allCases)
    func legacyTLS10(engine: EngineKind) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(.tls10)
        // Both engines serve TLS 1.0 (the runner's tests require no unsupported cell), so an engine that says it
        // cannot is a failure here, not a silent pass.
        let support = engine.engine.supports(config)
        try #require(support.isSupported, "\(engine) cannot serve TLS 1.0: \(support.reason ?? "no reason given")")
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config, label: "tls-v1-0")
        defer { server.stopSync() }
        let r = await run(
            [
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1", "-cipher",
                "DEFAULT:@SECLEVEL=0",
                "-ign_eof", "-crlf",
            ], input: "GET / HTTP/1.1\nHost: localhost\n\n")
        #expect(r.stdout.contains("\"tls_version\":\"TLSv1\""), "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.tlsVersion == .tls10)
        #expect(o.applicationDataReceived)
    }

    @Test(
        "a version the client does not offer fails the handshake on the server side", .requires("curl"),
        arguments: EngineKind.allCases)
    func versionMismatch(engine: EngineKind) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(.tls12)
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config)
        defer { server.stopSync() }
        let r = await run([
            "curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), "--tlsv1.3", server.url,
        ])
        #expect(r.status != 0)
        let o = try #require(await server.settle()?.first)
        #expect(!o.handshakeCompleted)
        #expect(!o.applicationDataReceived)
        #expect(o.closure == .handshakeFailed || o.closure == .alert)
    }
}
