import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The files `openssl ocsp` and `openssl crl` are judged with: the trusted root, the issuer and the certificate.
private struct RevocationFiles {
    var root: String
    var issuer: String
    var cert: String
    var dir: URL

    init(_ pki: LabPKI, _ name: String) throws {
        dir = temporaryDirectory("revocation")
        let id = try pki.identity(name)
        let issuer = try pki.identity(id.issuerName)
        root = dir.appendingPathComponent("root.pem").path
        self.issuer = dir.appendingPathComponent("issuer.pem").path
        cert = dir.appendingPathComponent("cert.pem").path
        try pem(id.rootDER).write(toFile: root, atomically: true, encoding: .utf8)
        try pem(issuer.certificateDER).write(toFile: self.issuer, atomically: true, encoding: .utf8)
        try pem(id.certificateDER).write(toFile: cert, atomically: true, encoding: .utf8)
    }

    func write(_ der: [UInt8], _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try Data(der).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// What `openssl ocsp -respin` must say about one response.
struct OCSPCase: CustomStringConvertible, Sendable {
    var identity: String
    var variant: OCSPVariant
    /// A line of the verified response (`cert.pem: good`), or nil when verification must fail.
    var verifiedStatus: String?
    var description: String { "\(identity) \(variant)" }
}

@Suite("OCSP responses and CRLs judged by openssl")
struct RevocationArtefactTests {
    static let ocspCases: [OCSPCase] = [
        .init(identity: "leaf-ocsp", variant: .asIssued, verifiedStatus: ": good"),
        .init(identity: "leaf-k1-revoked", variant: .asIssued, verifiedStatus: ": revoked"),
        .init(identity: "leaf-ocsp-unknown", variant: .asIssued, verifiedStatus: ": unknown"),
        .init(identity: "leaf-ocsp", variant: .revoked, verifiedStatus: ": revoked"),
        .init(identity: "leaf-ocsp", variant: .delegated, verifiedStatus: ": good"),
        .init(identity: "leaf-k1-revoked", variant: .delegated, verifiedStatus: ": revoked"),
        .init(identity: "leaf-ocsp", variant: .badSignature, verifiedStatus: nil),
        .init(identity: "leaf-ocsp", variant: .wrongResponder, verifiedStatus: nil),
    ]

    /// OCSP CertIDs and CRL entries take the serial from the certificate's DER where it stands, without decoding the
    /// certificate: the same bytes swift-certificates decodes, for every identity of the lab (short and 20-byte
    /// serials, v1 and v3 certificates), and nothing from a truncated or foreign structure.
    @Test("the serial read from the DER is the certificate's serial, for every lab identity")
    func serialNumbersFromTheDER() async throws {
        let pki = try await SharedPKI.pki()
        for id in pki.identities {
            #expect(DERWalk.serialNumber(of: id.certificateDER)?.hexString == id.serialHex, "\(id.name)")
        }
        let leaf = try #require(pki.identities.first).certificateDER
        #expect(DERWalk.serialNumber(of: Array(leaf.prefix(12))) == nil)
        // an OCTET STRING, not an INTEGER
        #expect(DERWalk.serialNumber(of: [0x30, 0x05, 0x30, 0x03, 0x04, 0x01, 0x07]) == nil)
        #expect(DERWalk.serialNumber(of: []) == nil)
    }

    @Test("openssl ocsp -respin verifies each response, or refuses it", .requires("openssl"), arguments: ocspCases)
    func ocspJudgedByOpenSSL(_ c: OCSPCase) async throws {
        let pki = try await SharedPKI.pki()
        let f = try RevocationFiles(pki, c.identity)
        let resp = try f.write(try pki.ocspResponse(for: c.identity, options: c.variant.options), "resp.der")
        let r = try await run([
            "openssl", "ocsp", "-respin", resp, "-resp_text", "-CAfile", f.root, "-issuer", f.issuer,
            "-cert", f.cert,
        ])
        if let status = c.verifiedStatus {
            #expect(r.status == 0, "\(r.output)")
            #expect(r.output.contains("Response verify OK"), "\(r.output)")
            #expect(r.stdout.contains("cert.pem\(status)"), "\(r.output)")
            if status == ": revoked" {
                #expect(r.stdout.contains("Reason: keyCompromise"), "\(r.output)")
            }
        } else {
            #expect(!r.output.contains("Response verify OK"), "\(r.output)")
            #expect(r.output.contains("Response Verify Failure") || r.output.contains("verify error"), "\(r.output)")
        }
    }

    @Test(
        "good-with-scts carries the SCT list in the single response, and openssl ocsp reads both SCTs",
        .requires("openssl"))
    func ocspWithSCTs() async throws {
        let pki = try await SharedPKI.pki()
        let f = try RevocationFiles(pki, "leaf-ct-tls")
        let resp = try f.write(
            try pki.ocspResponse(for: "leaf-ct-tls", options: OCSPVariant.goodWithSCTs.options), "scts.der")
        let r = try await run([
            "openssl", "ocsp", "-respin", resp, "-resp_text", "-CAfile", f.root, "-issuer", f.issuer,
            "-cert", f.cert,
        ])
        #expect(r.output.contains("Response verify OK") && r.stdout.contains("cert.pem: good"), "\(r.output)")
        #expect(r.stdout.contains("CT Certificate SCTs"), "\(r.output)")
        #expect(r.stdout.components(separatedBy: "Signed Certificate Timestamp:").count == 3, "\(r.output)")
        // Only a leaf with SCTs for the TLS extension has a list to carry.
        #expect(throws: PKIError.self) {
            try pki.ocspResponse(for: "leaf-ocsp", options: OCSPVariant.goodWithSCTs.options)
        }
    }

    @Test("an expired response says so; the error statuses carry no body", .requires("openssl"))
    func ocspExpiredAndErrorStatuses() async throws {
        let pki = try await SharedPKI.pki()
        let f = try RevocationFiles(pki, "leaf-ocsp")
        let expired = try f.write(
            try pki.ocspResponse(for: "leaf-ocsp", options: OCSPVariant.expired.options), "expired.der")
        let r = try await run([
            "openssl", "ocsp", "-respin", expired, "-CAfile", f.root, "-issuer", f.issuer, "-cert", f.cert,
        ])
        #expect(r.output.contains("Response verify OK"), "\(r.output)")
        #expect(r.output.contains("Status times invalid"), "\(r.output)")
        for (variant, text) in [(OCSPVariant.tryLater, "trylater (3)"), (.unauthorized, "unauthorized (6)")] {
            let path = try f.write(try pki.ocspResponse(for: "leaf-ocsp", options: variant.options), "\(variant).der")
            let e = try await run(["openssl", "ocsp", "-respin", path, "-resp_text", "-noverify"])
            #expect(e.output.contains("Responder Error: \(text)"), "\(e.output)")
            #expect(!e.output.contains("Response Type"), "\(e.output)")
        }
    }

    @Test("the certificates carry the AIA, CRL distribution point and TLS feature extensions", .requires("openssl"))
    func certificateExtensions() async throws {
        let pki = try await SharedPKI.pki()
        let leaf = try pki.materialize("leaf-ocsp").certificatePEM.path
        let ocsp = try await run(["openssl", "x509", "-noout", "-ocsp_uri", "-in", leaf])
        #expect(ocsp.stdout == "http://ocsp.pinning.test/lab-intermediate-a\n", "\(ocsp.output)")
        let crl = try await run(["openssl", "x509", "-noout", "-ext", "crlDistributionPoints", "-in", leaf])
        #expect(crl.stdout.contains("URI:http://crl.pinning.test/lab-intermediate-a.crl"), "\(crl.output)")
        let staple = try await run([
            "openssl", "x509", "-noout", "-text", "-in", pki.materialize("leaf-must-staple").certificatePEM.path,
        ])
        #expect(staple.stdout.contains("TLS Feature:") && staple.stdout.contains("status_request"), "\(staple.output)")
        let plain = try await run([
            "openssl", "x509", "-noout", "-text", "-in", pki.materialize("leaf-v1").certificatePEM.path,
        ])
        #expect(!plain.stdout.contains("OCSP") && !plain.stdout.contains("CRL Distribution"), "\(plain.output)")
        let responder = try await run([
            "openssl", "x509", "-noout", "-ext", "extendedKeyUsage",
            "-in", pki.materialize("lab-ocsp-responder-a").certificatePEM.path,
        ])
        #expect(responder.stdout.contains("OCSP Signing"), "\(responder.output)")
    }

    @Test("openssl crl verifies the CRL; openssl verify -crl_check refuses the revoked leaf only", .requires("openssl"))
    func crlJudgedByOpenSSL() async throws {
        let pki = try await SharedPKI.pki()
        let f = try RevocationFiles(pki, "leaf-k1-revoked")
        let crlDER = try f.write(try pki.crl(issuer: "lab-intermediate-a"), "a.crl.der")
        let crlPEM = f.dir.appendingPathComponent("a.crl.pem").path
        let conv = try await run(["openssl", "crl", "-inform", "DER", "-in", crlDER, "-out", crlPEM])
        #expect(conv.status == 0, "\(conv.output)")
        let text = try await run(["openssl", "crl", "-in", crlPEM, "-CAfile", f.issuer, "-noout", "-text"])
        #expect(text.status == 0, "\(text.output)")
        #expect(text.output.contains("verify OK"), "\(text.output)")
        #expect(text.stdout.contains("Version 2") && text.stdout.contains("Key Compromise"), "\(text.output)")
        let revokedSerial = try pki.identity("leaf-k1-revoked").serialHex.uppercased()
        #expect(text.stdout.contains(revokedSerial), "\(text.output)")
        #expect(!text.stdout.contains(try pki.identity("leaf-ocsp").serialHex.uppercased()), "\(text.output)")

        let full = f.dir.appendingPathComponent("trust.pem").path
        try (try String(contentsOfFile: f.root, encoding: .utf8) + String(contentsOfFile: f.issuer, encoding: .utf8))
            .write(toFile: full, atomically: true, encoding: .utf8)
        let refused = try await run(["openssl", "verify", "-crl_check", "-CRLfile", crlPEM, "-CAfile", full, f.cert])
        #expect(refused.status != 0 && refused.output.contains("certificate revoked"), "\(refused.output)")
        let good = try await run([
            "openssl", "verify", "-crl_check", "-CRLfile", crlPEM, "-CAfile", full,
            pki.materialize("leaf-ocsp").certificatePEM.path,
        ])
        #expect(good.status == 0, "\(good.output)")

        let stale = try f.write(try pki.crl(issuer: "lab-intermediate-a", options: .stale), "stale.crl.der")
        let stalePEM = f.dir.appendingPathComponent("stale.crl.pem").path
        _ = try await run(["openssl", "crl", "-inform", "DER", "-in", stale, "-out", stalePEM])
        let late = try await run([
            "openssl", "verify", "-crl_check", "-CRLfile", stalePEM, "-CAfile", full,
            pki.materialize("leaf-ocsp").certificatePEM.path,
        ])
        #expect(late.status != 0 && late.output.contains("CRL has expired"), "\(late.output)")
    }

    @Test(
        "pkilint finds no error in the OCSP responses, CRLs and revocation-bearing certificates",
        .requires("lint_ocsp_response", "lint_crl", "lint_pkix_cert"))
    func pkilint() async throws {
        let pki = try await SharedPKI.pki()
        let f = try RevocationFiles(pki, "leaf-k1-revoked")
        var findings: [String] = []
        // What pkilint prints beyond blank lines. Every lab leaf names `localhost`, a single-label name pkilint
        // calls invalid domain name syntax; that finding is about the lab's host names, not revocation, and is set
        // aside (each finding is a "Validator @ path" line followed by its indented finding lines).
        func errors(_ r: Run) -> String {
            let blocks = r.stdout.components(separatedBy: "\n\n").map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return blocks.filter {
                !$0.isEmpty && !($0.contains("invalid_domain_name_syntax") && $0.contains("\"localhost\""))
            }
            .joined(separator: "\n")
        }
        for (name, variant) in [
            ("leaf-ocsp", OCSPVariant.asIssued), ("leaf-k1-revoked", .asIssued),
            ("leaf-ocsp-unknown", .asIssued), ("leaf-ocsp", .delegated),
        ] {
            let path = try f.write(try pki.ocspResponse(for: name, options: variant.options), "\(name)-\(variant).ocsp")
            let r = try await run(["lint_ocsp_response", "lint", "-s", "ERROR", path])
            if !errors(r).isEmpty || !r.stderr.isEmpty { findings.append("\(name) \(variant): \(r.output)") }
        }
        let crl = try f.write(try pki.crl(issuer: "lab-intermediate-a"), "a.crl")
        let c = try await run(["lint_crl", "lint", "-t", "CRL", "-p", "PKIX", "-s", "ERROR", crl])
        if !errors(c).isEmpty || !c.stderr.isEmpty { findings.append("crl: \(c.output)") }
        for name in ["leaf-ocsp", "leaf-must-staple", "lab-ocsp-responder-a"] {
            let r = try await run(["lint_pkix_cert", "lint", "-s", "ERROR", pki.materialize(name).certificatePEM.path])
            if !errors(r).isEmpty || !r.stderr.isEmpty { findings.append("\(name): \(r.output)") }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    @Test("a CRL of many serials grows linearly and still parses", .requires("openssl"))
    func largeCRL() async throws {
        let pki = try await SharedPKI.pki()
        var o = CRLOptions()
        o.extraRevokedSerials = 1000
        let der = try pki.crl(issuer: "lab-intermediate-a", options: o)
        let f = try RevocationFiles(pki, "leaf-ocsp")
        let path = try f.write(der, "big.crl")
        let r = try await run(["openssl", "crl", "-inform", "DER", "-in", path, "-CAfile", f.issuer, "-noout"])
        #expect(r.output.contains("verify OK"), "\(r.output)")
    }
}

@Suite("Revocation fields of the PKI spec")
struct RevocationSpecTests {
    static let base = """
        version: 1
        entities:
          root: { role: root }
          ca: { role: intermediate, issuer: root }

        """

    @Test("the fields parse")
    func parses() throws {
        let spec = try PKISpec.parse(
            yaml: Self.base + """
                  l:
                    role: leaf
                    issuer: ca
                    ocsp: http://ocsp.pinning.test/ca
                    crl: http://crl.pinning.test/ca.crl
                    mustStaple: true
                    revocation: { status: revoked, reason: keyCompromise, date: -2h }
                """)
        let l = try #require(spec.entity("l"))
        #expect(l.ocspResponder == "http://ocsp.pinning.test/ca")
        #expect(l.crlDistributionPoint == "http://crl.pinning.test/ca.crl")
        #expect(l.mustStaple)
        #expect(l.revocation == .revoked(reason: .keyCompromise, date: RelativeTime(seconds: -7200)))
        #expect(spec.entity("ca")?.revocation == .good)
    }

    struct BadCase: CustomStringConvertible, Sendable {
        var fields: String
        var code: PKIError.Code
        var field: String
        var mentions: String
        var description: String { fields }
    }

    static let bad: [BadCase] = [
        .init(
            fields: "ocsp: https://ocsp.example.com/x", code: .badRevocationURL, field: "ocsp",
            mentions: "http://ocsp.pinning.test/l"),
        .init(
            fields: "crl: http://ocsp.pinning.test/x", code: .badRevocationURL, field: "crl",
            mentions: "crl.pinning.test"),
        .init(
            fields: "revocation: revoked", code: .badRevocation, field: "revocation", mentions: "reason: keyCompromise"),
        .init(fields: "revocation: gone", code: .badRevocation, field: "revocation", mentions: "revocation: good"),
        .init(
            fields: "revocation: { status: revoked, reason: stolen, date: -1h }", code: .badRevocation,
            field: "revocation.reason", mentions: "keyCompromise"),
        .init(
            fields: "revocation: { status: revoked, reason: keyCompromise }", code: .missingField,
            field: "revocation.date", mentions: "date: -1h"),
        .init(
            fields: "revocation: { status: revoked, reason: keyCompromise, date: +1d }", code: .badRevocation,
            field: "revocation.date", mentions: "at or before issuance"),
        .init(fields: "mustStaple: maybe", code: .wrongType, field: "mustStaple", mentions: "mustStaple: true"),
    ]

    @Test("bad fields name the file, field and fix", arguments: bad)
    func badField(_ c: BadCase) throws {
        let yaml = Self.base + "  l:\n    role: leaf\n    issuer: ca\n    \(c.fields)\n"
        do {
            _ = try PKISpec.parse(yaml: yaml, file: "lab.yaml")
            Issue.record("accepted \(c.fields)")
        } catch let e as PKIError {
            #expect(e.code == c.code, "\(e)")
            #expect(e.field == c.field, "\(e)")
            #expect(e.file == "lab.yaml" && e.entity == "l" && e.line != nil, "\(e)")
            #expect(e.description.contains(c.mentions), "\(e)")
        }
    }

    @Test("Must-Staple on a CA and a revoked root are refused")
    func misplaced() throws {
        #expect(throws: PKIError(.unknownField, "")) {
            try PKISpec.parse(yaml: "version: 1\nentities:\n  root: { role: root, mustStaple: true }\n")
        }
        #expect(throws: PKIError(.badRevocation, "")) {
            try PKISpec.parse(yaml: "version: 1\nentities:\n  root: { role: root, revocation: unknown }\n")
        }
    }
}
