import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// A valid scenario; each malformed case below changes one thing in it.
let validScenarioYAML = """
    id: sample
    title: A sample
    tags: [baseline]
    teaching: >
      Text.
    server:
      chain: [leaf-v1, lab-intermediate-a]
    client:
      trust: lab-root
    expect:
      none: accept
      leaf-cert: accept
      leaf-spki: accept
      leaf-spki+backup: accept
      intermediate-spki: accept
      root-spki: accept
    """

struct MalformedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var yaml: String
    var code: ScenarioError.Code
    var line: Int
    var field: String
    /// Words the message must contain (what is wrong, and the fix).
    var mentions: [String]
    var testDescription: String { name }
}

func replacing(_ old: String, _ new: String) -> String {
    precondition(validScenarioYAML.contains(old), "test case does not apply: \(old)")
    return validScenarioYAML.replacingOccurrences(of: old, with: new)
}

let malformedCases: [MalformedCase] = [
    MalformedCase(
        name: "yaml syntax", yaml: replacing("title: A sample", "title: A: sample"),
        code: .syntax, line: 2, field: "", mentions: ["invalid YAML", "quot"]),
    MalformedCase(
        name: "duplicate key", yaml: replacing("title: A sample", "title: A sample\ntitle: Again"),
        code: .syntax, line: 2, field: "", mentions: ["'title'", "more than once"]),
    MalformedCase(name: "empty file", yaml: "", code: .notAMapping, line: 1, field: "", mentions: ["empty"]),
    MalformedCase(
        name: "top level is a list", yaml: "- id: sample\n", code: .notAMapping, line: 1, field: "",
        mentions: ["mapping", "a list"]),
    MalformedCase(
        name: "unknown field with typo", yaml: replacing("teaching: >", "teachng: >"),
        code: .unknownField, line: 4, field: "teachng", mentions: ["unknown field", "did you mean 'teaching'"]),
    MalformedCase(
        name: "missing title", yaml: replacing("title: A sample\n", ""),
        code: .missingField, line: 1, field: "title", mentions: ["'title'", "missing"]),
    MalformedCase(
        name: "negative order", yaml: replacing("tags: [baseline]", "tags: [baseline]\norder: -5"),
        code: .wrongType, line: 4, field: "order", mentions: ["'-5'", "whole number", "order: 120"]),
    MalformedCase(
        name: "order in words", yaml: replacing("tags: [baseline]", "tags: [baseline]\norder: ten"),
        code: .wrongType, line: 4, field: "order", mentions: ["'ten'", "whole number"]),
    MalformedCase(
        name: "invalid id", yaml: replacing("id: sample", "id: Sample_One"),
        code: .invalidID, line: 1, field: "id", mentions: ["Sample_One", "lower-case"]),
    MalformedCase(
        name: "id does not match file", yaml: replacing("id: sample", "id: other"),
        code: .idMismatch, line: 1, field: "id", mentions: ["'other'", "sample.yaml"]),
    MalformedCase(
        name: "unknown identity in chain", yaml: replacing("lab-intermediate-a]", "lab-intermediat-a]"),
        code: .unknownIdentity, line: 7, field: "server.chain[1]",
        mentions: ["'lab-intermediat-a'", "Did you mean 'lab-intermediate-a'"]),
    MalformedCase(
        name: "empty chain", yaml: replacing("[leaf-v1, lab-intermediate-a]", "[]"),
        code: .emptyChain, line: 7, field: "server.chain", mentions: ["references no certificate"]),
    MalformedCase(
        name: "root as server certificate", yaml: replacing("[leaf-v1, lab-intermediate-a]", "[lab-root]"),
        code: .wrongRole, line: 7, field: "server.chain[0]", mentions: ["'lab-root' is a root", "leaf"]),
    MalformedCase(
        name: "certificate twice in chain",
        yaml: replacing("[leaf-v1, lab-intermediate-a]", "[leaf-v1, lab-intermediate-a, leaf-v1]"),
        code: .duplicateInChain, line: 7, field: "server.chain[2]", mentions: ["server.chain[0]"]),
    MalformedCase(
        name: "chain is a single value", yaml: replacing("[leaf-v1, lab-intermediate-a]", "leaf-v1"),
        code: .wrongType, line: 7, field: "server.chain", mentions: ["expected a list", "[leaf-v1]"]),
    MalformedCase(
        name: "unknown pin profile", yaml: replacing("  root-spki: accept", "  root-spki: accept\n  root-cert: accept"),
        code: .unknownProfile, line: 17, field: "expect.root-cert",
        mentions: ["not a pin profile", "root-spki"]),
    MalformedCase(
        name: "missing expectation", yaml: replacing("  intermediate-spki: accept\n", ""),
        code: .missingExpectation, line: 11, field: "expect.intermediate-spki",
        mentions: ["intermediate-spki", "accept|refuse"]),
    MalformedCase(
        name: "bad expectation", yaml: replacing("  leaf-spki: accept", "  leaf-spki: maybe"),
        code: .badExpectation, line: 13, field: "expect.leaf-spki", mentions: ["'maybe'", "`refuse`"]),
    MalformedCase(
        name: "bad trust profile", yaml: replacing("trust: lab-root", "trust: lab-root+proxy"),
        code: .badTrustProfile, line: 9, field: "client.trust",
        mentions: ["'proxy'", "Did you mean 'proxy-root'"]),
    MalformedCase(
        name: "trust profile names a leaf", yaml: replacing("trust: lab-root", "trust: leaf-v1"),
        code: .badTrustProfile, line: 9, field: "client.trust",
        mentions: ["is a leaf, not a root (or a CA certificate installed as an anchor)"]),
    MalformedCase(
        name: "bad TLS version",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]",
            "  chain: [leaf-v1, lab-intermediate-a]\n  tls:\n    versions: [tls1.2, tls1.4]"),
        code: .badTLSVersion, line: 9, field: "server.tls.versions[1]", mentions: ["'tls1.4'", "tls1.3"]),
    MalformedCase(
        name: "OpenSSL cipher name",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]",
            "  chain: [leaf-v1, lab-intermediate-a]\n  tls:\n    ciphers: [ECDHE-ECDSA-AES128-GCM-SHA256]"),
        code: .badCipherSuite, line: 9, field: "server.tls.ciphers[0]", mentions: ["IANA"]),
    MalformedCase(
        name: "bad client auth mode",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]",
            "  chain: [leaf-v1, lab-intermediate-a]\n  client-auth:\n    mode: require\n    trust: [client-ca]"),
        code: .badClientAuthMode, line: 9, field: "server.client-auth.mode", mentions: ["Did you mean 'required'"]),
    MalformedCase(
        name: "client auth without trust",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]",
            "  chain: [leaf-v1, lab-intermediate-a]\n  client-auth:\n    mode: required"),
        code: .missingClientAuthTrust, line: 9, field: "server.client-auth.trust", mentions: ["client-ca"]),
    MalformedCase(
        name: "present without client auth",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  present: client-valid"),
        code: .presentWithoutClientAuth, line: 10, field: "client.present", mentions: ["never asks"]),
    MalformedCase(
        name: "present a server certificate",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]\nclient:\n  trust: lab-root",
            "  chain: [leaf-v1, lab-intermediate-a]\n  client-auth: {mode: required, trust: [client-ca]}\nclient:\n  trust: lab-root\n  present: leaf-v2-renewal"
        ),
        code: .wrongRole, line: 11, field: "client.present", mentions: ["is a leaf", "client-valid"]),
    MalformedCase(
        name: "pinned identity under a root",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  pinned: proxy-leaf"),
        code: .wrongRole, line: 10, field: "client.pinned", mentions: ["intermediate-spki"]),
    MalformedCase(
        name: "unknown refusal category", yaml: replacing("expect:", "refusal: pin-mismatched\nexpect:"),
        code: .badRefusal, line: 10, field: "refusal", mentions: ["Did you mean 'pin-mismatch'"]),
    MalformedCase(
        name: "refusal in a scenario that never refuses", yaml: replacing("expect:", "refusal: hostname\nexpect:"),
        code: .badRefusal, line: 10, field: "refusal", mentions: ["expects no refusal"]),
    MalformedCase(
        name: "host outside the lab root's name constraints",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  host: api.example.com"),
        code: .badHost, line: 10, field: "client.host",
        mentions: ["'api.example.com'", "name constraints", "other.pinning.test"]),
    MalformedCase(
        name: "host is an address", yaml: replacing("trust: lab-root", "trust: lab-root\n  host: 127.0.0.1"),
        code: .badHost, line: 10, field: "client.host", mentions: ["'127.0.0.1'", "not a DNS host name"]),
    MalformedCase(
        name: "host with a port",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  host: \"other.pinning.test:443\""),
        code: .badHost, line: 10, field: "client.host", mentions: ["no IP address, port"]),
    // A host may be spelled in capitals or with one trailing dot (what the client asks for); a scope's domain is
    // written in its normal form, and two trailing dots are no spelling of any host.
    MalformedCase(
        name: "pin scope domain in capitals",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  pin-scope: {domain: Api.Pinning.Test}"),
        code: .badHost, line: 10, field: "client.pin-scope.domain", mentions: ["lower-case"]),
    MalformedCase(
        name: "host with two trailing dots",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  host: other.pinning.test.."),
        code: .badHost, line: 10, field: "client.host", mentions: ["'other.pinning.test..'", "one trailing dot"]),
    MalformedCase(
        name: "pin scope without a domain",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  pin-scope: {subdomains: true}"),
        code: .missingField, line: 10, field: "client.pin-scope.domain", mentions: ["'domain'", "api.pinning.test"]),
    MalformedCase(
        name: "pin scope subdomains not a boolean",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  pin-scope: {domain: api.pinning.test, subdomains: all}"),
        code: .wrongType, line: 10, field: "client.pin-scope.subdomains", mentions: ["'all'", "subdomains: true"]),
    MalformedCase(
        name: "pin scope for a real domain",
        yaml: replacing("trust: lab-root", "trust: lab-root\n  pin-scope: {domain: example.com}"),
        code: .badHost, line: 10, field: "client.pin-scope.domain", mentions: ["name constraints"]),
    MalformedCase(
        name: "notes for an unknown profile", yaml: validScenarioYAML + "\nnotes:\n  leaf-key: \"x\"",
        code: .unknownProfile, line: 18, field: "notes.leaf-key", mentions: ["not a pin profile"]),
    MalformedCase(
        name: "policy for an unknown platform", yaml: validScenarioYAML + "\npolicy:\n  reason: x\n  ios: refuse",
        code: .badPolicy, line: 19, field: "policy.ios",
        mentions: ["'ios' is not a platform policy", "ats, android, jdk, openssl-default"]),
    MalformedCase(
        name: "policy without a reason", yaml: validScenarioYAML + "\npolicy:\n  ats: refuse",
        code: .badPolicy, line: 18, field: "policy.reason", mentions: ["no reason", "reason:"]),
    MalformedCase(
        name: "policy expectation that is not one", yaml: validScenarioYAML + "\npolicy:\n  reason: x\n  ats: maybe",
        code: .badPolicy, line: 19, field: "policy.ats", mentions: ["'maybe' is not an expectation", "ats: refuse"]),
    MalformedCase(
        name: "policy row missing a profile", yaml: validScenarioYAML + "\npolicy:\n  reason: x\n  jdk: {none: refuse}",
        code: .badPolicy, line: 19, field: "policy.jdk.leaf-cert", mentions: ["leaf-cert", "jdk: accept|refuse"]),
    MalformedCase(
        name: "policy that decides nothing", yaml: validScenarioYAML + "\npolicy:\n  reason: x\n  ats: accept",
        code: .badPolicy, line: 18, field: "policy", mentions: ["no platform decides any cell", "remove `policy`"]),
    MalformedCase(
        name: "variance on a cell a correct client refuses",
        yaml: replacing("  leaf-cert: accept", "  leaf-cert: refuse")
            + "\nvaries:\n  leaf-cert: \"some verifiers accept\"",
        code: .badVariance, line: 18, field: "varies.leaf-cert", mentions: ["an acceptance there is a flaw"]),
    MalformedCase(
        name: "variance for an unknown profile", yaml: validScenarioYAML + "\nvaries:\n  leaf-key: \"x\"",
        code: .unknownProfile, line: 18, field: "varies.leaf-key", mentions: ["not a pin profile"]),
    MalformedCase(
        name: "unknown kind of OCSP staple",
        yaml: replacing(
            "  chain: [leaf-v1, lab-intermediate-a]", "  chain: [leaf-v1, lab-intermediate-a]\n  ocsp-staple: revokd"),
        code: .badStaple, line: 8, field: "server.ocsp-staple",
        mentions: ["'revokd'", "Did you mean 'revoked'", "wrong-responder"]),
    MalformedCase(
        name: "OCSP staple for a self-signed leaf",
        yaml: replacing("  chain: [leaf-v1, lab-intermediate-a]", "  chain: [leaf-self-signed]\n  ocsp-staple: good"),
        code: .badStaple, line: 8, field: "server.ocsp-staple", mentions: ["self-signed", "remove ocsp-staple"]),
    MalformedCase(
        name: "expect-if for an unknown check",
        yaml: validScenarioYAML + "\nexpect-if:\n  reason: x\n  revocation=strict: refuse",
        code: .badConditionalExpectation, line: 19, field: "expect-if.revocation=strict",
        mentions: ["'strict' is not none, soft or hard", "revocation=hard: refuse"]),
    MalformedCase(
        name: "expect-if without a reason", yaml: validScenarioYAML + "\nexpect-if:\n  revocation=hard: refuse",
        code: .badConditionalExpectation, line: 18, field: "expect-if.reason", mentions: ["no reason", "reason:"]),
    MalformedCase(
        name: "expect-if that decides nothing",
        yaml: validScenarioYAML + "\nexpect-if:\n  reason: x\n  ct=required: accept",
        code: .badConditionalExpectation, line: 18, field: "expect-if", mentions: ["no declared check decides any cell"]
    ),
    MalformedCase(
        name: "expect-if expectation that is not one",
        yaml: validScenarioYAML + "\nexpect-if:\n  reason: x\n  revocation=soft: {none: maybe}",
        code: .badConditionalExpectation, line: 19, field: "expect-if.revocation=soft.none",
        mentions: ["'maybe'", "accept"]),
]

@Suite("Scenario files")
struct ScenarioLoaderTests {
    @Test func validScenarioParses() throws {
        let s = try ScenarioLoader.parse(yaml: validScenarioYAML, file: "scenarios/sample.yaml", expectedID: "sample")
        #expect(s.id == "sample")
        #expect(s.server.chain == ["leaf-v1", "lab-intermediate-a"])
        #expect(s.server.tlsVersions == [.tls12, .tls13])
        #expect(s.client.trust == .labRoot)
        #expect(s.client.pinned == "leaf-v1")
        #expect(s.client.backup == "leaf-v3-rekey")
        #expect(s.expectedRow == "A A A A A A")
        #expect(s.refusal == nil)
        #expect(s.client.host == "localhost")
        let other = try ScenarioLoader.parse(
            yaml: replacing("trust: lab-root", "trust: lab-root\n  host: v2.api.pinning.test"),
            file: "scenarios/sample.yaml")
        #expect(other.client.host == "v2.api.pinning.test")
        #expect(s.order == nil)
        #expect(
            try ScenarioLoader.parse(
                yaml: replacing("tags: [baseline]", "tags: [baseline]\norder: 120"),
                file: "scenarios/sample.yaml"
            ).order == 120)
    }

    /// The teaching order is each file's `order:`, then the id; scenarios without one come last. Adding a scenario
    /// is one file: nothing else lists the catalogue.
    @Test func catalogueSortsByOrderThenIDWithUnorderedLast() throws {
        func scenario(_ id: String, _ order: Int?) throws -> Scenario {
            var s = try ScenarioLoader.parse(yaml: validScenarioYAML, file: "scenarios/sample.yaml")
            s.id = id
            s.order = order
            return s
        }
        let c = Catalogue(scenarios: [
            try scenario("zeta", nil), try scenario("beta", 20), try scenario("alpha", nil),
            try scenario("gamma", 10), try scenario("delta", 20),
        ])
        #expect(c.ids == ["gamma", "beta", "delta", "alpha", "zeta"])
    }

    /// A copy of a scenario under another id is refused by the loader, naming both files: this is the check that
    /// caught `root-not-sent` repeating `baseline`.
    @Test func identicalScenariosAreRefused() throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-same-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try validScenarioYAML.write(to: dir.appendingPathComponent("sample.yaml"), atomically: true, encoding: .utf8)
        try replacing("id: sample", "id: sample-copy").replacingOccurrences(
            of: "title: A sample", with: "title: Other words"
        )
        .write(to: dir.appendingPathComponent("sample-copy.yaml"), atomically: true, encoding: .utf8)
        do {
            _ = try Catalogue.load(directory: dir, displayPrefix: "scenarios/")
            Issue.record("two identical scenarios loaded")
        } catch let e as CatalogueError {
            let e = try #require(e.errors.first { $0.code == .duplicateScenario }, "\(e)")
            #expect(e.file == "scenarios/sample.yaml" || e.file == "scenarios/sample-copy.yaml")
            #expect(e.description.contains("scenarios/sample"), "\(e)")
            #expect(e.description.contains("chain, trust"), "\(e)")
        }
        // Asking for another host name is enough to make it a scenario of its own.
        try replacing("id: sample", "id: sample-copy").replacingOccurrences(
            of: "trust: lab-root", with: "trust: lab-root\n  host: other.pinning.test"
        )
        .write(to: dir.appendingPathComponent("sample-copy.yaml"), atomically: true, encoding: .utf8)
        let c = try Catalogue.load(directory: dir)
        #expect(c.scenarios.count == 2)
        #expect(c.identicalScenarios.isEmpty)
        let copy = try #require(c["sample"])
        var twin = copy
        twin.id = "twin"
        #expect(Catalogue(scenarios: [copy, twin]).identicalScenarios == [["sample", "twin"]])
    }

    @Test(arguments: malformedCases)
    func malformedFileIsReported(_ c: MalformedCase) {
        do {
            let s = try ScenarioLoader.parse(yaml: c.yaml, file: "scenarios/sample.yaml", expectedID: "sample")
            Issue.record("parsed without error: \(s.id)")
        } catch let e as ScenarioError {
            #expect(e.code == c.code, "\(e)")
            #expect(e.file == "scenarios/sample.yaml")
            #expect(e.line == c.line, "\(e)")
            #expect(e.field == c.field, "\(e)")
            #expect(!e.fix.isEmpty, "\(e)")
            for m in c.mentions { #expect(e.description.contains(m), "\(e) should mention \(m)") }
            #expect(e.description.hasPrefix("scenarios/sample.yaml:\(c.line)"), "\(e)")
        } catch {
            Issue.record("unexpected error type: \(error)")
        }
    }

    @Test func directoryReportsEveryBrokenFileAndDuplicateIDs() throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-scen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try validScenarioYAML.write(to: dir.appendingPathComponent("sample.yaml"), atomically: true, encoding: .utf8)
        try validScenarioYAML.replacingOccurrences(of: "id: sample", with: "id: sample")
            .write(to: dir.appendingPathComponent("sample.yml"), atomically: true, encoding: .utf8)
        try replacing("lab-root\n", "nowhere\n")
            .write(to: dir.appendingPathComponent("broken.yaml"), atomically: true, encoding: .utf8)
        // The id of broken.yaml is "sample", so it fails on the id before the trust profile.
        do {
            _ = try Catalogue.load(directory: dir, displayPrefix: "scenarios/")
            Issue.record("a broken directory loaded")
        } catch let e as CatalogueError {
            let codes = e.errors.map(\.code)
            #expect(codes.contains(.idMismatch))
            #expect(codes.contains(.duplicateID))
            #expect(e.errors.first { $0.code == .duplicateID }?.description.contains("scenarios/sample.yaml") == true)
        }
    }

    @Test func emptyDirectoryIsAnError() throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: CatalogueError.self) { try Catalogue.load(directory: dir) }
    }
}

@Suite("The bundled catalogue")
struct BundledCatalogueTests {
    static let required = [
        "baseline", "renewal-same-key", "rekey", "emergency-rekey", "sibling-intermediate",
        "intermediate-renewed-same-key", "expired-leaf", "not-yet-valid-leaf", "expired-intermediate", "wrong-host",
        "self-signed-pinned-key", "untrusted-rogue", "intercepting-proxy", "chain-stuffing",
        "name-collision-intermediate", "incomplete-chain", "reversed-chain", "weak-rsa-1024", "sha1-signature",
        "non-ca-signer", "pathlen-violation", "ecdsa-p384", "rsa-2048", "rsa-4096", "ed25519",
        "mtls-required-valid", "mtls-required-missing", "mtls-required-untrusted", "mtls-required-expired",
        "mtls-required-wrong-eku", "mtls-optional-missing",
    ]

    @Test func loadsFromTheResourceBundle() throws {
        let c = try Catalogue.bundled()
        for id in Self.required { #expect(c[id] != nil, "missing scenario \(id)") }
        #expect(c.ids.first == "baseline")
        #expect(Set(c.ids).count == c.ids.count)
    }

    /// Every scenario shows something no other one does (chain, trust, versions, ciphers, client authentication,
    /// host, expected row), and every bundled scenario has its own place in the teaching order.
    @Test func noTwoScenariosAreTheSame() throws {
        let c = try Catalogue.bundled()
        #expect(c.identicalScenarios.isEmpty, "\(c.identicalScenarios)")
        let unordered = c.scenarios.filter { $0.order == nil }.map(\.id)
        #expect(unordered.isEmpty, "bundled scenarios without `order:`: \(unordered)")
        let orders = c.scenarios.compactMap(\.order)
        #expect(Set(orders).count == orders.count, "two bundled scenarios share an `order:` value")
        let baseline = try #require(c["baseline"])
        let rootNotSent = try #require(c["root-not-sent"])
        #expect(baseline.server.chain == ["leaf-v1", "lab-intermediate-a", "lab-root"])
        #expect(rootNotSent.server.chain == ["leaf-v1", "lab-intermediate-a"])
    }

    @Test func hostAwareScenariosAskForTheirHost() throws {
        let c = try Catalogue.bundled()
        #expect(c["pinned-cert-other-host"]?.client.host == "other.pinning.test")
        #expect(c["pinned-cert-other-host"]?.server.chain.first == c["pinned-cert-other-host"]?.client.pinned)
        #expect(
            c.scenarios.filter { $0.client.host != "localhost" }.map(\.id) == [
                "pinned-cert-other-host", "pin-scope-exact-host", "pin-scope-trailing-dot", "pin-scope-upper-case",
                "pin-scope-subdomain-included", "pin-scope-subdomain-excluded", "pin-scope-unpinned-host",
                "pins-for-other-host", "resumption-after-unpinned-handshake", "resumption-cross-host",
                "h2-coalescing-pinned-host", "early-data-to-interceptor", "ech-accepted", "ech-rejected-retry-configs",
                "ech-rejected-public-name",
                "ech-rejected-rogue-public-cert", "ech-rejected-expired-public-cert",
                "ech-rejected-public-cert-pinned-key", "ech-rejected-interceptor-inner-name",
            ])
        // The pin-scope rows: the pins apply exactly where the declared scope covers the host asked for.
        let applies = c.scenarios.filter { $0.client.pinScope != nil }.map { "\($0.id) \($0.client.pinsApply)" }
        #expect(
            applies == [
                "pin-scope-exact-host true", "pin-scope-trailing-dot true", "pin-scope-upper-case true",
                "pin-scope-subdomain-included true", "pin-scope-subdomain-excluded false",
                "pin-scope-unpinned-host false",
                "pins-for-other-host false", "resumption-cross-host true", "h2-coalescing-pinned-host true",
            ])
        // The spellings are kept as written (the client asks for them) and normalised only to match the scope.
        #expect(c["pin-scope-trailing-dot"]?.client.host == "api.pinning.test.")
        #expect(c["pin-scope-upper-case"]?.client.host == "API.Pinning.Test")
        #expect(
            c["pin-scope-subdomain-included"]?.client.pinScope
                == PinScope(domain: "api.pinning.test", includeSubdomains: true))
    }

    /// DESIGN.md's canonical expectations, in `PinProfile.all` order (none, leaf-cert, leaf-spki,
    /// leaf-spki+backup, intermediate-spki, root-spki).
    @Test(arguments: [
        ("baseline", "A A A A A A"),
        ("renewal-same-key", "A X A A A A"),
        ("rekey", "A X X A A A"),
        ("emergency-rekey", "A X X X A A"),
        ("intermediate-renewed-same-key", "A A A A A A"),
        ("sibling-intermediate", "A X A A X A"),
        ("expired-leaf", "X X X X X X"),
        ("not-yet-valid-leaf", "X X X X X X"),
        ("wrong-host", "X X X X X X"),
        ("untrusted-rogue", "X X X X X X"),
        ("intercepting-proxy", "A X X X X X"),
        ("chain-stuffing", "A X X X X X"),
        ("name-collision-intermediate", "A X X X X X"),
        ("root-not-sent", "A A A A A A"),
        ("incomplete-chain", "X X X X X X"),
        ("reversed-chain", "A A A A A A"),
        ("weak-rsa-1024", "X X X X X X"),
        ("sha1-signature", "X X X X X X"),
        ("mtls-required-valid", "A A A A A A"),
        ("mtls-required-missing", "X X X X X X"),
        ("mtls-optional-missing", "A A A A A A"),
        ("pinned-cert-other-host", "X X X X X X"),
        ("name-collision-root", "A X X X X X"),
        ("tls-v1-1", "X X X X X X"),
        ("tls-v1-2-no-forward-secrecy", "X X X X X X"),
        ("ats-floor", "A A A A A A"),
        ("pin-scope-exact-host", "A X X X X X"),
        ("pin-scope-subdomain-included", "A X X X X X"),
        ("pin-scope-subdomain-excluded", "A A A A A A"),
        ("pin-scope-unpinned-host", "A A A A A A"),
        ("pin-scope-trailing-dot", "A X X X X X"),
        ("pin-scope-upper-case", "A X X X X X"),
        ("pins-for-other-host", "A A A A A A"),
    ])
    func matchesTheDesignTable(id: String, row: String) throws {
        let s = try #require(try Catalogue.bundled()[id])
        #expect(s.expectedRow == row)
    }

    @Test func everyScenarioThatRefusesSaysWhy() throws {
        for s in try Catalogue.bundled().scenarios where s.expectations.values.contains(.refuse) {
            #expect(s.refusal != nil, "\(s.id) expects refusals but names no refusal category")
        }
        #expect(try Catalogue.bundled()["wrong-host"]?.refusal == .hostname)
        #expect(try Catalogue.bundled()["pinned-cert-other-host"]?.refusal == .hostname)
        #expect(try Catalogue.bundled()["name-collision-root"]?.refusal == .pinMismatch)
        #expect(try Catalogue.bundled()["tls-v1-2-no-forward-secrecy"]?.refusal == .protocolError)
        #expect(try Catalogue.bundled()["mtls-required-missing"]?.refusal == .clientAuth)
    }

    /// The cells a platform's policy decides and the cells where verifiers legitimately differ, as the catalogue
    /// states them (the Catalogue article, "Platform policies" and "Verifier variance").
    @Test func platformPoliciesAndVarianceOfTheCatalogue() throws {
        let c = try Catalogue.bundled()
        #expect(
            c.scenarios.filter { $0.policy != nil }.map(\.id) == [
                "weak-rsa-1024", "sha1-signature", "tls-v1-2-no-forward-secrecy",
            ])
        #expect(
            c.scenarios.filter { !$0.variance.isEmpty }.map(\.id) == [
                "root-rollover-new-root-trusted", "intermediate-as-trust-anchor",
                "root-rollover-new-root-trusted-gen-y", "name-collision-root", "ats-floor", "ed25519",
                "ech-rejected-interceptor-inner-name",
            ])
        #expect(
            c.scenarios.filter { !$0.pathVariance.isEmpty }.map(\.id) == [
                "root-rollover-new-root-trusted", "root-rollover-new-root-trusted-gen-y",
            ])
        let rsa = try #require(c["tls-v1-2-no-forward-secrecy"])
        for p in PinProfile.all {
            #expect(rsa.expected(p) == .refuse, "no platform named: the strict row, as before")
            #expect(rsa.expected(p, platform: .ats) == .refuse && rsa.expected(p, platform: .jdk) == .refuse)
            #expect(
                rsa.expected(p, platform: .opensslDefault) == .accept && rsa.expected(p, platform: .android) == .accept)
            #expect(rsa.decidedByPolicy(p))
        }
        let weak = try #require(c["weak-rsa-1024"])
        #expect(weak.expected(.leafSPKI, platform: .jdk) == .accept)
        #expect(
            weak.expected(.leafSPKI, platform: .android) == .refuse,
            "a platform the policy does not list follows expect")
        let collision = try #require(c["name-collision-root"])
        #expect(collision.variance.keys.sorted() == [.none])
        #expect(collision.rule(.none, platform: nil).variance?.contains("GnuTLS") == true)
        #expect(!collision.decidedByPolicy(.none))
        // A run that names no platform judges by expect; the rule names the platforms that differ.
        let rule = rsa.rule(.none, platform: nil)
        #expect(rule.policyReason != nil && rule.otherPlatforms == [.android, .opensslDefault])
    }

    @Test func reversedChainKeepsTheLeafFirst() throws {
        let s = try #require(try Catalogue.bundled()["reversed-chain"])
        #expect(s.server.chain.first == "leaf-v1")
        #expect(s.server.chain == ["leaf-v1", "lab-root", "lab-intermediate-a"])
    }

    @Test func mutualTLSScenariosPresentWhatTheirNameSays() throws {
        let c = try Catalogue.bundled()
        #expect(c["mtls-required-valid"]?.client.present == "client-valid")
        #expect(c["mtls-required-missing"]?.client.present == nil)
        #expect(c["mtls-required-untrusted"]?.client.present == "client-untrusted")
        #expect(c["mtls-required-expired"]?.client.present == "client-expired")
        #expect(c["mtls-required-wrong-eku"]?.client.present == "client-wrong-eku")
        #expect(c["mtls-optional-missing"]?.server.clientAuth == .optional)
    }
}

@Suite("Documentation generated from the catalogue")
struct CatalogueDocumentationTests {
    /// The Catalogue article's table is the catalogue: regenerate it with
    /// `pinlab scenarios list --format markdown` when a scenario changes.
    @Test func catalogueArticleTableMatchesTheScenarioFiles() throws {
        let article = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/PinningLab/PinningLab.docc/Catalogue.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let begin = try #require(text.range(of: "<!-- BEGIN GENERATED TABLE -->\n"))
        let end = try #require(text.range(of: "<!-- END GENERATED TABLE -->"))
        let table = String(text[begin.upperBound..<end.lowerBound])
        #expect(
            table == (try Catalogue.bundled().markdownTable()),
            "regenerate the table in Catalogue.md with `pinlab scenarios list --format markdown`")
    }
}
