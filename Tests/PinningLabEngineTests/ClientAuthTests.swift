import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// Client authentication behaves like OkHttp's MockWebServer: `required` without (or with a bad) certificate fails
/// the handshake — never an HTTP 400 — and the certificate a client presents is recorded.
@Suite("client authentication", .requires("curl", "openssl"))
struct ClientAuthTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    func config(_ mode: ClientAuthentication) -> ServerTLSConfiguration {
        var c = f.configuration(["leaf-v1", "lab-intermediate-a"])
        c.clientAuthentication = mode
        c.clientTrustRootsDER = [f.der("client-ca")]
        return c
    }

    func curl(_ server: FixtureServer, client: String?, tls: String = "--tlsv1.3") async -> ProcessResult {
        var args = ["curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem")]
        args += tls == "--tlsv1.2" ? ["--tlsv1.2", "--tls-max", "1.2"] : ["--tlsv1.3"]
        if let client { args += ["--cert", f.path(client + ".crt"), "--key", f.path(client + ".key")] }
        return await run(args + [server.url])
    }

    func expectedSubject(_ name: String) async -> String {
        let r = await run([
            "openssl", "x509", "-in", f.path(name + ".crt"), "-noout", "-subject", "-nameopt", "RFC2253",
        ])
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "subject=", with: "")
    }

    static let versions: [(EngineKind, String)] = EngineKind.allCases.flatMap {
        [($0, "--tlsv1.2"), ($0, "--tlsv1.3")]
    }

    @Test("required + a valid certificate: accepted, subject and chain recorded", arguments: versions)
    func requiredValid(engine: EngineKind, tls: String) async throws {
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config(.required))
        defer { server.stopSync() }
        let r = await curl(server, client: "client-valid", tls: tls)
        #expect(r.status == 0, "\(r.stderr)")
        let subject = await expectedSubject("client-valid")
        #expect(r.stdout.contains(subject))
        let o = try #require(await server.settle()?.first)
        #expect(o.applicationDataReceived)
        #expect(o.clientCertificateSubject == subject)
        #expect(o.clientCertificates.first?.der == f.der("client-valid"))
    }

    @Test("required + no certificate: the handshake fails, no HTTP response", arguments: versions)
    func requiredMissing(engine: EngineKind, tls: String) async throws {
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config(.required))
        defer { server.stopSync() }
        let r = await curl(server, client: nil, tls: tls)
        #expect(r.status != 0)
        #expect(!r.stdout.contains("HTTP"))
        #expect(!r.stdout.contains("\"engine\""))
        let o = try #require(await server.settle()?.first)
        #expect(!o.handshakeCompleted)
        #expect(!o.applicationDataReceived)
        #expect(o.closure == .handshakeFailed)
        #expect(o.clientCertificates.isEmpty)
        let expectedAlert = tls == "--tlsv1.3" ? TLSAlert.certificateRequired : TLSAlert.handshakeFailure
        #expect(o.alertSent?.code == expectedAlert)
    }

    @Test(
        "required + a bad certificate: rejected with the matching alert, the certificate still recorded",
        arguments: EngineKind.allCases,
        [
            ("client-untrusted", TLSAlert.unknownCA), ("client-expired", TLSAlert.certificateExpired),
            ("client-wrong-eku", TLSAlert.unsupportedCertificate),
        ])
    func requiredBad(engine: EngineKind, bad: (String, UInt8)) async throws {
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config(.required))
        defer { server.stopSync() }
        let r = await curl(server, client: bad.0)
        #expect(r.status != 0)
        let o = try #require(await server.settle()?.first)
        #expect(!o.handshakeCompleted)
        #expect(!o.applicationDataReceived)
        #expect(o.alertSent?.code == bad.1, "\(o.error ?? "")")
        #expect(o.clientCertificates.first?.der == f.der(bad.0))
    }

    @Test("optional: no certificate is fine, a valid one is recorded", arguments: EngineKind.allCases)
    func optional(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config(.optional))
        defer { server.stopSync() }
        let without = await curl(server, client: nil)
        #expect(without.status == 0, "\(without.stderr)")
        let with = await curl(server, client: "client-valid")
        #expect(with.status == 0, "\(with.stderr)")
        let seen = try #require(await server.settle())
        #expect(seen.count == 2)
        #expect(seen[0].clientCertificates.isEmpty)
        #expect(seen[0].applicationDataReceived)
        #expect(seen[1].clientCertificates.first?.der == f.der("client-valid"))
        #expect(seen[1].applicationDataReceived)
    }

    @Test("none: no certificate is requested even from a client that has one", arguments: EngineKind.allCases)
    func none(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config(.none))
        defer { server.stopSync() }
        let r = await curl(server, client: "client-valid")
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.clientCertificates.isEmpty)
        #expect(o.applicationDataReceived)
    }
}
