// The lab's SCTs judged by OpenSSL's CT code (issue 23): `openssl s_client -ct -ctlogfile` with the exported lab
// log file reads the SCTs a fixture server delivers — embedded in the certificate or in the TLS extension — and
// validates each against the logs it was told about. s_client's -ct only reports (its policy is permissive); a
// strict client (SSL_CT_VALIDATION_STRICT) refuses a chain with no SCT whose status is "valid".
import Foundation
import PinningLab
import PinningLabGnuTLS
import PinningLabOpenSSL
import PinningLabReferenceClients
import Testing

@testable import PinningLabCore

struct SCTJudgeCase: Sendable, CustomTestStringConvertible {
    var leaf: String
    /// What `openssl s_client -ct` prints as `SCT validation status:` for each SCT, in order.
    var statuses: [String]
    var testDescription: String { "\(leaf) → \(statuses.isEmpty ? "no SCT" : statuses.joined(separator: ", "))" }
}

let sctJudgeCases: [SCTJudgeCase] = [
    .init(leaf: "leaf-ct-valid", statuses: ["valid", "valid"]),
    .init(leaf: "leaf-ct-tls", statuses: ["valid", "valid"]),
    .init(leaf: "leaf-ct-one", statuses: ["valid"]),
    .init(leaf: "leaf-ct-unknown-log", statuses: ["unknown log"]),
    .init(leaf: "leaf-ct-bad-signature", statuses: ["invalid", "invalid"]),
    .init(leaf: "leaf-ct-future-timestamp", statuses: ["invalid", "invalid"]),
    .init(leaf: "leaf-v1", statuses: []),
]

@Suite("Certificate Transparency judged by openssl s_client -ct")
struct CertificateTransparencyJudgeTests {
    @Test(.requires("openssl"), arguments: sctJudgeCases, [TLSVersion.tls12, .tls13])
    func opensslValidatesTheLabSCTs(_ c: SCTJudgeCase, _ version: TLSVersion) async throws {
        let f = try Fixtures.load()
        let leaf = f.identity(c.leaf)
        var config = ServerTLSConfiguration.makeServerConfiguration(leaf)
        config.minimumVersion = version
        config.maximumVersion = version
        try await FixtureServer.withServer(engine: OpenSSLEngine(), configuration: config) { server in
            let r = await run([
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
                version == .tls13 ? "-tls1_3" : "-tls1_2", "-CAfile", f.path("lab-root.pem"),
                "-ct", "-ctlogfile", f.pki.ctLogOpenSSLFile.path,
            ])
            #expect(
                r.stdout.contains("Verify return code: 0 (ok)"), "the chain itself verifies: \(r.stdout.suffix(400))")
            #expect(r.stdout.contains("SCTs present (\(c.statuses.count))"), "\(r.stdout.suffix(1200))")
            let statuses = r.stdout.split(separator: "\n").compactMap { line -> String? in
                guard let range = line.range(of: "SCT validation status: ") else { return nil }
                return String(line[range.upperBound...]).trimmingCharacters(in: .whitespaces)
            }
            #expect(statuses == c.statuses, "\(r.stdout.suffix(1200)) \(r.stderr.suffix(300))")
        }
    }

    /// OpenSSL's strict CT policy (SSL_CT_VALIDATION_STRICT: one SCT that validates against a log of the file) is
    /// the refusing judge: it accepts the valid, TLS-extension and one-SCT certificates and refuses the rest.
    @Test(.requires("openssl"), arguments: sctJudgeCases)
    func opensslStrictPolicyAcceptsOnlyValidSCTs(_ c: SCTJudgeCase) async throws {
        let f = try Fixtures.load()
        let config = ServerTLSConfiguration.makeServerConfiguration(f.identity(c.leaf))
        let expected = c.statuses.contains("valid")
        try await FixtureServer.withServer(engine: OpenSSLEngine(), configuration: config) { server in
            let port = server.port
            let verdict = try await Task.detached {
                try OpenSSLCTCheck.handshake(
                    ip: "127.0.0.1", port: port, host: "localhost",
                    trustRootsDER: [f.der("lab-root")], ctLogFile: f.pki.ctLogOpenSSLFile.path)
            }.value
            #expect(verdict.accepted == expected, "\(c.leaf): \(verdict)")
            #expect(verdict.statuses == c.statuses, "\(c.leaf): \(verdict)")
            if !expected {
                #expect(verdict.reason.contains("no valid SCTs") || verdict.reason.contains("71"), "\(verdict)")
            }
            let seen = try #require(await server.settle()?.last)
            #expect(seen.handshakeCompleted == expected, "the server saw the refusal too: \(seen)")
        }
    }

    /// The browsers' count (valid SCTs from two distinct logs) over OpenSSL's per-SCT validation: only the valid
    /// and TLS-extension certificates pass; the one-SCT certificate that OpenSSL's own policy accepts is refused.
    @Test(.requires("openssl"), arguments: sctJudgeCases)
    func twoLogPolicyAcceptsOnlyTwoValidSCTs(_ c: SCTJudgeCase) async throws {
        let f = try Fixtures.load()
        let config = ServerTLSConfiguration.makeServerConfiguration(f.identity(c.leaf))
        let expected = c.statuses.filter { $0 == "valid" }.count >= 2
        try await FixtureServer.withServer(engine: OpenSSLEngine(), configuration: config) { server in
            let port = server.port
            let verdict = try await Task.detached {
                try OpenSSLCTCheck.handshake(
                    ip: "127.0.0.1", port: port, host: "localhost", trustRootsDER: [f.der("lab-root")],
                    ctLogFile: f.pki.ctLogOpenSSLFile.path, minimumDistinctLogs: 2)
            }.value
            #expect(verdict.accepted == expected, "\(c.leaf): \(verdict)")
            #expect(verdict.statuses == c.statuses, "\(c.leaf): \(verdict)")
        }
    }

    @Test("the strict check with a log file that is not one is an error naming the file, not a verdict")
    func unreadableLogFile() async throws {
        let f = try Fixtures.load()
        let bogus = f.path("no-such-ctlogs.cnf")
        #expect(throws: OpenSSLCTCheckError.self) {
            try OpenSSLCTCheck.handshake(
                ip: "127.0.0.1", port: 9, host: "localhost", trustRootsDER: [f.der("lab-root")],
                ctLogFile: bogus)
        }
    }

    @Test("GnuTLS says it cannot send SCTs in the TLS extension instead of serving the certificate without them")
    func gnutlsRefusesTheTLSExtension() async throws {
        let f = try Fixtures.load()
        let config = ServerTLSConfiguration.makeServerConfiguration(f.identity("leaf-ct-tls"))
        #expect(config.identities[0].signedCertificateTimestampList != nil)
        let error = await #expect(throws: TLSEngineError.self) {
            try await FixtureServer.withServer(engine: GnuTLSEngine(), configuration: config) { _ in }
        }
        #expect(
            error?.code == .unsupported && "\(error!)".contains("signed certificate timestamps"),
            "\(String(describing: error))")
    }

    @Test("GnuTLS serves embedded SCTs (they are part of the certificate)", .requires("openssl"))
    func gnutlsServesEmbeddedSCTs() async throws {
        let f = try Fixtures.load()
        let config = ServerTLSConfiguration.makeServerConfiguration(f.identity("leaf-ct-valid"))
        try await FixtureServer.withServer(engine: GnuTLSEngine(), configuration: config) { server in
            let r = await run([
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
                "-CAfile", f.path("lab-root.pem"), "-ct", "-ctlogfile", f.pki.ctLogOpenSSLFile.path,
            ])
            #expect(
                r.stdout.components(separatedBy: "SCT validation status: valid").count == 3, "\(r.stdout.suffix(1200))")
        }
    }
}
