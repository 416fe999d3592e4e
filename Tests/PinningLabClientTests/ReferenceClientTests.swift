// Every reference client against real `openssl s_server` handshakes on 127.0.0.1. The server's message trace is
// the oracle: an accepting client must have sent application data, a refusing one must not have.
import Foundation
import PinningLab
import PinningLabCore
import PinningLabReferenceClients
import PinningLabTestSupport
import Testing

enum ClientExpectation: Sendable, CustomStringConvertible {
    case accept
    /// Refuse with this category; the client's detail must contain `detail` (when not empty).
    case refuse(RefusalCategory, String = "")

    var description: String {
        switch self {
        case .accept: return "A"
        case .refuse(let category, _): return "X(\(category))"
        }
    }
}

/// What the client pins, by certificate name in the test PKI.
enum ClientTestPins: Sendable {
    case none
    case spki([String])
    case certificate([String])
    /// SHA-256 of the bare key bytes (the SPKI's BIT STRING contents), as an iOS app hashing
    /// `SecKeyCopyExternalRepresentation` would pin: for P-256 the last 65 bytes of the SPKI DER (04||X||Y), for
    /// Ed25519 the last 32, for RSA the PKCS#1 RSAPublicKey DER as `openssl rsa -RSAPublicKey_out` writes it.
    case bareKey(String)

    func pinSet(_ pki: ClientTestPKI) throws -> PinSet {
        switch self {
        case .none: return .empty
        case .spki(let names): return PinSet(kind: .spkiSHA256, hashes: try names.map { try pki.spkiPin($0) })
        case .certificate(let names):
            return PinSet(kind: .certificateSHA256, hashes: try names.map { try pki.certificatePin($0) })
        case .bareKey(let name):
            let bare =
                switch name {
                case "rsa-2048": "openssl rsa -pubin -RSAPublicKey_out -outform der 2>/dev/null"
                case "ed25519": "openssl pkey -pubin -outform der | tail -c 32"
                default: "openssl pkey -pubin -outform der | tail -c 65"
                }
            let hash = try clientTestShell(
                "openssl x509 -in \(name).pem -pubkey -noout | \(bare) | openssl dgst -sha256 -binary",
                in: pki.directory)
            return PinSet(kind: .spkiSHA256, hashes: [[UInt8](hash)])
        }
    }

    var profile: PinProfile {
        switch self {
        case .none: return .none
        case .certificate: return .leafCert
        case .spki, .bareKey: return .leafSPKI
        }
    }
}

struct ClientCase: Sendable, CustomTestStringConvertible {
    var name: String
    var server: ClientTestServerConfig
    var trust: [String] = ["lab-root"]
    var pins: ClientTestPins
    /// Client certificate name and its issuers.
    var credentials: (name: String, issuers: [String])? = nil
    /// In the order of `ReferenceClients.names`: correct, pin-presented-chain, pin-replaces-validation,
    /// no-hostname-check, raw-key-hash, no-pinning.
    var expected: [ClientExpectation]

    var testDescription: String { name }

    /// The six columns are the clients whose mistake shows on one connection without a pin scope, a resumed
    /// session, a revocation responder, HTTP/2 or a name-collision root. Every other client is predicted to act as
    /// `correct` in these cases (its mistake is judged by the catalogue's cells where it bites: `name-collision-root`,
    /// `pin-scope-*`, `resumption-*`, `ocsp-stapled-*`, `crl-*`, `h2-coalescing-pinned-host`,
    /// `early-data-to-interceptor`); a new client that does not is caught here and needs a column of its own.
    func expectation(for client: String) -> ClientExpectation {
        expected[Self.columns.firstIndex(of: client) ?? 0]
    }

    static let columns = [
        "correct", "pin-presented-chain", "pin-replaces-validation", "no-hostname-check", "raw-key-hash", "no-pinning",
    ]
}

// swift-format-ignore: AlwaysUseLowerCamelCase
let A = ClientExpectation.accept
let pin = ClientExpectation.refuse(.pinMismatch)
func chain(_ detail: String) -> ClientExpectation { .refuse(.chainInvalid, detail) }
let host = ClientExpectation.refuse(.hostname, "hostname mismatch")
let clientAuth = ClientExpectation.refuse(.clientAuth)

let good = ClientTestServerConfig(leaf: "leaf-v1", chain: ["int-a"])
/// An RSA-1024 leaf; s_server must drop its own security level to serve it.
let weak = ClientTestServerConfig(leaf: "weak", chain: ["int-a"], extraArguments: ["-cipher", "DEFAULT:@SECLEVEL=0"])
let untrusted = "unable to get local issuer certificate"

let clientCases: [ClientCase] = [
    //                                                                 correct ppc    prv    no-host raw   no-pin
    ClientCase(name: "baseline leaf-spki", server: good, pins: .spki(["leaf-v1"]), expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "baseline leaf-cert", server: good, pins: .certificate(["leaf-v1"]), expected: [A, A, A, A, A, A]),
    ClientCase(
        name: "baseline intermediate-spki", server: good, pins: .spki(["int-a"]), expected: [A, A, A, A, pin, A]),
    // The root is not sent: only the validated chain contains it.
    ClientCase(
        name: "baseline root-spki", server: good, pins: .spki(["lab-root"]), expected: [A, pin, pin, A, pin, A]),
    ClientCase(name: "baseline none", server: good, pins: .none, expected: [A, A, A, A, A, A]),
    ClientCase(
        name: "baseline bare-key pin", server: good, pins: .bareKey("leaf-v1"), expected: [pin, pin, pin, pin, A, A]),
    ClientCase(
        name: "rsa-2048 leaf-spki", server: .init(leaf: "rsa-2048", chain: ["int-a"]), pins: .spki(["rsa-2048"]),
        expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "rsa-2048 bare-key pin", server: .init(leaf: "rsa-2048", chain: ["int-a"]), pins: .bareKey("rsa-2048"),
        expected: [pin, pin, pin, pin, A, A]),
    ClientCase(
        name: "ed25519 leaf-spki", server: .init(leaf: "ed25519", chain: ["int-a"]), pins: .spki(["ed25519"]),
        expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "ed25519 bare-key pin", server: .init(leaf: "ed25519", chain: ["int-a"]), pins: .bareKey("ed25519"),
        expected: [pin, pin, pin, pin, A, A]),
    ClientCase(
        name: "baseline over ::1 leaf-spki", server: .init(leaf: "leaf-v1", chain: ["int-a"], ipv6: true),
        pins: .spki(["leaf-v1"]), expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "baseline wrong pin", server: good, pins: .spki(["leaf-v3"]), expected: [pin, pin, pin, pin, pin, A]),
    ClientCase(
        name: "baseline TLS 1.2 leaf-spki",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], extraArguments: ["-tls1_2"]),
        pins: .spki(["leaf-v1"]), expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "baseline TLS 1.2 wrong pin",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], extraArguments: ["-tls1_2"]),
        pins: .spki(["leaf-v3"]), expected: [pin, pin, pin, pin, pin, A]),
    ClientCase(
        name: "renewal-same-key leaf-spki", server: .init(leaf: "leaf-v2", chain: ["int-a"]), pins: .spki(["leaf-v1"]),
        expected: [A, A, A, A, pin, A]),
    ClientCase(
        name: "renewal-same-key leaf-cert", server: .init(leaf: "leaf-v2", chain: ["int-a"]),
        pins: .certificate(["leaf-v1"]), expected: [pin, pin, pin, pin, pin, A]),
    ClientCase(
        name: "intercepting-proxy leaf-spki", server: .init(leaf: "proxy-leaf", chain: []),
        trust: ["lab-root", "proxy-root"], pins: .spki(["leaf-v1"]), expected: [pin, pin, pin, pin, pin, A]),
    ClientCase(
        name: "chain-stuffing leaf-spki", server: .init(leaf: "proxy-leaf", chain: ["leaf-v1", "int-a"]),
        trust: ["lab-root", "proxy-root"], pins: .spki(["leaf-v1"]), expected: [pin, A, A, pin, pin, A]),
    ClientCase(
        name: "chain-stuffing intermediate-spki", server: .init(leaf: "proxy-leaf", chain: ["int-a"]),
        trust: ["lab-root", "proxy-root"], pins: .spki(["int-a"]), expected: [pin, A, A, pin, pin, A]),
    ClientCase(
        name: "wrong-host leaf-spki", server: .init(leaf: "wrong-host", chain: ["int-a"]), pins: .spki(["leaf-v1"]),
        expected: [host, host, A, A, host, host]),
    ClientCase(
        name: "untrusted-rogue leaf-spki", server: .init(leaf: "rogue-leaf", chain: []), pins: .spki(["leaf-v1"]),
        expected: [chain(untrusted), chain(untrusted), A, chain(untrusted), chain(untrusted), chain(untrusted)]),
    // With no pins, pin-replaces-validation has nothing to replace validation with: it validates normally.
    ClientCase(
        name: "untrusted-rogue none", server: .init(leaf: "rogue-leaf", chain: []), pins: .none,
        expected: Array(repeating: chain(untrusted), count: 6)),
    ClientCase(
        name: "expired-leaf leaf-spki", server: .init(leaf: "expired", chain: ["int-a"]), pins: .spki(["leaf-v1"]),
        expected: [chain("expired"), chain("expired"), A, chain("expired"), chain("expired"), chain("expired")]),
    ClientCase(
        name: "incomplete-chain leaf-spki", server: .init(leaf: "leaf-v1", chain: []), pins: .spki(["leaf-v1"]),
        expected: [chain(untrusted), chain(untrusted), A, chain(untrusted), chain(untrusted), chain(untrusted)]),
    ClientCase(
        name: "weak-key none", server: weak, pins: .none, expected: Array(repeating: chain("key too weak"), count: 6)),
    ClientCase(
        name: "weak-key leaf-cert", server: weak, pins: .certificate(["weak"]),
        expected: [
            chain("key too weak"), chain("key too weak"), A, chain("key too weak"), chain("key too weak"),
            chain("key too weak"),
        ]),
    ClientCase(
        name: "mtls-valid leaf-spki",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], requireClientCertificateFrom: "client-ca"),
        pins: .spki(["leaf-v1"]), credentials: ("client", []), expected: [A, A, A, A, pin, A]),
    // Our pin check happens first (inside the handshake), so raw-key-hash refuses for its own reason.
    ClientCase(
        name: "mtls-missing leaf-spki",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], requireClientCertificateFrom: "client-ca"),
        pins: .spki(["leaf-v1"]), expected: [clientAuth, clientAuth, clientAuth, clientAuth, pin, clientAuth]),
    ClientCase(
        name: "mtls-missing TLS 1.2 none",
        server: .init(
            leaf: "leaf-v1", chain: ["int-a"], requireClientCertificateFrom: "client-ca", extraArguments: ["-tls1_2"]),
        pins: .none, expected: Array(repeating: clientAuth, count: 6)),
    // A client certificate from an issuer the server does not trust.
    ClientCase(
        name: "mtls-untrusted-client none",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], requireClientCertificateFrom: "client-ca"),
        pins: .none, credentials: ("rogue-leaf", []), expected: Array(repeating: clientAuth, count: 6)),
    // The client sends its intermediate too (the server trusts only the client CA).
    ClientCase(
        name: "mtls-valid-with-intermediate none",
        server: .init(leaf: "leaf-v1", chain: ["int-a"], requireClientCertificateFrom: "client-ca"),
        pins: .none, credentials: ("client2", ["client-int"]), expected: Array(repeating: A, count: 6)),
]

@Suite("Reference clients against openssl s_server", .requires("openssl"))
struct ReferenceClientTests {
    @Test("client × scenario", arguments: clientCases, ReferenceClients.names)
    func matrix(_ scenario: ClientCase, clientName: String) async throws {
        let pki = try ClientTestPKI.get()
        let client = try #require(ReferenceClients.named(clientName))
        let server = try await ClientTestServer.start(scenario.server, pki: pki)
        let target = ClientTarget(
            ip: scenario.server.ipv6 ? "::1" : "127.0.0.1", port: server.port,
            trustRootsDER: try scenario.trust.map { try pki.der($0) }, pins: try scenario.pins.pinSet(pki),
            clientCredentials: try scenario.credentials.map { try pki.credentials($0.name, issuers: $0.issuers) },
            scenario: scenario.name, profile: scenario.pins.profile, timeout: .seconds(20))
        let outcome = await client.run(target)
        let log = await server.finish()
        let sawRequest = log.receivedApplicationData
        let context = Comment(
            rawValue:
                "\(clientName) on \(scenario.name): \(outcome.claim) \(outcome.category?.rawValue ?? "") — \(outcome.detail)"
        )

        switch scenario.expectation(for: clientName) {
        case .accept:
            #expect(outcome.claim == .accepted, context)
            #expect(outcome.detail.contains("HTTP/1.0 200 ok"), context)
            #expect(sawRequest, "the server must have seen the request; \(context)")
        case .refuse(let category, let detail):
            #expect(outcome.claim == .refused, context)
            #expect(outcome.category == category, context)
            if !detail.isEmpty { #expect(outcome.detail.contains(detail), context) }
            #expect(!sawRequest, "the server must not have seen application data; \(context)")
            if [.pinMismatch, .chainInvalid, .hostname].contains(category) {
                // Every local decision is taken inside the handshake, so OpenSSL tells the server with an alert.
                #expect(log.receivedAlert?.hasPrefix("fatal") == true, "expected a fatal alert; \(context)")
            }
        }
        #expect(log.clientHelloHasServerName("localhost"), "SNI localhost; \(context)")
    }

    @Test("every client refuses in time when the server never answers", arguments: ReferenceClients.names)
    func silentServer(clientName: String) async throws {
        let listener = try ClientTestSilentListener()
        let client = try #require(ReferenceClients.named(clientName))
        let target = ClientTarget(
            port: listener.port, trustRootsDER: [], pins: .empty, scenario: "silent", profile: .none,
            timeout: .milliseconds(300))
        let outcome = await client.run(target)
        #expect(outcome.claim == .refused)
        #expect(outcome.category == .timeout, "\(outcome.detail)")
    }

    @Test("many concurrent runs each get their own verdict")
    func concurrentRuns() async throws {
        let pki = try ClientTestPKI.get()
        // accept / pin mismatch / chain invalid for `correct`
        let cases = ["baseline leaf-spki", "baseline wrong pin", "untrusted-rogue leaf-spki"].map { name in
            clientCases.first { $0.name == name }!
        }
        try await withThrowingTaskGroup(of: (String, ClientOutcome, ClientExpectation, Bool).self) { group in
            for round in 0..<4 {
                for scenario in cases {
                    let server = try await ClientTestServer.start(scenario.server, pki: pki)
                    let target = ClientTarget(
                        port: server.port, trustRootsDER: try scenario.trust.map { try pki.der($0) },
                        pins: try scenario.pins.pinSet(pki), scenario: scenario.name, profile: scenario.pins.profile,
                        timeout: .seconds(30))
                    group.addTask {
                        let outcome = await ReferenceClient.correct.run(target)
                        let sawRequest = await server.finish().receivedApplicationData
                        return ("\(scenario.name) #\(round)", outcome, scenario.expectation(for: "correct"), sawRequest)
                    }
                }
            }
            var count = 0
            for try await (name, outcome, expectation, sawRequest) in group {
                count += 1
                switch expectation {
                case .accept:
                    #expect(outcome.claim == .accepted && sawRequest, "\(name): \(outcome.detail)")
                case .refuse(let category, _):
                    #expect(outcome.category == category && !sawRequest, "\(name): \(outcome.detail)")
                }
            }
            #expect(count == 12)
        }
    }

    /// A name finds the client of that name, and only that spelling does; every teaching client says what it does
    /// wrong in words of its own (a row that kept `correct`'s sentence, or an empty one, fails).
    @Test("catalogue names", arguments: ReferenceClients.names)
    func catalogue(name: String) throws {
        let client = try #require(ReferenceClients.named(name) as? ReferenceClient)
        #expect(client.name == name)
        #expect(client.mistake.rawValue == name)
        #expect(ReferenceClients.named(name.uppercased()) == nil)
        #expect(ReferenceClients.named(name + " ") == nil)
        #expect(name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }, "kebab-case: \(name)")
        #expect(!client.mistake.explanation.isEmpty && !client.mistake.prediction.isEmpty)
        if name != "correct" {
            #expect(client.mistake != .none)
            #expect(
                client.mistake.explanation != ReferenceClient.Mistake.none.explanation,
                "\(name) explains itself as correct")
            #expect(
                client.mistake.prediction != ReferenceClient.Mistake.none.prediction,
                "\(name) predicts it passes everything")
        }
    }

    @Test func unknownName() {
        #expect(ReferenceClients.named("trust-everything") == nil)
        #expect(ReferenceClients.named("") == nil)
        #expect(ReferenceClients.names.first == "correct")
        #expect(Set(ReferenceClients.names).count == ReferenceClients.names.count, "\(ReferenceClients.names)")
        // The checking variants are found by name but are not rows of the catalogue.
        for variant in ["correct-revocation-soft", "correct-revocation-hard", "correct-ct-required"] {
            #expect(ReferenceClients.named(variant)?.name == variant)
            #expect(!ReferenceClients.names.contains(variant))
        }
    }

    /// The README's table of reference clients ("What `pinlab demo` shows") lists exactly the clients the package
    /// has, in the same order, so the documentation and the code cannot drift apart.
    @Test func theReadmeListsEveryReferenceClient() throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"),
            encoding: .utf8)
        let section = try #require(readme.range(of: "## What `pinlab demo` shows"))
        let table = readme[section.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("| client |") }
            .dropFirst(2).prefix { $0.hasPrefix("| `") }
        let documented = table.compactMap { $0.split(separator: "`").dropFirst().first.map(String.init) }
        #expect(documented == ReferenceClients.names, "README: \(documented)")
        #expect(Set(ReferenceClients.names).count == ReferenceClients.names.count)
    }

    @Test("a closed port is refused, not accepted")
    func closedPort() async throws {
        let closed = try ClientTestSilentListener(listening: false)
        let outcome = await ReferenceClient.correct.run(
            ClientTarget(
                port: closed.port, trustRootsDER: [], pins: .empty, scenario: "closed", profile: .none,
                timeout: .seconds(5)))
        withExtendedLifetime(closed) {}
        #expect(outcome.claim == .refused)
        #expect(outcome.detail.contains("connect"), "\(outcome.detail)")
    }
}

@Suite("Reference clients: configuration errors are refusals that name the field")
struct ReferenceClientConfigurationTests {
    @Test("bad input", arguments: ["trust", "key", "mismatched-key", "empty-chain"])
    func badInput(_ kind: String) async throws {
        let pki = try ClientTestPKI.get()
        let server = try await ClientTestServer.start(good, pki: pki)
        var target = ClientTarget(
            port: server.port, trustRootsDER: [try pki.der("lab-root")], pins: .empty, scenario: "bad-input",
            profile: .none, timeout: .seconds(10))
        let valid = try pki.credentials("client", issuers: [])
        let expected: String
        switch kind {
        case "trust":
            target.trustRootsDER.append([0x30, 0x03, 0x02, 0x01, 0x00])
            expected = "trustRootsDER[1]"
        case "key":
            target.clientCredentials = ClientCredentials(
                certificateChainDER: valid.certificateChainDER, privateKeyPKCS8DER: [1, 2, 3])
            expected = "clientCredentials.privateKeyPKCS8DER"
        case "mismatched-key":
            let other = try pki.credentials("client2", issuers: [])
            target.clientCredentials = ClientCredentials(
                certificateChainDER: valid.certificateChainDER, privateKeyPKCS8DER: other.privateKeyPKCS8DER)
            expected = "does not fit"
        default:
            target.clientCredentials = ClientCredentials(
                certificateChainDER: [], privateKeyPKCS8DER: valid.privateKeyPKCS8DER)
            expected = "certificateChainDER is empty"
        }
        let outcome = await ReferenceClient.correct.run(target)
        let sawRequest = await server.finish().receivedApplicationData
        #expect(!sawRequest)
        #expect(outcome.claim == .refused)
        #expect(outcome.category == .other)
        #expect(outcome.detail.contains(expected), "\(outcome.detail)")
    }
}
