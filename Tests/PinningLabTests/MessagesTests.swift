import Foundation
import PinningLab
import PinningLabIntercept
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The messages a reader meets (issue 37, "The terminal"): each says what happened and what to do, in English.
@Suite("Messages say what happened")
struct MessagesTests {
    static let spec = """
        version: 1
        keys: { K1: p256 }
        entities:
          root: { role: root }
          int: { role: intermediate, issuer: root }
          leaf: { role: leaf, issuer: int, key: K1, hosts: [localhost] }
        """

    static func open(_ dir: URL) throws -> LabPKI {
        try LabPKI.open(spec: try PKISpec.parse(yaml: spec), options: Lab.pkiOptions(directory: dir))
    }

    static func folder(_ name: String) throws -> URL {
        let dir = TestScratch.root.appendingPathComponent("messages-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        chmod(dir.path, 0o700)
        return dir
    }

    /// "an intermediate", not "a intermediate".
    @Test func anIntermediate() throws {
        let bad = Self.spec.replacingOccurrences(of: "issuer: root }", with: "issuer: root, hosts: [localhost] }")
        let e = #expect(throws: PKIError.self) { try PKISpec.parse(yaml: bad) }
        let text = e.map { "\($0)" } ?? ""
        #expect(text.contains("an intermediate has no hosts") && !text.contains("a intermediate"), "\(text)")
        #expect(
            Role.intermediate.withArticle == "an intermediate" && Role.root.withArticle == "a root"
                && Role.leaf.withArticle == "a leaf" && Role.client.withArticle == "a client")
    }

    /// A SEC1 key (`BEGIN EC PRIVATE KEY`, what `openssl ecparam -genkey` writes) is named as such, with the
    /// conversion to PKCS#8 — not "damaged or truncated". The conversion given is run when openssl is there: the
    /// PKI opens again with the same pins.
    @Test func sec1KeyIsNamedAndConverted() throws {
        let dir = try Self.folder("sec1")
        let pki = try Self.open(dir)
        let pins = pki.identities.map(\.pins.spkiBase64)
        let file = pki.keyFile("K1")
        let pkcs8 = try String(contentsOf: file, encoding: .utf8)
        if Tool.runs(needing: "openssl") {
            let r = ChildProcess.runBlocking(
                ["openssl", "ec", "-in", file.path, "-out", file.path + ".sec1"], timeout: .seconds(60))
            try #require(r.status == 0, "openssl ec: \(r.stderrText)")
            try FileManager.default.removeItem(at: file)
            try FileManager.default.moveItem(atPath: file.path + ".sec1", toPath: file.path)
        } else {
            // The label is what is judged; the body is the PKCS#8 one.
            try pkcs8.replacingOccurrences(of: " PRIVATE KEY-----", with: " EC PRIVATE KEY-----")
                .write(to: file, atomically: true, encoding: .utf8)
        }
        chmod(file.path, 0o600)
        try #require(try String(contentsOf: file, encoding: .utf8).hasPrefix("-----BEGIN EC PRIVATE " + "KEY-----"))
        let e = #expect(throws: PKIError.self) { try Self.open(dir) }
        let text = e.map { "\($0)" } ?? ""
        #expect(e?.code == .keyFileCorrupt && e?.file == file.path, "\(text)")
        #expect(
            text.contains("SEC1") && text.contains("PKCS#8") && text.contains("openssl pkcs8 -topk8 -nocrypt"),
            "\(text)")
        #expect(!text.contains("damaged or truncated"), "\(text)")
        guard Tool.runs(needing: "openssl"), let fix = e?.fix,
            let start = fix.firstIndex(of: "`"), let end = fix.lastIndex(of: "`"), start < end
        else { return }
        let command = String(fix[fix.index(after: start)..<end])
        let r = ChildProcess.runBlocking(["sh", "-c", command], timeout: .seconds(60))
        #expect(r.status == 0, "\(command): \(r.stderrText)")
        #expect(try Self.open(dir).identities.map(\.pins.spkiBase64) == pins, "the converted key is the same key")
    }

    /// A directory where a key file belongs is called a directory, not told to `chmod 600`.
    @Test func directoryWhereAKeyBelongs() throws {
        let dir = try Self.folder("keydir")
        let file = try Self.open(dir).keyFile("K1")
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        chmod(file.path, 0o755)
        let e = #expect(throws: PKIError.self) { try Self.open(dir) }
        let text = e.map { "\($0)" } ?? ""
        #expect(e?.file == file.path && text.contains("a directory") && text.contains("must be a file"), "\(text)")
        #expect(!text.contains("chmod"), "\(text)")
    }

    /// curl refuses a pin mismatch by closing cleanly (close_notify): the proxy says so, not "sent the alert
    /// close_notify" as if it were an error alert.
    @Test func closeNotifyIsACleanClose() throws {
        func observation(alert: String?, handshake: Bool) throws -> InterceptObservation {
            var fields: [String: Any] = [
                "id": 1, "startedAt": 0, "peer": "127.0.0.1:5000", "host": "api.pinning.test", "policy": "mint",
                "handshakeCompleted": handshake, "applicationDataReceived": false, "bytesFromClient": 0,
                "bytesFromUpstream": 0, "closure": "alert", "totalMilliseconds": 1.0,
            ]
            if let alert { fields["alertReceived"] = alert }
            return try JSONDecoder().decode(
                InterceptObservation.self, from: JSONSerialization.data(withJSONObject: fields))
        }
        let during = try observation(alert: "close_notify", handshake: false).refusalDescription ?? ""
        #expect(during == "closed cleanly (close_notify) during the handshake, without an error alert", "\(during)")
        let after = try observation(alert: "close_notify", handshake: true).refusalDescription ?? ""
        #expect(after == "completed the handshake, then closed cleanly (close_notify) without a request", "\(after)")
        #expect(
            try observation(alert: "bad_certificate", handshake: false).refusalDescription
                == "sent the alert bad_certificate")
    }
}
