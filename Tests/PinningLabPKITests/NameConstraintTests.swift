// Why the lab root is safe to install on a device, judged by `openssl verify`: a certificate that an attacker
// holding a lab CA key could issue for a real-world name or address must fail, and the lab's own names must pass.
// The FAQ ("Is it safe to install the lab root?") quotes these cases.
import Foundation
import PinningLab
import Testing

/// The built-in spec plus certificates an attacker holding `lab-intermediate-a`'s key could issue.
private let attackerEntities = """

      attacker-example-com:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [www.example.com]
      attacker-bank-address:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [203.0.113.7]
      attacker-localhost-suffix:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [localhost.example.com]
      attacker-test-suffix:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [pinning.test.example.com]
      lab-sub-test:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [v2.api.pinning.test, a.localhost]
      lab-loopback-address:
        role: leaf
        issuer: lab-intermediate-a
        hosts: [localhost, 127.0.0.1]

    """

private enum AttackerPKI {
    static let directory = temporaryDirectory("attacker-pki")
    static let pki: Result<LabPKI, any Error> = Result {
        let text = try String(contentsOf: Lab.builtInSpecURL, encoding: .utf8) + attackerEntities
        let spec = try PKISpec.parse(yaml: text, file: "lab.yaml+attackers")
        return try Lab.pki(spec: spec, options: Lab.libraryPKIOptions(directory: directory))
    }
}

struct NameConstraintCase: CustomTestStringConvertible, Sendable {
    var name: String
    var check: [String]
    /// nil: OK; otherwise the OpenSSL error number.
    var error: Int?
    var why: String
    var testDescription: String {
        "\(name) \(check.joined(separator: " ")) → \(error.map { "error \($0)" } ?? "OK"): \(why)"
    }
}

let nameConstraintCases: [NameConstraintCase] = [
    .init(
        name: "attacker-example-com", check: ["-verify_hostname", "www.example.com"], error: 47,
        why: "a real-world DNS name is outside the permitted subtrees"),
    .init(
        name: "attacker-bank-address", check: ["-verify_ip", "203.0.113.7"], error: 47,
        why: "a real-world address is outside 127.0.0.0/8 and ::1"),
    .init(
        name: "attacker-localhost-suffix", check: ["-verify_hostname", "localhost.example.com"], error: 47,
        why: "'localhost' permits localhost and its subdomains, not names that merely start with it"),
    .init(
        name: "attacker-test-suffix", check: ["-verify_hostname", "pinning.test.example.com"], error: 47,
        why: "'test' permits the .test TLD, not names that contain it"),
    .init(
        name: "lab-sub-test", check: ["-verify_hostname", "v2.api.pinning.test"], error: nil,
        why: "subdomains of .test are permitted"),
    .init(
        name: "lab-sub-test", check: ["-verify_hostname", "a.localhost"], error: nil,
        why: "subdomains of localhost are permitted"),
    .init(
        name: "lab-loopback-address", check: ["-verify_ip", "127.0.0.1"], error: nil,
        why: "OpenSSL implements address constraints (BoringSSL refuses this one: see the compatibility matrix)"),
]

@Suite("The lab root's name constraints, judged by openssl verify")
struct NameConstraintTests {
    @Test("lab-root permits localhost, .test and loopback only")
    func rootConstraints() async throws {
        let pki = try AttackerPKI.pki.get()
        let dir = temporaryDirectory("nc-root")
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = dir.appendingPathComponent("root.pem").path
        try pem(try pki.identity("lab-root").certificateDER).write(toFile: root, atomically: true, encoding: .utf8)
        let r = try await run(["openssl", "x509", "-in", root, "-noout", "-ext", "nameConstraints"])
        #expect(r.status == 0, "\(r.output)")
        let permitted = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(permitted.contains("DNS:localhost") && permitted.contains("DNS:test"), "\(r.stdout)")
        #expect(permitted.contains("IP:127.0.0.0/255.0.0.0"), "\(r.stdout)")
        #expect(
            !r.stdout.contains("DNS:."), "leading-dot DNS constraints are read differently by verifiers: \(r.stdout)")
        #expect(r.stdout.contains("critical"), "\(r.stdout)")
    }

    @Test(
        "the lab's own leaves name no IP address",
        arguments: ["leaf-v1", "leaf-v2-renewal", "leaf-v3-rekey", "proxy-leaf"])
    func noAddressSANs(_ name: String) async throws {
        let pki = try AttackerPKI.pki.get()
        let dir = temporaryDirectory("nc-san")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try ChainFiles(try pki.identity(name), in: dir)
        let r = try await run(["openssl", "x509", "-in", files.cert, "-noout", "-ext", "subjectAltName"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("DNS:localhost"), "\(r.stdout)")
        #expect(!r.stdout.contains("IP Address"), "\(r.stdout)")
    }

    @Test(arguments: nameConstraintCases)
    func verify(_ c: NameConstraintCase) async throws {
        let pki = try AttackerPKI.pki.get()
        let dir = temporaryDirectory("nc")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try ChainFiles(try pki.identity(c.name), in: dir)
        let root = dir.appendingPathComponent("root.pem").path
        try pem(try pki.identity("lab-root").certificateDER).write(toFile: root, atomically: true, encoding: .utf8)
        let r = try await run(
            ["openssl", "verify", "-CAfile", root, "-untrusted", files.untrusted] + c.check + [files.cert])
        if let code = c.error {
            #expect(r.status != 0, "\(r.output)")
            #expect(r.output.contains("error \(code) "), "expected OpenSSL error \(code), got: \(r.output)")
        } else {
            #expect(r.status == 0 && r.stdout.contains(": OK"), "\(r.output)")
        }
    }
}
