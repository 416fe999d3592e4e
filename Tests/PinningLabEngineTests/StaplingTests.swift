import Foundation
import PinningLab
import PinningLabCore
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// A stapled OCSP response, judged by real clients: `openssl s_client -status` prints what the server stapled, and
/// `gnutls-cli --ocsp` verifies it.
@Suite("OCSP stapling")
struct StaplingTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    func stapled(_ name: String, _ variant: OCSPVariant) throws -> ServerTLSConfiguration {
        var config = f.configuration([name, "lab-intermediate-a"])
        config.ocspStaple = try f.pki.ocspResponse(for: name, options: variant.options)
        return config
    }

    @Test(
        "openssl s_client -status shows the stapled response, on TLS 1.2 and 1.3",
        .requires("openssl"), arguments: EngineKind.allCases, ["-tls1_2", "-tls1_3"])
    func opensslSeesStaple(engine: EngineKind, version: String) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: try stapled("leaf-k1-revoked", .asIssued))
        defer { server.stopSync() }
        let r = await run([
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
            "-status", version, "-CAfile", f.path("lab-root.pem"),
        ])
        #expect(r.stdout.contains("OCSP Response Status: successful (0x0)"), "\(r.stdout)")
        #expect(r.stdout.contains("Cert Status: revoked") && r.stdout.contains("keyCompromise"), "\(r.stdout)")
    }

    @Test("no staple configured: the client that asks gets none", .requires("openssl"), arguments: EngineKind.allCases)
    func noStaple(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-ocsp", "lab-intermediate-a"]))
        defer { server.stopSync() }
        let r = await run([
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
            "-status", "-CAfile", f.path("lab-root.pem"),
        ])
        #expect(r.stdout.contains("OCSP response: no response sent"), "\(r.stdout)")
    }

    @Test(
        "gnutls-cli --ocsp accepts a good staple and refuses a revoked one",
        .requires("gnutls-cli"), arguments: EngineKind.allCases)
    func gnutlsCLIJudgesStaple(engine: EngineKind) async throws {
        for (name, accepted) in [("leaf-ocsp", true), ("leaf-k1-revoked", false)] {
            let server = try await FixtureServer.start(
                engine: engine.engine, configuration: try stapled(name, .asIssued))
            defer { server.stopSync() }
            let r = await run(
                [
                    "gnutls-cli", "--ocsp", "--x509cafile", f.path("lab-root.pem"), "--port", "\(server.port)",
                    "localhost",
                ], input: "GET / HTTP/1.0\r\n\r\n")
            let text = r.stdout + r.stderr
            if accepted {
                #expect(text.contains("OCSP status response") || text.contains("Handshake was completed"), "\(text)")
                #expect(!text.contains("revoked"), "\(text)")
            } else {
                #expect(r.status != 0 && text.contains("revoked"), "\(text)")
            }
        }
    }
}
