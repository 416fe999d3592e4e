import Foundation
import PinningLab
import Testing

/// A malformed spec and the error it must produce.
struct BadSpec: CustomTestStringConvertible, Sendable {
    var label: String
    var yaml: String
    var code: PKIError.Code
    var line: Int?
    var entity: String?
    var field: String?
    var testDescription: String { label }
}

private let okRoot = "version: 1\nentities:\n  root: { role: root }\n"

let badSpecs: [BadSpec] = [
    .init(label: "YAML syntax", yaml: "version: 1\nentities:\n  root: { role: root\n", code: .yamlSyntax, line: 4),
    .init(label: "empty file", yaml: "", code: .missingField, field: "entities"),
    .init(label: "top level is a list", yaml: "- a\n- b\n", code: .wrongType),
    .init(label: "no entities", yaml: "version: 1\n", code: .missingField, field: "entities"),
    .init(
        label: "unknown top-level field", yaml: okRoot + "entitys: {}\n", code: .unknownField, line: 4, field: "entitys"
    ),
    .init(
        label: "unsupported version", yaml: "version: 2\nentities:\n  root: { role: root }\n",
        code: .unsupportedVersion, line: 1),
    .init(
        label: "missing role", yaml: okRoot + "  leaf: { issuer: root }\n", code: .missingField, line: 4,
        entity: "leaf", field: "role"),
    .init(
        label: "unknown role", yaml: okRoot + "  leaf: { role: server, issuer: root }\n", code: .unknownRole, line: 4,
        entity: "leaf", field: "role"),
    .init(
        label: "unknown issuer", yaml: okRoot + "  leaf:\n    role: leaf\n    issuer: rot\n", code: .unknownIssuer,
        line: 6, entity: "leaf", field: "issuer"),
    .init(
        label: "missing issuer", yaml: okRoot + "  leaf: { role: leaf }\n", code: .missingField, line: 4,
        entity: "leaf", field: "issuer"),
    .init(
        label: "issuer cycle",
        yaml: okRoot + "  a: { role: intermediate, issuer: b }\n  b: { role: intermediate, issuer: a }\n",
        code: .issuerCycle, entity: "a", field: "issuer"),
    .init(
        label: "twinOf cycle",
        yaml: "version: 1\nentities:\n  a: { role: root, twinOf: b }\n  b: { role: root, twinOf: a }\n",
        code: .issuerCycle, line: 3, entity: "a", field: "twinOf"),
    .init(
        label: "root with issuer", yaml: okRoot + "  r2: { role: root, issuer: root }\n", code: .rootWithIssuer,
        line: 4, entity: "r2", field: "issuer"),
    .init(
        label: "bad duration",
        yaml: okRoot
            + "  leaf:\n    role: leaf\n    issuer: root\n    validity: { notBefore: -1h, notAfter: 30 days }\n",
        code: .badDuration, line: 7, entity: "leaf", field: "validity.notAfter"),
    .init(
        label: "bad unit",
        yaml: okRoot + "  leaf: { role: leaf, issuer: root, validity: { notBefore: -1x, notAfter: +1d } }\n",
        code: .badDuration, entity: "leaf", field: "validity.notBefore"),
    .init(
        label: "notAfter before notBefore",
        yaml: okRoot + "  leaf: { role: leaf, issuer: root, validity: { notBefore: +2d, notAfter: +1d } }\n",
        code: .emptyValidity, entity: "leaf", field: "validity"),
    .init(
        label: "leaf marked CA", yaml: okRoot + "  leaf:\n    role: leaf\n    issuer: root\n    ca: true\n",
        code: .leafMarkedCA, line: 7, entity: "leaf", field: "ca"),
    .init(
        label: "path length on a leaf", yaml: okRoot + "  leaf: { role: leaf, issuer: root, pathLength: 1 }\n",
        code: .pathLengthOnLeaf, entity: "leaf", field: "pathLength"),
    .init(
        label: "unknown key type", yaml: okRoot + "  leaf: { role: leaf, issuer: root, keyType: rsa512 }\n",
        code: .unknownKeyType, entity: "leaf", field: "keyType"),
    .init(
        label: "unknown key type in keys", yaml: "version: 1\nkeys:\n  K1: dsa\nentities:\n  root: { role: root }\n",
        code: .unknownKeyType, line: 3, entity: "K1"),
    .init(
        label: "unknown key name", yaml: okRoot + "  leaf: { role: leaf, issuer: root, key: K9 }\n", code: .unknownKey,
        entity: "leaf", field: "key"),
    .init(
        label: "key type conflict",
        yaml:
            "version: 1\nkeys: { K1: p256 }\nentities:\n  root: { role: root }\n  leaf: { role: leaf, issuer: root, key: K1, keyType: rsa2048 }\n",
        code: .keyTypeConflict, entity: "leaf", field: "keyType"),
    .init(
        label: "bad host", yaml: okRoot + "  leaf: { role: leaf, issuer: root, hosts: [\"bad host!\"] }\n",
        code: .badHost, entity: "leaf", field: "hosts"),
    .init(
        label: "scope on a leaf", yaml: okRoot + "  leaf: { role: leaf, issuer: root, scope: [api.example.com] }\n",
        code: .badScope, entity: "leaf", field: "scope"),
    .init(
        label: "scope and nameConstraints",
        yaml:
            "version: 1\nentities:\n  root: { role: root, scope: [api.example.com], nameConstraints: { permitted: [example.com] } }\n",
        code: .badScope, entity: "root", field: "scope"),
    .init(
        label: "bad IP range",
        yaml: "version: 1\nentities:\n  root: { role: root, nameConstraints: { permitted: [127.0.0.0/33] } }\n",
        code: .badNameConstraint, entity: "root", field: "nameConstraints.permitted"),
    .init(
        label: "unknown usage", yaml: okRoot + "  leaf: { role: leaf, issuer: root, usages: [serverAuthentication] }\n",
        code: .unknownUsage, entity: "leaf", field: "usages"),
    .init(
        label: "SHA-1 from an EC issuer", yaml: okRoot + "  leaf: { role: leaf, issuer: root, signature: sha1 }\n",
        code: .unsupportedSignature, entity: "leaf", field: "signature"),
    .init(
        label: "unknown signature", yaml: okRoot + "  leaf: { role: leaf, issuer: root, signature: md5 }\n",
        code: .unsupportedSignature, entity: "leaf", field: "signature"),
    .init(
        label: "twin of nothing", yaml: okRoot + "  twin: { role: intermediate, issuer: root, twinOf: ghost }\n",
        code: .badTwin, entity: "twin", field: "twinOf"),
    .init(
        label: "twin of a leaf",
        yaml: okRoot
            + "  leaf: { role: leaf, issuer: root }\n  twin: { role: intermediate, issuer: root, twinOf: leaf }\n",
        code: .badTwin, entity: "twin", field: "twinOf"),
    .init(
        label: "unknown subject attribute",
        yaml: okRoot + "  leaf: { role: leaf, issuer: root, subject: { CommonName: x } }\n",
        code: .unknownSubjectAttribute, entity: "leaf", field: "subject.CommonName"),
    .init(
        label: "misspelt entity field", yaml: okRoot + "  leaf: { role: leaf, isuer: root }\n", code: .unknownField,
        entity: "leaf", field: "isuer"),
    .init(
        label: "list where a value belongs", yaml: okRoot + "  leaf: { role: [leaf], issuer: root }\n",
        code: .wrongType, entity: "leaf", field: "role"),
    .init(label: "duplicate entity", yaml: okRoot + "  root: { role: root }\n", code: .duplicateName),
    .init(
        label: "bad entity name", yaml: okRoot + "  \"leaf one\": { role: leaf, issuer: root }\n", code: .badName,
        line: 4),
    .init(
        label: "name shared by key and entity",
        yaml: "version: 1\nkeys: { root: p256 }\nentities:\n  root: { role: root }\n", code: .duplicateName,
        entity: "root"),
    .init(
        label: "SCT from a log that is not in ctLogs",
        yaml:
            "version: 1\nctLogs:\n  log-a: {}\nentities:\n  root: { role: root }\n  leaf: { role: leaf, issuer: root, scts: [log-b] }\n",
        code: .badSCT, line: 6, entity: "leaf", field: "scts"),
    .init(
        label: "SCTs on a CA",
        yaml: "version: 1\nctLogs:\n  log-a: {}\nentities:\n  root: { role: root, tlsSCTs: [log-a] }\n", code: .badSCT,
        entity: "root", field: "tlsSCTs"),
    .init(
        label: "unknown SCT signature",
        yaml:
            "version: 1\nctLogs:\n  log-a: {}\nentities:\n  root: { role: root }\n  leaf: { role: leaf, issuer: root, scts: [{ log: log-a, signature: forged }] }\n",
        code: .badSCT, entity: "leaf", field: "scts.signature"),
    .init(
        label: "CT log named like an entity",
        yaml: "version: 1\nctLogs:\n  root: {}\nentities:\n  root: { role: root }\n", code: .duplicateName, line: 3,
        entity: "root"),
    .init(
        label: "CT log URL without https",
        yaml: "version: 1\nctLogs:\n  log-a: { url: \"http://ct.pinning.test/\" }\nentities:\n  root: { role: root }\n",
        code: .badCTLog, entity: "log-a", field: "url"),
    .init(
        label: "CT log MMD not a number",
        yaml: "version: 1\nctLogs:\n  log-a: { mmd: a day }\nentities:\n  root: { role: root }\n", code: .badCTLog,
        entity: "log-a", field: "mmd"),
    .init(
        label: "hosts on a CA", yaml: okRoot + "  int: { role: intermediate, issuer: root, hosts: [localhost] }\n",
        code: .unknownField, entity: "int", field: "hosts"),
]

@Suite("Malformed PKI specs")
struct SpecErrorTests {
    @Test(arguments: badSpecs)
    func specificError(_ bad: BadSpec) throws {
        let e = #expect(throws: PKIError.self) { try PKISpec.parse(yaml: bad.yaml, file: "bad.yaml") }
        guard let e else { return }
        #expect(e.code == bad.code, "got \(e)")
        #expect(e.file == "bad.yaml")
        if let line = bad.line { #expect(e.line == line, "got \(e)") }
        if let entity = bad.entity { #expect(e.entity == entity, "got \(e)") }
        if let field = bad.field { #expect(e.field == field, "got \(e)") }
        #expect(e.description.hasPrefix("bad.yaml"), "the message names the file: \(e)")
        #expect(
            e.fix != nil || e.code == .duplicateName || e.code == .wrongType, "the message says how to fix it: \(e)")
    }

    /// Every error code the spec parser raises (read from its source: `fail(.code, …` and `PKIError(.code, …`) has a
    /// malformed spec above that produces it; a new check without a case fails here.
    @Test func everyErrorTheParserRaisesHasACase() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/PinningLabPKI")
        var raised: Set<String> = []
        for file in ["SpecParser.swift", "Spec.swift", "SpecNames.swift", "SpecParts.swift"] {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            // `fail(.code,` or, as swift-format wraps a long call, `fail(` and `.code,` on the next line.
            for m in text.matches(of: /(?:fail|PKIError)\(\s*\.([a-zA-Z]+),/) { raised.insert(String(m.1)) }
        }
        #expect(raised.count >= 10, "the parser's error calls were found: \(raised.sorted())")
        func camel(_ raw: String) -> String {
            let parts = raw.split(separator: "-")
            return parts.first.map(String.init)!
                + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        }
        // Raised on the file, not on its YAML: unreadableFile() covers it (a missing file, a file not UTF-8).
        let covered = Set(badSpecs.map { camel($0.code.rawValue) } + ["fileUnreadable"])
        // Case-insensitive: `leaf-marked-ca` is `leafMarkedCA` in Swift.
        let missing = raised.filter { name in !covered.contains { $0.lowercased() == name.lowercased() } }
        #expect(missing.isEmpty, "spec errors raised by the parser without a malformed-spec case: \(missing.sorted())")
    }

    @Test func didYouMean() throws {
        let e = #expect(throws: PKIError.self) {
            try PKISpec.parse(yaml: okRoot + "  leaf: { role: leaf, issuer: rooot }\n", file: "x.yaml")
        }
        #expect(e?.description.contains("did you mean 'root'?") == true, "\(String(describing: e))")
    }

    @Test func unreadableFile() throws {
        let e = #expect(throws: PKIError.self) {
            try PKISpec.load(contentsOf: URL(fileURLWithPath: "/nonexistent/lab.yaml"))
        }
        #expect(e?.code == .fileUnreadable && e?.file == "/nonexistent/lab.yaml")
        // Latin-1 saved by an editor: the line of the first byte that is not UTF-8, not "check the path".
        let latin = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pinlab-latin1-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: latin) }
        try Data("version: 1\nentities:\n  r:\n    role: root\n    description: \"caf".utf8 + [0xE9] + "\"\n".utf8)
            .write(to: latin)
        let l = #expect(throws: PKIError.self) { try PKISpec.load(contentsOf: latin) }
        #expect(
            l?.code == .fileUnreadable && l?.line == 5 && l!.description.contains("not UTF-8")
                && l!.description.contains("save the file as UTF-8"),
            "\(String(describing: l))")
    }

    @Test func builtInSpecIsComplete() throws {
        let spec = try Lab.builtInSpec()
        let required = [
            "lab-root", "lab-intermediate-a", "lab-intermediate-b", "lab-intermediate-a-renewed",
            "lab-intermediate-expired",
            "leaf-v1", "leaf-v2-renewal", "leaf-v3-rekey", "leaf-emergency-rekey", "leaf-from-intermediate-b",
            "leaf-expired", "leaf-not-yet-valid", "leaf-wrong-host", "leaf-self-signed", "leaf-weak-rsa-1024",
            "leaf-sha1", "leaf-non-ca-signer", "leaf-pathlen-violation", "leaf-p384", "leaf-rsa-2048", "leaf-rsa-3072",
            "leaf-rsa-4096", "leaf-ed25519", "proxy-root", "proxy-leaf", "rogue-root", "rogue-leaf",
            "twin-intermediate-a", "twin-leaf", "client-ca", "client-valid", "client-expired", "client-untrusted",
            "client-wrong-eku",
        ]
        for n in required { #expect(spec.entity(n) != nil, "\(n)") }
        // Issuers come before what they issue.
        var seen = Set<String>()
        for e in spec.entities {
            #expect(e.isSelfSigned || seen.contains(e.issuer), "\(e.name)")
            seen.insert(e.name)
        }
    }

    @Test(arguments: [
        ("-1h", -3600), ("+30d", 2_592_000), ("now", 0), ("-1d12h", -129_600), ("+1w", 604_800), ("+1y", 31_536_000),
        ("-1000y", -31_536_000_000),
    ])
    func relativeTimes(_ text: String, _ seconds: Int64) {
        #expect(RelativeTime(parsing: text)?.seconds == seconds)
    }

    // Past 1000 years (a certificate's dates stop at 9999; the sum of many terms overflowed Int64, a trap).
    @Test(arguments: [
        "", "1h", "+", "+h", "+1", "-1x", "+1h2", "soon", "+9000y", "+1000y1s", "+1000001d",
        "+" + String(repeating: "999999y", count: 3000),
    ])
    func badRelativeTimes(_ text: String) {
        #expect(RelativeTime(parsing: text) == nil)
    }
}
