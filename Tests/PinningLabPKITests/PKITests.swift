import Foundation
import PinningLab
import PinningLabOpenSSL
import PinningLabTestSupport
import Testing

/// What `openssl verify` must say about an identity of the lab PKI.
struct VerifyCase: CustomTestStringConvertible, Sendable {
    var name: String
    var root: String = "lab-root"
    var extra: [String] = []
    /// nil: "OK"; otherwise the OpenSSL error number it must fail with.
    var error: Int?
    var testDescription: String {
        "\(name) vs \(root) \(extra.joined(separator: " ")) → \(error.map { "error \($0)" } ?? "OK")"
    }
}

let verifyCases: [VerifyCase] = [
    .init(name: "lab-intermediate-a"), .init(name: "lab-intermediate-b"), .init(name: "lab-intermediate-a-renewed"),
    .init(name: "lab-intermediate-rsa"), .init(name: "lab-intermediate-expired", error: 10),
    .init(name: "leaf-v1", extra: ["-verify_hostname", "localhost"]),
    // The lab leaves name no address (BoringSSL refuses address SANs under the root's address constraints): 64 = IP mismatch.
    .init(name: "leaf-v1", extra: ["-verify_ip", "127.0.0.1"], error: 64),
    .init(name: "leaf-v1", extra: ["-verify_hostname", "api.pinning.test"]),
    .init(name: "leaf-v2-renewal"), .init(name: "leaf-v3-rekey"), .init(name: "leaf-emergency-rekey"),
    .init(name: "leaf-from-intermediate-b"), .init(name: "leaf-p384"), .init(name: "leaf-rsa-2048"),
    .init(name: "leaf-rsa-3072"), .init(name: "leaf-rsa-4096"), .init(name: "leaf-ed25519"),
    .init(name: "leaf-expired", error: 10),
    .init(name: "leaf-not-yet-valid", error: 9),
    .init(name: "leaf-wrong-host", extra: ["-verify_hostname", "localhost"], error: 62),
    .init(name: "leaf-wrong-host"),
    .init(name: "leaf-self-signed", error: 18),
    .init(name: "leaf-under-expired-intermediate", error: 10),
    .init(name: "leaf-weak-rsa-1024", extra: ["-auth_level", "2"], error: 66),
    .init(name: "leaf-sha1", extra: ["-auth_level", "1"], error: 68),
    .init(name: "leaf-non-ca-signer", error: 79),
    .init(name: "leaf-pathlen-violation", error: 25),
    .init(name: "proxy-leaf", error: 20), .init(name: "rogue-leaf", error: 20), .init(name: "twin-leaf", error: 20),
    .init(name: "proxy-leaf", root: "proxy-root"), .init(name: "twin-leaf", root: "proxy-root"),
    .init(name: "rogue-leaf", root: "rogue-root"),
    .init(name: "client-valid", root: "client-ca", extra: ["-purpose", "sslclient"]),
    .init(name: "client-expired", root: "client-ca", extra: ["-purpose", "sslclient"], error: 10),
    .init(name: "client-untrusted", root: "client-ca", extra: ["-purpose", "sslclient"], error: 20),
    .init(name: "client-wrong-eku", root: "client-ca", extra: ["-purpose", "sslclient"], error: 26),
]

@Suite("Lab PKI judged by openssl and certtool")
struct IndependentVerifierTests {
    @Test(arguments: verifyCases)
    func opensslVerify(_ c: VerifyCase) async throws {
        let pki = try await SharedPKI.pki()
        let dir = temporaryDirectory("verify")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try ChainFiles(try pki.identity(c.name), in: dir)
        let root = dir.appendingPathComponent("root.pem").path
        try pem(try pki.identity(c.root).certificateDER).write(toFile: root, atomically: true, encoding: .utf8)
        var args = ["openssl", "verify", "-CAfile", root] + c.extra
        if !(try pki.identity(c.name).issuerChainDER.isEmpty) { args += ["-untrusted", files.untrusted] }
        let r = try await run(args + [files.cert])
        if let code = c.error {
            #expect(r.status != 0, "\(r.output)")
            #expect(r.output.contains("error \(code) "), "expected OpenSSL error \(code), got: \(r.output)")
        } else {
            #expect(r.status == 0, "\(r.output)")
            #expect(r.stdout.contains(": OK"), "\(r.output)")
        }
    }

    @Test(
        .requires("certtool"),
        arguments: [
            ("leaf-v1", true), ("leaf-v3-rekey", true), ("leaf-ed25519", true), ("leaf-rsa-2048", true),
            ("leaf-expired", false), ("leaf-not-yet-valid", false), ("leaf-pathlen-violation", false),
            ("leaf-non-ca-signer", false), ("proxy-leaf", false), ("twin-leaf", false), ("leaf-self-signed", false),
            ("leaf-under-expired-intermediate", false),
        ])
    func certtoolAgrees(_ name: String, _ trusted: Bool) async throws {
        let certtool = try #require(Tool.path("certtool"), "certtool is not on the PATH: apt-get install gnutls-bin")
        let pki = try await SharedPKI.pki()
        let dir = temporaryDirectory("certtool")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try ChainFiles(try pki.identity(name), in: dir)
        let root = dir.appendingPathComponent("root.pem").path
        try pem(try pki.identity("lab-root").certificateDER).write(toFile: root, atomically: true, encoding: .utf8)
        let r = try await run([certtool, "--verify", "--load-ca-certificate", root, "--infile", files.chain])
        if trusted {
            #expect(r.status == 0 && r.output.contains("Verified. The certificate is trusted"), "\(r.output)")
        } else {
            #expect(r.status != 0 || !r.output.contains("Verified. The certificate is trusted"), "\(r.output)")
        }
    }

    @Test func nameConstraintsKeepTheRootOffRealSites() async throws {
        let spec = try PKISpec.parse(
            yaml: """
                version: 1
                entities:
                  root:
                    role: root
                    nameConstraints: { permitted: [localhost, .test, 127.0.0.0/8] }
                  ok:
                    role: leaf
                    issuer: root
                    hosts: [api.pinning.test, 127.0.0.1]
                  bank:
                    role: leaf
                    issuer: root
                    hosts: [www.example-bank.com]
                  public-ip:
                    role: leaf
                    issuer: root
                    hosts: [8.8.8.8]
                """)
        let dir = temporaryDirectory("nc")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try LabPKI.open(spec: spec, options: PKIOptions(directory: dir))
        let root = pki.files(for: "root").certificatePEM.path
        let ok = try await run(["openssl", "verify", "-CAfile", root, pki.files(for: "ok").certificatePEM.path])
        #expect(ok.status == 0, "\(ok.output)")
        for bad in ["bank", "public-ip"] {
            let r = try await run(["openssl", "verify", "-CAfile", root, pki.files(for: bad).certificatePEM.path])
            #expect(r.status != 0 && r.output.contains("error 47 "), "\(bad): \(r.output)")
        }
    }
}

@Suite("Pins")
struct PinTests {
    /// Every identity of the built-in spec. If the spec does not parse this is empty, and
    /// `theCasesCoverEveryIdentity` fails with the parse error instead of `pinsEqualOpenSSL` passing with no case.
    static let names = (try? Lab.builtInSpec().names) ?? []

    @Test func theCasesCoverEveryIdentity() async throws {
        let spec = try Lab.builtInSpec()
        try #require(!Self.names.isEmpty, "the built-in spec names no identity")
        #expect(Self.names == spec.names)
        #expect(
            Set(Self.names) == Set(try await SharedPKI.pki().identities.map(\.name)),
            "every identity the PKI builds is checked")
    }

    @Test(arguments: names)
    func pinsEqualOpenSSL(_ name: String) async throws {
        let pki = try await SharedPKI.pki()
        let id = try pki.identity(name)
        let files = pki.files(for: name)
        let spki = try await run([
            "sh", "-c",
            "openssl x509 -in '\(files.certificatePEM.path)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
        ])
        #expect(spki.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id.pins.spkiBase64, "\(spki.output)")
        let cert = try await run(["sh", "-c", "openssl dgst -sha256 -binary '\(files.certificateDER.path)' | base64"])
        #expect(cert.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id.pins.certificateBase64)
        // The bare key is the SPKI's BIT STRING contents: the SPKI DER minus its header.
        let raw = try await run([
            "sh", "-c",
            "openssl x509 -in '\(files.certificatePEM.path)' -pubkey -noout | openssl pkey -pubin -outform der | openssl asn1parse -inform der -strparse $(openssl x509 -in '\(files.certificatePEM.path)' -pubkey -noout | openssl pkey -pubin -outform der | openssl asn1parse -inform der | awk -F: '/BIT STRING/{print $1+0; exit}') -noout -out /dev/stdout 2>/dev/null | openssl dgst -sha256 -binary | base64",
        ])
        if id.keyType.isRSA {
            #expect(raw.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id.pins.rawKeyBase64, "\(raw.output)")
        }
        #expect(id.pins.rawKeyBase64 != id.pins.spkiBase64)
    }

    @Test func rawECKeyIsTheX963Point() async throws {
        let pki = try await SharedPKI.pki()
        let id = try pki.identity("leaf-v1")
        // For P-256 the SPKI DER is a 26-byte header followed by the 65-byte point 04||X||Y.
        let r = try await run([
            "sh", "-c",
            "openssl x509 -in '\(pki.files(for: "leaf-v1").certificatePEM.path)' -pubkey -noout | openssl pkey -pubin -outform der | tail -c 65 | openssl dgst -sha256 -binary | base64",
        ])
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id.pins.rawKeyBase64)
    }

    @Test func generationsKeepOrChangeTheRightPins() async throws {
        let pki = try await SharedPKI.pki()
        let v1 = try pki.identity("leaf-v1")
        let v2 = try pki.identity("leaf-v2-renewal")
        let v3 = try pki.identity("leaf-v3-rekey")
        let k3 = try pki.identity("leaf-emergency-rekey")
        #expect(v1.pins.spkiSHA256 == v2.pins.spkiSHA256)
        #expect(v1.pins.certificateSHA256 != v2.pins.certificateSHA256)
        #expect(v1.pins.spkiSHA256 != v3.pins.spkiSHA256)
        #expect(v1.pins.certificateSHA256 != v3.pins.certificateSHA256)
        #expect(Set([v1.pins.spkiBase64, v3.pins.spkiBase64, k3.pins.spkiBase64]).count == 3)
        for n in [
            "leaf-from-intermediate-b", "leaf-expired", "leaf-self-signed", "leaf-sha1", "leaf-pathlen-violation",
        ] {
            #expect(try pki.identity(n).pins.spkiSHA256 == v1.pins.spkiSHA256, "\(n) must carry K1")
        }
        let a = try pki.identity("lab-intermediate-a")
        let renewed = try pki.identity("lab-intermediate-a-renewed")
        #expect(a.pins.spkiSHA256 == renewed.pins.spkiSHA256)
        #expect(a.certificateDER != renewed.certificateDER)
    }

    @Test func twinHasTheSameNameAndKeyIdentifierButAnotherKey() async throws {
        let pki = try await SharedPKI.pki()
        func field(_ name: String, _ args: String) async throws -> String {
            try await run(["sh", "-c", "openssl x509 -in '\(pki.files(for: name).certificatePEM.path)' -noout \(args)"])
                .stdout
        }
        let twinSubject = try await field("twin-intermediate-a", "-subject")
        #expect(try await twinSubject == field("lab-intermediate-a", "-subject"))
        let ski = try await field("lab-intermediate-a", "-ext subjectKeyIdentifier")
        #expect(ski.contains("Subject Key Identifier"))
        #expect(try await field("twin-intermediate-a", "-ext subjectKeyIdentifier") == ski)
        #expect(
            try pki.identity("twin-intermediate-a").pins.spkiSHA256
                != pki.identity("lab-intermediate-a").pins.spkiSHA256)
        let twinIssuer = try await field("twin-intermediate-a", "-issuer")
        #expect(try await twinIssuer != field("lab-intermediate-a", "-issuer"))
    }

    @Test func formats() async throws {
        let pki = try await SharedPKI.pki()
        let ids = [try pki.identity("leaf-v1"), try pki.identity("leaf-v3-rekey")]
        let a = ids[0].pins.spkiBase64
        let b = ids[1].pins.spkiBase64
        #expect(PinFormat.okhttp.render(ids) == "sha256/\(a)\nsha256/\(b)\n")
        #expect(PinFormat.curl.render(ids) == "sha256//\(a);sha256//\(b)\n")
        #expect(PinFormat.trustkit.render(ids) == "[\"\(a)\", \"\(b)\"]\n")
        #expect(
            PinFormat.hpkp.render(ids) == "Public-Key-Pins: pin-sha256=\"\(a)\"; pin-sha256=\"\(b)\"; max-age=5184000\n"
        )
        let nsc = PinFormat.nsc.render(ids)
        #expect(
            nsc.contains("<pin digest=\"SHA-256\">\(a)</pin>") && nsc.contains("<pin digest=\"SHA-256\">\(b)</pin>"))
        let xml = try await run(
            ["python3", "-c", "import sys,xml.dom.minidom; xml.dom.minidom.parseString(sys.stdin.read())"], stdin: nsc)
        #expect(xml.status == 0, "\(xml.output)")
        let json = try JSONSerialization.jsonObject(with: Data(PinFormat.json(ids).utf8)) as? [[String: Any]]
        #expect(json?.count == 2)
        #expect((json?[0]["spkiSHA256"] as? [String: String])?["base64"] == a)
        #expect(json?[0]["okhttp"] as? String == "sha256/\(a)" && json?[1]["curl"] as? String == "sha256//\(b)")
    }
}

@Suite("PKCS#12")
struct PKCS12Tests {
    @Test(arguments: ["leaf-v1", "client-valid", "leaf-rsa-2048", "leaf-pathlen-violation"])
    func opensslOpensTheP12(_ name: String) async throws {
        let pki = try await SharedPKI.pki()
        let id = try pki.identity(name)
        let p12 = try pki.pkcs12File(for: name).path
        let r = try await run(["openssl", "pkcs12", "-in", p12, "-passin", "pass:\(pki.pkcs12Password)", "-nodes"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.components(separatedBy: "BEGIN CERTIFICATE").count - 1 == 1 + id.issuerChainDER.count)
        #expect(r.stdout.contains("BEGIN PRIVATE KEY"))
        #expect(r.stdout.contains("friendlyName: \(name)"))
        let info = try await run([
            "openssl", "pkcs12", "-in", p12, "-passin", "pass:\(pki.pkcs12Password)", "-info", "-noout",
        ])
        #expect(info.output.contains("pbeWithSHA1And3-KeyTripleDES-CBC"), "\(info.output)")
        #expect(info.output.contains("MAC: sha1"), "\(info.output)")
        let wrong = try await run(["openssl", "pkcs12", "-in", p12, "-passin", "pass:wrong", "-nodes"])
        #expect(wrong.status != 0)
        #expect(Storage_mode(p12) == 0o600)
    }

    @Test func roundTripAndWrongPassword() async throws {
        let id = try await SharedPKI.pki().identity("client-valid")
        let p12 = try OpenSSLPKCS12().encode(
            privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateDER: id.certificateDER,
            chainDER: id.issuerChainDER, friendlyName: "x", password: "s3cret")
        let back = try OpenSSLPKCS12.open(p12, password: "s3cret")
        #expect(back.certificateDER == id.certificateDER)
        #expect(back.privateKeyPKCS8DER == id.privateKeyPKCS8DER)
        #expect(throws: PKIError(.wrongPassword, "")) { try OpenSSLPKCS12.open(p12, password: "nope") }
        #expect(throws: PKIError(.pkcs12Failed, "")) { try OpenSSLPKCS12.open([1, 2, 3], password: "s3cret") }
    }
}

// swift-format-ignore: AlwaysUseLowerCamelCase
func Storage_mode(_ path: String) -> Int? {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber).map {
        $0.intValue & 0o777
    }
}

@Suite("Keys kept, certificates fresh, state safe")
struct StateTests {
    /// A small spec: fast to open again and again.
    static let small = """
        version: 1
        keys: { K1: p256, KE: ed25519 }
        entities:
          root: { role: root, nameConstraints: { permitted: [localhost, 127.0.0.0/8] } }
          int: { role: intermediate, issuer: root, pathLength: 0 }
          leaf: { role: leaf, issuer: int, key: K1, hosts: [localhost, 127.0.0.1] }
          leaf-ed: { role: leaf, issuer: int, key: KE, hosts: [localhost] }
          soon: { role: leaf, issuer: int, key: K1, validity: { notBefore: +2h, notAfter: +3d } }
          rsa: { role: leaf, issuer: int, keyType: rsa2048 }
        """

    func open(_ dir: URL, seed: String? = nil, now: Date = Date(), reissue: Bool = false, force: Bool = false) throws
        -> LabPKI
    {
        var o = Lab.pkiOptions(directory: dir, seed: seed)
        o.now = now
        o.reissue = reissue
        o.regenerateKeys = force
        return try LabPKI.open(spec: try PKISpec.parse(yaml: Self.small), options: o)
    }

    @Test func keysSurviveCertificatesRefresh() throws {
        let dir = temporaryDirectory("state")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try open(dir)
        #expect(first.refresh.reissued && first.refresh.generatedKeys.sorted() == ["K1", "KE", "int", "root", "rsa"])
        let second = try open(dir)
        #expect(!second.refresh.reissued && second.refresh.generatedKeys.isEmpty)
        #expect(second.identities.map(\.certificateDER) == first.identities.map(\.certificateDER))
        let third = try open(dir, reissue: true)
        #expect(third.refresh.reissued && third.refresh.generatedKeys.isEmpty)
        for (a, b) in zip(first.identities, third.identities) {
            #expect(a.pins.spkiSHA256 == b.pins.spkiSHA256, "\(a.name) kept its key")
            #expect(a.certificateDER != b.certificateDER, "\(a.name) was re-issued")
        }
        // Validity windows move: a day later everything is re-issued relative to the new now.
        let later = try open(dir, now: Date().addingTimeInterval(25 * 3600))
        #expect(later.refresh.reissued && later.refresh.reason == "validity windows moved")
        // A not-yet-valid certificate is re-issued before it would become valid.
        let soon = try open(dir, now: Date().addingTimeInterval(25 * 3600 + 2 * 3600 - 300))
        #expect(soon.refresh.reissued)
        let forced = try open(dir, force: true)
        #expect(forced.refresh.generatedKeys.count == 5)
        #expect(try forced.identity("leaf").pins.spkiSHA256 != first.identity("leaf").pins.spkiSHA256)
    }

    @Test func permissions() throws {
        let dir = temporaryDirectory("perm").appendingPathComponent("pki")
        defer { try? FileManager.default.removeItem(at: dir.deletingLastPathComponent()) }
        let pki = try open(dir)
        #expect(Storage_mode(dir.path) == 0o700)
        #expect(Storage_mode(dir.appendingPathComponent("keys").path) == 0o700)
        for k in ["K1", "KE", "root", "int", "rsa"] { #expect(Storage_mode(pki.keyFile(k).path) == 0o600, "\(k)") }
        #expect(Storage_mode(pki.files(for: "leaf").keyPEM.path) == 0o600)
        #expect(Storage_mode(pki.files(for: "leaf").certificatePEM.path) == 0o644)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("keys").path)
            .filter { $0.hasPrefix(".tmp") }
        #expect(leftovers.isEmpty)
    }

    /// A PKI folder (or its `keys/`, or a key) that someone else could have made or can write — one made first in a
    /// shared `/tmp` — is refused, not adopted: its keys would be signed with and served. Without the check the
    /// PKI opens on the world-writable folder and on the other user's key.
    @Test func aFolderOthersCanWriteOrOwnIsRefused() throws {
        let dir = temporaryDirectory("foreign").appendingPathComponent("pki")
        defer { try? FileManager.default.removeItem(at: dir.deletingLastPathComponent()) }
        _ = try open(dir)
        chmod(dir.path, 0o777)
        let e1 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(
            e1?.code == .notPrivate && e1?.file == dir.path && e1!.description.contains("written by others"),
            "\(String(describing: e1))")
        chmod(dir.path, 0o700)
        let keys = dir.appendingPathComponent("keys")
        chmod(keys.path, 0o733)
        let e2 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(e2?.code == .notPrivate && e2?.file == keys.path, "\(String(describing: e2))")
        chmod(keys.path, 0o700)
        _ = try open(dir)
        // Another user's key (chown needs root: CI runs as root; elsewhere this half is not run).
        guard geteuid() == 0 else { return }
        let k1 = try open(dir).keyFile("K1").path
        chown(k1, 65534, 65534)
        let e3 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(
            e3?.code == .notPrivate && e3?.file == k1 && e3!.description.contains("belongs to"),
            "\(String(describing: e3))")
        chown(k1, 0, 0)
        chown(dir.path, 65534, 65534)
        let e4 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(e4?.code == .notPrivate && e4?.file == dir.path, "\(String(describing: e4))")
        chown(dir.path, 0, 0)
    }

    @Test func unsafeOrDamagedKeysAreClearErrors() throws {
        let dir = temporaryDirectory("badkey")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try open(dir)
        let k1 = pki.keyFile("K1").path
        chmod(k1, 0o644)
        let e1 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(e1?.code == .keyFileTooOpen && e1?.file == k1 && e1!.description.contains("chmod 600"))
        chmod(k1, 0o600)
        try PEM.encode([0, 0, 0], label: "PRIVATE KEY").write(toFile: k1, atomically: true, encoding: .utf8)
        chmod(k1, 0o600)
        let e2 = #expect(throws: PKIError.self) { try open(dir) }
        #expect(e2?.code == .keyFileCorrupt && e2?.file == k1, "\(String(describing: e2))")
        try "not a key".write(toFile: k1, atomically: true, encoding: .utf8)
        chmod(k1, 0o600)
        #expect(throws: PKIError(.keyFileCorrupt, "")) { try open(dir) }
        // A kept P-256 key under a spec that now says P-384.
        try FileManager.default.removeItem(atPath: k1)
        _ = try open(dir)
        let changed = Self.small.replacingOccurrences(of: "K1: p256", with: "K1: p384")
        let e3 = #expect(throws: PKIError.self) {
            try LabPKI.open(spec: try PKISpec.parse(yaml: changed), options: PKIOptions(directory: dir))
        }
        #expect(e3?.code == .keyTypeChanged && e3!.description.contains("--force"))
    }

    @Test func damagedIdentityFilesAreRewrittenFromTheState() async throws {
        let dir = temporaryDirectory("damaged")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try open(dir)
        let leaf = first.files(for: "leaf")
        let int = first.files(for: "int")
        let good = try Data(contentsOf: leaf.certificatePEM)
        try Data("garbage\n".utf8).write(to: leaf.certificatePEM)
        try FileManager.default.removeItem(at: leaf.chainPEM)
        let full = try Data(contentsOf: int.fullChainPEM)
        try full.prefix(full.count / 2).write(to: int.fullChainPEM)
        let p12 = try Data(contentsOf: leaf.pkcs12)
        try p12.prefix(p12.count - 7).write(to: leaf.pkcs12)
        chmod(first.files(for: "rsa").keyPEM.path, 0o644)
        let second = try open(dir)
        #expect(!second.refresh.reissued && second.refresh.generatedKeys.isEmpty, "\(second.refresh)")
        #expect(second.identities.map(\.certificateDER) == first.identities.map(\.certificateDER), "nothing re-issued")
        let repaired = second.refresh.repaired.joined(separator: "\n")
        for line in ["cert.pem damaged", "chain.pem missing", "identity.p12 damaged"] {
            #expect(repaired.contains("certs/leaf: ") && repaired.contains(line), "\(line) in \(repaired)")
        }
        #expect(repaired.contains("certs/int: fullchain.pem damaged"), "\(repaired)")
        #expect(repaired.contains("certs/rsa: key.pem readable by others"), "\(repaired)")
        #expect(try Data(contentsOf: leaf.certificatePEM) == good)
        #expect(Storage_mode(first.files(for: "rsa").keyPEM.path) == 0o600)
        let v = try await run([
            "openssl", "verify", "-CAfile", leaf.rootPEM.path, "-untrusted", int.certificatePEM.path,
            leaf.chainPEM.path,
        ])
        #expect(v.status == 0, "\(v.output)")
        #expect(
            try await run([
                "openssl", "pkcs12", "-in", leaf.pkcs12.path, "-passin", "pass:\(second.pkcs12Password)",
                "-noout",
            ]).status == 0)
        #expect(try open(dir).refresh.repaired.isEmpty, "repaired once, then fresh")
    }

    /// A process killed between creating an atomic write's temporary file and renaming it leaves `.tmp-NAME-PID-N`
    /// behind — for a key, a private key nothing would ever remove. The next opening removes those of dead
    /// processes and says so; those of a live process stay.
    @Test func temporaryFilesOfDeadWritersAreRemoved() async throws {
        let dir = temporaryDirectory("leftover-tmp")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try open(dir)
        // A PID that is gone: a child that has exited (and been reaped). A live one: this process's parent.
        let gone = try await run(["sh", "-c", "echo $$"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let alive = getppid()
        let keys = dir.appendingPathComponent("keys")
        let leafFolder = first.files(for: "leaf").folder
        let ct = dir.appendingPathComponent("ct")  // the CT log lists, rewritten when a log key changes (--force)
        try FileManager.default.createDirectory(at: ct, withIntermediateDirectories: true)
        let dead = [
            dir.appendingPathComponent(".tmp-state.json-\(gone)-17"),
            keys.appendingPathComponent(".tmp-leaf.pem-\(gone)-18446744073709551615"),
            leafFolder.appendingPathComponent(".tmp-identity.p12-\(gone)-42"),
            ct.appendingPathComponent(".tmp-log_list.json-\(gone)-9"),
        ]
        let live = keys.appendingPathComponent(".tmp-leaf.pem-\(alive)-7")
        let unrelated = keys.appendingPathComponent(".tmp-notes")
        for url in dead + [live, unrelated] {
            #expect(
                FileManager.default.createFile(
                    atPath: url.path, contents: Data("a half-written file\n".utf8),
                    attributes: [.posixPermissions: 0o600]))
        }
        let second = try open(dir)
        for url in dead {
            #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent) removed")
        }
        #expect(FileManager.default.fileExists(atPath: live.path), "a live process's file stays")
        #expect(FileManager.default.fileExists(atPath: unrelated.path), "a name not of an atomic write stays")
        let said = second.refresh.repaired.joined(separator: "\n")
        #expect(said.contains(".tmp-state.json-\(gone)-17: removed"), "\(said)")
        #expect(said.contains("keys/.tmp-leaf.pem-\(gone)-18446744073709551615: removed"), "\(said)")
        #expect(said.contains("certs/leaf/.tmp-identity.p12-\(gone)-42: removed"), "\(said)")
        #expect(said.contains("ct/.tmp-log_list.json-\(gone)-9: removed"), "\(said)")
        #expect(!said.contains("-\(alive)-7"), "\(said)")
        #expect(!second.refresh.reissued, "nothing else changes: \(second.refresh)")
    }

    @Test func damagedKeysAreNeverReplacedSilently() throws {
        let dir = temporaryDirectory("keyrepair")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try open(dir, seed: "lab")
        // Truncated: an error naming the file and both fixes, never a new key.
        let k1 = first.keyFile("K1")
        let bytes = try Data(contentsOf: k1)
        try bytes.prefix(bytes.count / 2).write(to: k1)
        let e = #expect(throws: PKIError.self) { try open(dir, seed: "lab") }
        #expect(e?.code == .keyFileCorrupt && e?.file == k1.path, "\(String(describing: e))")
        #expect(e!.description.contains("--force") && e!.description.contains("restore"), "\(e!.description)")
        try bytes.write(to: k1)
        // Missing: a seeded key is derived again (same pins); a random one is replaced, and the report says so.
        try FileManager.default.removeItem(at: k1)
        try FileManager.default.removeItem(at: first.keyFile("rsa"))
        let again = try open(dir, seed: "lab")
        let notes = again.refresh.repaired.joined(separator: "\n")
        #expect(notes.contains("keys/K1.pem was missing: derived again from the seed (same pins)"), "\(notes)")
        #expect(notes.contains("keys/rsa.pem was missing: replaced by a new random key (its pins changed)"), "\(notes)")
        #expect(try again.identity("leaf").pins.spkiSHA256 == first.identity("leaf").pins.spkiSHA256)
        #expect(try again.identity("rsa").pins.spkiSHA256 != first.identity("rsa").pins.spkiSHA256)
        // Another valid key put in place of a kept one: the certificates are re-issued for the key there is.
        try FileManager.default.removeItem(at: again.keyFile("K1"))
        try FileManager.default.copyItem(at: again.keyFile("int"), to: again.keyFile("K1"))
        let swapped = try open(dir, seed: "lab")
        #expect(
            swapped.refresh.reissued && swapped.refresh.reason == "the key K1 is not the key of its certificates",
            "\(swapped.refresh)")
        #expect(try swapped.identity("leaf").pins.spkiSHA256 == swapped.identity("int").pins.spkiSHA256)
    }

    @Test func concurrentOpensLeaveOneConsistentState() async throws {
        let dir = temporaryDirectory("concurrent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let results = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<6 {
                group.addTask { try self.open(dir).identities.map(\.pins.spkiBase64) }
            }
            var all: [[String]] = []
            for try await r in group { all.append(r) }
            return all
        }
        #expect(Set(results).count == 1, "every opener sees the same keys")
        let pki = try open(dir)
        #expect(pki.identities.map(\.pins.spkiBase64) == results[0])
        let v = try await run([
            "openssl", "verify", "-CAfile", pki.files(for: "root").certificatePEM.path, "-untrusted",
            pki.files(for: "int").certificatePEM.path, pki.files(for: "leaf").certificatePEM.path,
        ])
        #expect(v.status == 0, "\(v.output)")
    }

    @Test func seedsMakePinsReproducible() throws {
        let a = temporaryDirectory("seed-a")
        let b = temporaryDirectory("seed-b")
        let c = temporaryDirectory("seed-c")
        defer { for d in [a, b, c] { try? FileManager.default.removeItem(at: d) } }
        let pa = try open(a, seed: "docs")
        let pb = try open(b, seed: "docs")
        let pc = try open(c, seed: "other")
        for n in ["leaf", "leaf-ed"] {
            #expect(try pa.identity(n).pins.spkiSHA256 == pb.identity(n).pins.spkiSHA256, "\(n)")
            #expect(try pa.identity(n).pins.spkiSHA256 != pc.identity(n).pins.spkiSHA256, "\(n)")
        }
        for n in ["root", "int"] {
            #expect(
                try pa.identity(n).pins.spkiSHA256 != pb.identity(n).pins.spkiSHA256, "\(n): CA keys are never seeded")
        }
        #expect(try pa.identity("rsa").pins.spkiSHA256 != pb.identity("rsa").pins.spkiSHA256, "RSA keys stay random")
        // Re-seeding an existing folder re-derives the seeded keys.
        let reseeded = try open(c, seed: "docs")
        #expect(try reseeded.identity("leaf").pins.spkiSHA256 == pa.identity("leaf").pins.spkiSHA256)
    }
}

@Suite("Library use: files on demand")
struct LazyFilesTests {
    @Test func libraryOpenWritesStateOnlyThenMaterializes() async throws {
        let dir = temporaryDirectory("lazy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try Lab.pki(directory: dir)
        let f = pki.files(for: "leaf-v1")
        #expect(!FileManager.default.fileExists(atPath: f.certificatePEM.path))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("state.json").path))
        let m = try pki.materialize("leaf-v1")
        #expect(m == f)
        let r = try await run([
            "openssl", "verify", "-CAfile", f.rootPEM.path, "-untrusted", f.chainPEM.path, f.certificatePEM.path,
        ])
        #expect(r.status == 0, "\(r.output)")
        #expect(Storage_mode(f.keyPEM.path) == 0o600)
        let p12 = try pki.pkcs12File(for: "client-valid")
        #expect(
            try await run(["openssl", "pkcs12", "-in", p12.path, "-passin", "pass:\(pki.pkcs12Password)", "-noout"])
                .status == 0)
        // After a re-issue the files on disk are stale until materialized again, and the .p12 follows.
        var o = Lab.libraryPKIOptions(directory: dir)
        o.reissue = true
        let again = try LabPKI.open(spec: try Lab.builtInSpec(), options: o)
        let der = try Data(contentsOf: again.files(for: "client-valid").certificateDER)
        #expect(Array(der) != (try again.identity("client-valid").certificateDER))
        let p12b = try again.pkcs12File(for: "client-valid")
        let out = try await run([
            "openssl", "pkcs12", "-in", p12b.path, "-passin", "pass:\(again.pkcs12Password)", "-nokeys", "-clcerts",
        ])
        let x = try await run(["openssl", "x509", "-noout", "-serial"], stdin: out.stdout)
        #expect(x.stdout.lowercased().contains(try again.identity("client-valid").serialHex), "\(x.output)")
    }
}
