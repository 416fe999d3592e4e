import Foundation
import PinningLabPKI

/// curl's flags: `--cacert FILE --pinnedpubkey 'sha256//A;sha256//B'` (curl pins SPKI SHA-256 only).
enum CurlExport {
    static let trustFileName = "trust.pem"

    static func render(_ e: PinExport) -> [ExportFile] {
        let ca = e.trustFilePath ?? trustFileName
        // No trust anchors (pins.json): curl's own CA store.
        var flags = e.trustAnchors.isEmpty ? "" : "--cacert \(shellQuoted(ca))"
        if !e.pins.isEmpty {
            flags +=
                (flags.isEmpty ? "" : " ") + "--pinnedpubkey "
                + shellQuoted(e.spkiPins.map { PinFormat.curlPin($0.spkiBase64) }.joined(separator: ";"))
        }
        var lines = e.headerLines(.curl).map { "# " + $0 }
        lines.append("# Use: curl \(flags) https://\(e.host):PORT/   (exit 90: the pin did not match)")
        let text = lines.joined(separator: "\n") + "\n" + flags + "\n"
        if e.trustAnchors.isEmpty { return [ExportFile(name: ExportFormat.curl.fileName, text: text)] }
        return [
            ExportFile(name: ExportFormat.curl.fileName, text: text),
            ExportFile(name: trustFileName, text: PEM.encode(e.trustAnchors.map(\.certificateDER))),
        ]
    }

    /// Single-quoted for a POSIX shell.
    static func shellQuoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

extension ExportFormat {
    /// curl's `--cacert FILE --pinnedpubkey 'sha256//…'` flags.
    public static let curl = ExportFormat(
        "curl", fileName: "curl-flags.txt", render: CurlExport.render)
}
