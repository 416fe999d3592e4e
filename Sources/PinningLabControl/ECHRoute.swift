import Foundation
import PinningLabCore
import PinningLabPKI

/// `GET /ech`: the lab's Encrypted Client Hello configuration (RFC 9849), as `pinlab pki export --ech` and
/// `pinlab export ech` write it. The private key is never served: the lab's servers hold no ECH key either.
struct ECHView: Encodable, Sendable {
    var publicName: String
    /// The `ECHConfigList`, base64: what a client is configured with.
    var configListBase64: String
    var version: Int
    var configID: Int
    var kemID: Int
    var kdfID: Int
    var aeadID: Int

    init(_ ech: ECHConfiguration) {
        publicName = ech.publicName
        configListBase64 = ech.configListBase64
        version = Int(ECHConfiguration.version)
        configID = Int(ech.configID)
        kemID = Int(ECHConfiguration.kemID)
        kdfID = Int(ECHConfiguration.kdfID)
        aeadID = Int(ECHConfiguration.aeadID)
    }
}

extension ControlAPI {
    /// `format=json` (the default): the list and its fields; `base64`: the list on one line; `binary`: its bytes.
    func ech(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let format = try r.choice("format", ["json", "base64", "binary"], default: "json")
        let pki = self.pki
        let ech: ECHConfiguration
        do {
            // Reads (and, the first time, writes) the PKI folder's ech/ under its lock: off the cooperative pool.
            ech = try await onDedicatedThread(named: "pinlab.ctl.block") { Result { try pki.echConfiguration() } }
                .get()
        } catch {
            throw ControlError(500, field: nil, "the lab's ECH configuration could not be read: \(error)")
        }
        switch format {
        case "base64":
            return .text(ech.configListBase64 + "\n")
        case "binary":
            var reply = ControlReply(status: 200, contentType: "application/octet-stream", body: Data(ech.configList))
            reply.headers["Content-Disposition"] = "attachment; filename=\"echconfig.list\""
            return reply
        default:
            return .json(ECHView(ech))
        }
    }
}
