// The lab's CT logs and SCTs (issue 23): the TLS encoding byte by byte, the precertificate flow, every SCT variant
// the scenarios need checked against the logs, the exported log lists, and OpenSSL as an independent judge.
import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("Certificate Transparency: lab logs and SCTs")
struct CertificateTransparencyTests {
    @Test("an SCT and an SCT list are TLS-encoded byte for byte as RFC 6962 §3.2 says")
    func tlsEncoding() throws {
        let sct = SignedCertificateTimestamp(
            logID: [UInt8](repeating: 0xAB, count: 32), timestamp: 0x0102_0304_0506_0708, signature: [0x30, 0x01, 0x00])
        let one = try sct.encoded()
        #expect(
            one == [0x00] + [UInt8](repeating: 0xAB, count: 32) + [1, 2, 3, 4, 5, 6, 7, 8]
                + [0x00, 0x00]  // no extensions
                + [0x04, 0x03]  // SHA-256, ECDSA
                + [0x00, 0x03, 0x30, 0x01, 0x00])
        let list = try SignedCertificateTimestamp.list([sct, sct])
        let item = [UInt8(0), UInt8(one.count)] + one
        #expect(list == [0x00, UInt8(2 * item.count)] + item + item)
        #expect(SignedCertificateTimestamp.parseList(list) == [sct, sct])
        #expect(SignedCertificateTimestamp.parseList(Array(list.dropLast())) == nil, "a truncated list is refused")
        // The certificate/OCSP extension value: a DER OCTET STRING around the list.
        #expect(SignedCertificateTimestamp.listExtensionValue(list) == [0x04, UInt8(list.count)] + list)
        // What a log signs for a precertificate: v1, certificate_timestamp, timestamp, precert_entry, issuer key
        // hash, a 3-byte-length TBSCertificate, no extensions.
        let signed = try SignedCertificateTimestamp.signedData(
            timestamp: 1,
            entry: .precert(issuerKeyHash: [UInt8](repeating: 7, count: 32), tbsCertificateDER: [0x30, 0x00]))
        #expect(
            signed == [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x00, 0x01] + [UInt8](repeating: 7, count: 32)
                + [0x00, 0x00, 0x02, 0x30, 0x00] + [0x00, 0x00])
        #expect(throws: PKIError.self, "an empty list is not a SignedCertificateTimestampList") {
            try SignedCertificateTimestamp.list([])
        }
    }

    @Test("the lab has two listed logs of two operators and one unlisted log; log ID = SHA-256 of the key")
    func logs() async throws {
        let pki = try await SharedPKI.pki()
        #expect(pki.ctLogs.map(\.name) == ["lab-ct-log-a", "lab-ct-log-b", "unknown-ct-log"])
        #expect(pki.ctLogs.map(\.listed) == [true, true, false])
        #expect(Set(pki.ctLogs.filter(\.listed).map(\.operatorName)).count == 2)
        for log in pki.ctLogs {
            #expect(try log.logID == sha256(log.publicKeyDER))
            let keyFile = pki.keyFile(log.name)
            let mode = try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600, "\(keyFile.path) is the log's private key")
        }
    }

    @Test("embedded SCTs come from the precertificate flow and verify against the listed logs")
    func embeddedValid() async throws {
        let pki = try await SharedPKI.pki()
        let leaf = try pki.identity("leaf-ct-valid")
        let issuer = try pki.identity("lab-intermediate-a")
        let scts = try #require(SignedCertificateTimestamp.embedded(in: leaf.certificateDER))
        #expect(scts.count == 2)
        let entry = try SignedCertificateTimestamp.Entry.precert(
            reconstructedFrom: leaf.certificateDER, issuerCertificateDER: issuer.certificateDER)
        let logs = pki.ctLogs.filter(\.listed)
        for (sct, log) in zip(scts, logs) {
            #expect(sct.logID == log.logID)
            #expect(log.verifies(sct, for: entry), "\(log.name)'s SCT verifies over the rebuilt precertificate")
            #expect(sct.date <= Date() && sct.date > Date().addingTimeInterval(-2 * 86400))
            #expect(
                !log.verifies(sct, for: .x509(certificateDER: leaf.certificateDER)), "not over the final certificate")
        }
        // The precertificate: the same TBSCertificate with the poison where the final one has the SCT list.
        let precert = try #require(leaf.precertificateDER)
        let fromPrecert = try SignedCertificateTimestamp.Entry.precert(
            reconstructedFrom: leaf.certificateDER, issuerCertificateDER: issuer.certificateDER)
        #expect(fromPrecert == entry)
        let text = try opensslText(precert)
        #expect(text.contains("CT Precertificate Poison: critical"), "\(text)")
        #expect(!text.contains("CT Precertificate SCTs"))
        let finalText = try opensslText(leaf.certificateDER)
        #expect(finalText.contains("CT Precertificate SCTs"), "\(finalText)")
        #expect(!finalText.contains("Poison"))
        #expect(
            pki["leaf-v1"]?.precertificateDER == nil
                && SignedCertificateTimestamp.embedded(in: pki["leaf-v1"]!.certificateDER) == nil)
    }

    @Test("the invalid variants: one SCT, an unknown log, bad signatures, timestamps in the future")
    func invalidVariants() async throws {
        let pki = try await SharedPKI.pki()
        let issuer = try pki.identity("lab-intermediate-a")
        let listed = pki.ctLogs.filter(\.listed)
        func check(_ name: String) throws -> (scts: [SignedCertificateTimestamp], verified: Int) {
            let leaf = try pki.identity(name)
            let scts = try #require(SignedCertificateTimestamp.embedded(in: leaf.certificateDER), "\(name)")
            let entry = try SignedCertificateTimestamp.Entry.precert(
                reconstructedFrom: leaf.certificateDER, issuerCertificateDER: issuer.certificateDER)
            let verified = scts.filter { sct in listed.contains { $0.verifies(sct, for: entry) } }.count
            return (scts, verified)
        }
        let one = try check("leaf-ct-one")
        #expect(one.scts.count == 1 && one.verified == 1)
        let unknown = try check("leaf-ct-unknown-log")
        #expect(unknown.scts.count == 1 && unknown.verified == 0)
        let unlisted = try #require(pki.ctLogs.first { !$0.listed })
        #expect(unknown.scts[0].logID == unlisted.logID)
        let bad = try check("leaf-ct-bad-signature")
        #expect(bad.scts.count == 2 && bad.verified == 0)
        #expect(
            Set(bad.scts.map(\.logID)) == Set(listed.map(\.logID)), "the listed logs' IDs, but signatures that fail")
        let future = try check("leaf-ct-future-timestamp")
        #expect(future.scts.count == 2 && future.verified == 2, "well signed…")
        #expect(future.scts.allSatisfy { $0.date > Date().addingTimeInterval(20 * 3600) }, "…but dated tomorrow")
    }

    @Test("SCTs for the TLS extension are over the final certificate (x509_entry)")
    func tlsExtensionSCTs() async throws {
        let pki = try await SharedPKI.pki()
        let leaf = try pki.identity("leaf-ct-tls")
        #expect(SignedCertificateTimestamp.embedded(in: leaf.certificateDER) == nil)
        let list = try #require(leaf.signedCertificateTimestampList)
        let scts = try #require(SignedCertificateTimestamp.parseList(list))
        let listed = pki.ctLogs.filter(\.listed)
        #expect(scts.count == 2)
        for (sct, log) in zip(scts, listed) {
            #expect(log.verifies(sct, for: .x509(certificateDER: leaf.certificateDER)))
        }
        #expect(pki["leaf-ct-valid"]?.signedCertificateTimestampList == nil)
    }

    @Test("pki show's SCT summary: delivery, log, and whether each would count")
    func summaries() async throws {
        let pki = try await SharedPKI.pki()
        func lines(_ name: String) throws -> [String] {
            pki.timestampSummaries(of: try pki.identity(name)).map(\.description)
        }
        #expect(try lines("leaf-v1").isEmpty)
        let valid = try lines("leaf-ct-valid")
        #expect(
            valid.count == 2
                && valid.allSatisfy { $0.hasPrefix("embedded: lab-ct-log-") && $0.hasSuffix("signature verifies") },
            "\(valid)")
        #expect(
            try lines("leaf-ct-tls").allSatisfy {
                $0.hasPrefix("TLS extension: ") && $0.hasSuffix("signature verifies")
            })
        #expect(try lines("leaf-ct-unknown-log").first?.contains("unknown-ct-log (unlisted") == true)
        #expect(try lines("leaf-ct-bad-signature").allSatisfy { $0.hasSuffix("signature does NOT verify") })
        #expect(
            try lines("leaf-ct-future-timestamp").allSatisfy {
                $0.hasSuffix("signature verifies; timestamp in the future")
            })
    }

    @Test("the log lists name the listed logs only, in Google's v3 JSON and OpenSSL's CT log file")
    func logListExports() async throws {
        let pki = try await SharedPKI.pki()
        let data = try Data(contentsOf: pki.ctLogListFile)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let operators = try #require(json["operators"] as? [[String: Any]])
        #expect(operators.count == 2)
        let logs = operators.flatMap { ($0["logs"] as? [[String: Any]]) ?? [] }
        let listed = pki.ctLogs.filter(\.listed)
        #expect(logs.compactMap { $0["log_id"] as? String } == listed.map(\.logIDBase64))
        #expect(logs.compactMap { $0["key"] as? String } == listed.map(\.keyBase64))
        for log in logs {
            #expect(log["mmd"] as? Int == 86400)
            #expect((log["state"] as? [String: Any])?["usable"] != nil)
            let interval = try #require(log["temporal_interval"] as? [String: String])
            #expect(interval["start_inclusive"] != nil && interval["end_exclusive"] != nil)
            #expect((log["url"] as? String)?.hasPrefix("https://") == true)
        }
        let unlisted = try #require(pki.ctLogs.first { !$0.listed })
        let conf = try String(contentsOf: pki.ctLogOpenSSLFile, encoding: .utf8)
        #expect(conf.contains("enabled_logs = lab-ct-log-a,lab-ct-log-b\n"))
        for log in listed { #expect(conf.contains("[\(log.name)]\n") && conf.contains("key = \(log.keyBase64)\n")) }
        #expect(
            !conf.contains(unlisted.keyBase64) && !String(decoding: data, as: UTF8.self).contains(unlisted.keyBase64))
    }

    @Test("a seed never derives a CT log's key: two folders with the same seed have different logs")
    func seedsNeverDeriveLogKeys() throws {
        let a = temporaryDirectory("ct-seed-a")
        let b = temporaryDirectory("ct-seed-b")
        defer { for d in [a, b] { try? FileManager.default.removeItem(at: d) } }
        let pa = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: a, seed: "docs"))
        let pb = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: b, seed: "docs"))
        #expect(try pa.identity("leaf-v1").pins.spkiSHA256 == pb.identity("leaf-v1").pins.spkiSHA256)
        for (la, lb) in zip(pa.ctLogs, pb.ctLogs) {
            #expect(la.logID != lb.logID, "\(la.name): a seeded log key would let anyone with the seed sign its SCTs")
            #expect(pa.keyOrigins[la.name] == "random")
        }
    }

    @Test("replacing a log's key re-issues the certificates, so no SCT names a key the log no longer has")
    func logRekeyReissues() throws {
        let dir = temporaryDirectory("ct-rekey")
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: dir))
        // Another valid P-256 key in its place (a restored backup, a copied folder): nothing is "new", yet
        // every SCT of log A would name a key the log no longer has.
        try FileManager.default.removeItem(at: first.keyFile("lab-ct-log-a"))
        try FileManager.default.copyItem(at: first.keyFile("lab-ct-log-b"), to: first.keyFile("lab-ct-log-a"))
        let second = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: dir))
        #expect(second.refresh.reissued)
        let log = try #require(second.ctLogs.first)
        let scts = try #require(
            SignedCertificateTimestamp.embedded(in: second.identity("leaf-ct-valid").certificateDER))
        #expect(scts[0].logID == log.logID && log.logID != first.ctLogs[0].logID)
    }
}

/// SHA-256 by `openssl dgst`, independent of the code under test.
func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
    Array(try openssl(["dgst", "-sha256", "-binary", "{in}"], input: bytes))
}

/// `openssl x509 -text` of a DER certificate.
func opensslText(_ der: [UInt8]) throws -> String {
    String(
        decoding: try openssl(["x509", "-inform", "DER", "-noout", "-text", "-in", "{in}"], input: der), as: UTF8.self)
}

func openssl(_ args: [String], input: [UInt8]) throws -> Data {
    let dir = temporaryDirectory("openssl-in")
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("in.der")
    try Data(input).write(to: file)
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["openssl"] + args.map { $0 == "{in}" ? file.path : $0 }
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return data
}
