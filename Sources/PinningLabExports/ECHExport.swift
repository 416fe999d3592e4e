import Foundation
import PinningLabPKI

/// The lab's Encrypted Client Hello configuration (RFC 9849) as a client is given it: the `ECHConfigList` in base64
/// on one line (`echconfig.b64`: what Go's `Config.EncryptedClientHelloConfigList` takes once decoded, curl's
/// `--ech ecl:` and an HTTPS record's `ech=` parameter take as is) and, next to it, the same list binary
/// (`echconfig.list`). Carries no pins: the lab's servers hold no ECH key, so an offer made with it is rejected and
/// the client's rejection path is what the `ech` scenarios judge.
enum ECHExport {
    static let binaryFileName = "echconfig.list"

    static func render(_ e: PinExport) -> [ExportFile] {
        // `prepared(for:)` refuses an export without the configuration.
        guard let ech = e.echConfiguration else { return [] }
        return [
            ExportFile(name: ExportFormat.ech.fileName, text: ech.configListBase64 + "\n"),
            ExportFile(name: binaryFileName, bytes: ech.configList),
        ]
    }
}

extension ExportFormat {
    /// The lab's `ECHConfigList`: base64 (the main file) and binary.
    public static let ech = ExportFormat("ech", fileName: "echconfig.b64", carriesPins: false, render: ECHExport.render)
}
