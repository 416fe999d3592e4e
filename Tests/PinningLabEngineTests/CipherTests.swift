import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// A cipher restriction is served on both engines, and the negotiated suite is what a real client sees.
struct CipherCase: Sendable, CustomTestStringConvertible {
    var suite: String
    var leaf: String
    var chain: [String]
    var version: TLSVersion
    /// What `openssl s_client` prints as `Cipher is …`.
    var openSSLName: String
    var testDescription: String { suite }
}

@Suite("Cipher restrictions on both engines")
struct CipherTests {
    static let cases: [CipherCase] = [
        .init(
            suite: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", leaf: "leaf-v1", chain: ["lab-intermediate-a"],
            version: .tls12, openSSLName: "ECDHE-ECDSA-AES128-GCM-SHA256"),
        .init(
            suite: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", leaf: "leaf-v1", chain: ["lab-intermediate-a"],
            version: .tls12, openSSLName: "ECDHE-ECDSA-AES256-SHA"),
        // Static RSA key exchange (no forward secrecy): needs an RSA leaf.
        .init(
            suite: "TLS_RSA_WITH_AES_128_GCM_SHA256", leaf: "leaf-rsa-2048", chain: ["lab-intermediate-a"],
            version: .tls12, openSSLName: "AES128-GCM-SHA256"),
        .init(
            suite: "TLS_AES_256_GCM_SHA384", leaf: "leaf-v1", chain: ["lab-intermediate-a"],
            version: .tls13, openSSLName: "TLS_AES_256_GCM_SHA384"),
    ]

    // Issue 8, defect 4: names missing from the OpenSSL table were dropped by compactMap, and GnuTLS never got a
    // priority string, so it reported every cipher-restricted scenario unsupported. Before the fix the GnuTLS
    // cases here threw `.unsupported` and TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA was served unrestricted by OpenSSL.
    @Test(.requires("openssl"), arguments: cases, EngineKind.allCases)
    func negotiatesTheRestrictedSuite(_ c: CipherCase, _ kind: EngineKind) async throws {
        let f = try Fixtures.load()
        var config = f.configuration([c.leaf] + c.chain)
        config.minimumVersion = c.version
        config.maximumVersion = c.version
        config.ciphers = try CipherPreferences(ianaSuites: [c.suite])
        try await FixtureServer.withServer(engine: kind.engine, configuration: config) { server in
            let flag = c.version == .tls13 ? "-tls1_3" : "-tls1_2"
            let r = await run([
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
                flag, "-cipher", "ALL:@SECLEVEL=0", "-ciphersuites",
                "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
            ])
            #expect(
                r.stdout.contains("Cipher is \(c.openSSLName)"),
                "\(kind) \(c.suite): \(r.stdout.suffix(600)) \(r.stderr.suffix(300))")
            // The server's own record names the same suite (it was only checked to be there).
            let seen = try #require(await server.settle()?.last)
            #expect(seen.cipherSuite == c.suite, "\(kind) recorded \(seen.cipherSuite ?? "no suite") for \(c.suite)")
            #expect(seen.handshakeCompleted)
        }
    }

    @Test("a client offering only other suites is refused", .requires("openssl"), arguments: EngineKind.allCases)
    func refusesOtherSuites(_ kind: EngineKind) async throws {
        let f = try Fixtures.load()
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.maximumVersion = .tls12
        config.ciphers = try CipherPreferences(ianaSuites: ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"])
        try await FixtureServer.withServer(engine: kind.engine, configuration: config) { server in
            let r = await run([
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost",
                "-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384",
            ])
            #expect(!r.stdout.contains("Cipher is ECDHE"), "\(r.stdout.suffix(400))")
            // …and the server saw that client and refused it: a connection, no completed handshake (the client's
            // silence alone would also pass the check above).
            let seen = try #require(await server.settle()?.last, "the server saw the client")
            #expect(!seen.handshakeCompleted, "\(seen)")
        }
    }

    /// A misspelt or unknown name throws an invalid-configuration error naming it and listing the names that are
    /// known; a known name next to it does not make it pass. (This test used to expect nothing when nothing threw.)
    @Test(arguments: [
        ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA265"], ["TLS_NOT_A_SUITE"],
        ["TLS_AES_256_GCM_SHA384", "TLS_NOT_A_SUITE"],
    ])
    func anUnknownSuiteIsAnErrorNotASilentNoOp(_ names: [String]) throws {
        let unknown = try #require(names.last)
        let error = try #require(throws: TLSEngineError.self) { try CipherPreferences(ianaSuites: names) }
        #expect(error.code == .invalidConfiguration, "\(error)")
        #expect(error.reason.hasPrefix("'\(unknown)' is not a cipher suite"), "\(error)")
        #expect(
            error.reason.contains("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), "the known names are listed: \(error)")
    }

    @Test func everyKnownSuiteMapsOnBothEngines() throws {
        for s in CipherSuite.all {
            let p = try CipherPreferences(ianaSuites: [s.ianaName])
            #expect(p.restrictsOpenSSL && p.restrictsGnuTLS, "\(s.ianaName)")
        }
    }
}
