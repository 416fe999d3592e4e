import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// `GET /ech`: the lab's ECHConfigList, next to the other PKI views.
@Suite("Control API: the ECH configuration")
struct ECHControlTests {
    /// The three forms are one list, which parses (version 0xfe0d, public name public.pinning.test, X25519 KEM) and
    /// is the PKI folder's; the private key is in none of them; a bad format is a 400 naming the field, and without
    /// the token the route answers 401.
    @Test(.requires("curl"))
    func theListIsServedInThreeFormsWithTheToken() async throws {
        try await ControlTestLab.withControl { control, pki in
            let base = control.url
            let ech = try pki.echConfiguration()

            let binary = try await Curl.get(base + "ech?format=binary")
            #expect(binary.status == 200 && binary.contentType == "application/octet-stream")
            let configs = try #require(ECHConfigRead.parseList(binary.body), "not an ECHConfigList: \(binary.body)")
            #expect(configs.count == 1)
            let c = try #require(configs.first)
            #expect(c.version == 0xfe0d)
            #expect(c.publicName == "public.pinning.test")
            #expect(c.kemID == 0x0020 && c.publicKey.count == 32, "DHKEM(X25519, HKDF-SHA256)")
            #expect(c.cipherSuites == [[0x0001, 0x0001]])
            #expect(binary.body == Array(try Data(contentsOf: pki.echFiles.configList)))
            #expect(binary.body == ech.configList)
            #expect(!binary.body.containsSubsequence(ech.privateKey))

            let base64 = try await Curl.get(base + "ech?format=base64")
            #expect(base64.status == 200 && base64.contentType.hasPrefix("text/plain"))
            #expect(base64.text == Data(binary.body).base64EncodedString() + "\n")

            let json = try await Curl.get(base + "ech")
            #expect(json.status == 200 && json.contentType == "application/json")
            let view = try json.json()
            #expect(view["configListBase64"] as? String == Data(binary.body).base64EncodedString())
            #expect(view["publicName"] as? String == "public.pinning.test")
            #expect(view["version"] as? Int == 0xfe0d && view["kemID"] as? Int == 0x0020)
            #expect(view["configID"] as? Int == Int(c.configID))
            let privateBase64 = Data(ech.privateKey).base64EncodedString()
            #expect(!json.text.contains(privateBase64) && !base64.text.contains(privateBase64))

            let bad = try await Curl.get(base + "ech?format=pem")
            #expect(bad.status == 400)
            #expect(try bad.json()["field"] as? String == "format")

            let anonymous = try await Curl.$token.withValue(nil) { try await Curl.get(base + "ech?format=binary") }
            #expect(anonymous.status == 401)
            #expect(!anonymous.body.containsSubsequence(ech.configList))
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
