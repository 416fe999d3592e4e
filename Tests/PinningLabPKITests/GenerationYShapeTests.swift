import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The built-in PKI's Generation-Y-shaped identities (`lab-root-yr`, its cross-certificate, `lab-yr1`…`lab-yr3`, the
/// 45-day leaves), read back from the issued certificates by `openssl x509` — not from the spec that asked for them —
/// so that the catalogue's "shaped like Let's Encrypt Generation Y" is a claim that can fail.
@Suite("Generation Y's shape, read from the issued certificates")
struct GenerationYShapeTests {
    /// What `openssl x509` reads from one issued certificate.
    struct Read {
        var subject: String
        var issuer: String
        var notBefore: Date
        var notAfter: Date
        /// The `-text` lines of the key: `Public Key Algorithm: rsaEncryption`, `Public-Key: (4096 bit)`.
        var keyAlgorithm: String
        var keyBits: Int
        /// The extended key usages as OpenSSL names them (`TLS Web Server Authentication`); empty: no extension.
        var usages: [String]
        var basicConstraints: String
        var nameConstraints: String
        /// The SubjectPublicKeyInfo, PEM.
        var publicKey: String
    }

    static func read(_ name: String, in dir: URL) async throws -> Read {
        let pki = try await SharedPKI.pki()
        let path = dir.appendingPathComponent("\(name).pem").path
        try pem(try pki.identity(name).certificateDER).write(toFile: path, atomically: true, encoding: .utf8)
        let fields = try await run([
            "openssl", "x509", "-in", path, "-noout", "-subject", "-issuer", "-dates", "-dateopt", "iso_8601",
            "-nameopt", "RFC2253", "-ext", "extendedKeyUsage,basicConstraints,nameConstraints",
        ])
        try #require(fields.status == 0, "\(fields.output)")
        let text = try await run(["openssl", "x509", "-in", path, "-noout", "-text"])
        try #require(text.status == 0, "\(text.output)")
        let key = try await run(["openssl", "x509", "-in", path, "-noout", "-pubkey"])
        try #require(key.status == 0, "\(key.output)")

        let lines = fields.stdout.split(separator: "\n").map { String($0) }
        func value(_ prefix: String) throws -> String {
            let line = try #require(lines.first { $0.hasPrefix(prefix) }, "no \(prefix) in \(fields.stdout)")
            return String(line.dropFirst(prefix.count))
        }
        /// The indented lines below an extension's heading.
        func block(_ heading: String) -> String {
            guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { return "" }
            return lines[(start + 1)...].prefix { $0.hasPrefix(" ") }
                .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
        }
        func date(_ prefix: String) throws -> Date {
            let text = try value(prefix)
            return try #require(
                ISO8601DateFormatter().date(from: text.replacingOccurrences(of: " ", with: "T")), "\(text)")
        }
        let textLines = text.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let algorithm = try #require(textLines.first { $0.hasPrefix("Public Key Algorithm: ") })
        let bitsLine = try #require(textLines.first { $0.hasPrefix("Public-Key: (") }, "\(text.stdout)")
        let bits = try #require(Int(bitsLine.dropFirst("Public-Key: (".count).prefix { $0.isNumber }))
        let eku = block("X509v3 Extended Key Usage")
        return Read(
            subject: try value("subject="), issuer: try value("issuer="), notBefore: try date("notBefore="),
            notAfter: try date("notAfter="), keyAlgorithm: String(algorithm.dropFirst("Public Key Algorithm: ".count)),
            keyBits: bits,
            usages: eku.isEmpty ? [] : eku.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) },
            basicConstraints: block("X509v3 Basic Constraints"), nameConstraints: block("X509v3 Name Constraints"),
            publicKey: key.stdout)
    }

    static let serverAuth = "TLS Web Server Authentication"
    static let clientAuth = "TLS Web Client Authentication"

    @Test("YR is a self-signed RSA-4096 root, name-constrained like lab-root")
    func theRoot() async throws {
        let dir = temporaryDirectory("geny-root")
        defer { try? FileManager.default.removeItem(at: dir) }
        let yr = try await Self.read("lab-root-yr", in: dir)
        #expect(yr.keyAlgorithm == "rsaEncryption" && yr.keyBits == 4096, "\(yr.keyAlgorithm) \(yr.keyBits)")
        #expect(yr.subject == yr.issuer, "a root signs itself")
        #expect(yr.subject.contains("CN=PinningLab YR"), "\(yr.subject)")
        #expect(yr.basicConstraints.contains("CA:TRUE"))
        let x1 = try await Self.read("lab-root", in: dir)
        #expect(!x1.nameConstraints.isEmpty)
        #expect(yr.nameConstraints == x1.nameConstraints, "the lab roots' name constraints hold for YR")
    }

    @Test("The cross-certificate is YR's name and key, issued by lab-root (X1's place)")
    func theCrossSign() async throws {
        let dir = temporaryDirectory("geny-cross")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cross = try await Self.read("lab-root-yr-cross", in: dir)
        let yr = try await Self.read("lab-root-yr", in: dir)
        let x1 = try await Self.read("lab-root", in: dir)
        #expect(cross.issuer == x1.subject, "\(cross.issuer)")
        #expect(cross.issuer != cross.subject)
        #expect(cross.subject == yr.subject, "\(cross.subject)")
        #expect(cross.publicKey == yr.publicKey, "the cross-certificate certifies YR's own key")
        #expect(cross.keyBits == 4096)
        #expect(cross.basicConstraints.contains("CA:TRUE"))
        #expect(cross.nameConstraints == x1.nameConstraints)
    }

    @Test(
        "YR1–YR3 are RSA-2048 issuing CAs under YR with the serverAuth EKU alone",
        arguments: ["lab-yr1", "lab-yr2", "lab-yr3"])
    func thePool(_ name: String) async throws {
        let dir = temporaryDirectory("geny-pool")
        defer { try? FileManager.default.removeItem(at: dir) }
        let ca = try await Self.read(name, in: dir)
        let yr = try await Self.read("lab-root-yr", in: dir)
        #expect(ca.keyAlgorithm == "rsaEncryption" && ca.keyBits == 2048, "\(ca.keyAlgorithm) \(ca.keyBits)")
        #expect(ca.issuer == yr.subject, "\(ca.issuer)")
        #expect(ca.usages == [Self.serverAuth], "\(ca.usages)")
        #expect(!ca.usages.contains(Self.clientAuth), "Generation Y dropped the clientAuth EKU")
        #expect(ca.basicConstraints.contains("CA:TRUE") && ca.basicConstraints.contains("pathlen:0"))
        #expect(ca.subject.contains("CN=PinningLab \(name.dropFirst("lab-".count).uppercased())"), "\(ca.subject)")
    }

    @Test(
        "The leaves last 45 days (the tlsserver profile) and carry the lab's pinned keys",
        arguments: [("leaf-yr1", "lab-yr1", "leaf-v1"), ("leaf-yr2-rekey", "lab-yr2", "leaf-v3-rekey")])
    func theLeaves(_ name: String, _ issuer: String, _ sameKeyAs: String) async throws {
        let dir = temporaryDirectory("geny-leaf")
        defer { try? FileManager.default.removeItem(at: dir) }
        let leaf = try await Self.read(name, in: dir)
        let ca = try await Self.read(issuer, in: dir)
        let keyTwin = try await Self.read(sameKeyAs, in: dir)
        #expect(leaf.notAfter.timeIntervalSince(leaf.notBefore) == 45 * 86_400, "\(leaf.notBefore) – \(leaf.notAfter)")
        #expect(leaf.notBefore < Date() && Date() < leaf.notAfter, "valid now: issued fresh")
        #expect(leaf.issuer == ca.subject, "\(leaf.issuer)")
        #expect(leaf.basicConstraints.contains("CA:FALSE"))
        #expect(leaf.usages.contains(Self.serverAuth) && !leaf.usages.contains(Self.clientAuth), "\(leaf.usages)")
        #expect(leaf.publicKey == keyTwin.publicKey, "\(name) certifies \(sameKeyAs)'s key")
    }

    /// Which anchor ends the path: with lab-root alone trusted the leaf verifies only through the cross-certificate,
    /// and OpenSSL's path then ends at lab-root; with both roots trusted (trusted-first) it ends at lab-root-yr.
    @Test("The chain verifies to lab-root through the cross-sign, and to YR where YR is trusted")
    func theAnchor() async throws {
        let pki = try await SharedPKI.pki()
        let dir = temporaryDirectory("geny-verify")
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ ids: [String]) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try ids.map { pem(try pki.identity($0).certificateDER) }.joined()
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let leaf = try file("leaf.pem", ["leaf-yr1"])
        let x1 = try file("x1.pem", ["lab-root"])
        let both = try file("both.pem", ["lab-root", "lab-root-yr"])
        let sent = try file("sent.pem", ["lab-yr1", "lab-root-yr-cross"])
        let noCross = try file("no-cross.pem", ["lab-yr1"])
        func verify(_ ca: String, _ untrusted: String) async throws -> Run {
            try await run([
                "openssl", "verify", "-show_chain", "-purpose", "sslserver", "-verify_hostname", "localhost",
                "-CAfile", ca, "-untrusted", untrusted, leaf,
            ])
        }
        let viaCross = try await verify(x1, sent)
        #expect(viaCross.status == 0, "\(viaCross.output)")
        // `-show_chain` lists the path leaf first; its last line is the trust anchor, the only one not "(untrusted)".
        let viaCrossAnchor = viaCross.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            viaCrossAnchor.contains("CN = PinningLab Root CA") && !viaCrossAnchor.contains("untrusted"),
            "\(viaCross.output)")
        let withoutCross = try await verify(x1, noCross)
        #expect(withoutCross.status != 0 && withoutCross.output.contains("error 20 "), "\(withoutCross.output)")
        let trustedFirst = try await verify(both, sent)
        #expect(trustedFirst.status == 0, "\(trustedFirst.output)")
        let anchor = trustedFirst.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            anchor.contains("CN = PinningLab YR (Gen Y RSA root)") && !anchor.contains("untrusted"),
            "\(trustedFirst.output)")
    }
}
