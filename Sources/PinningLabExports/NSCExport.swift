import Foundation
import PinningLabPKI
import PinningLabReports

/// Android `res/xml/network_security_config.xml`: a `<domain-config>` for the host with the app's trust anchors
/// (the lab root as a raw resource), the `<pin-set>` with its expiration, and `<debug-overrides>` trusting
/// user-installed CAs in debug builds (apps targeting API 24+ ignore user CAs otherwise).
enum NSCExport {
    /// The raw resource name of a certificate: Android resource names take `[a-z0-9_]` only.
    static func rawName(_ name: String) -> String {
        String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    static func day(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: d)
    }

    static func render(_ e: PinExport) -> [ExportFile] {
        var s = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        var comment = e.headerLines(.nsc)
        comment.append("Save as res/xml/network_security_config.xml; the manifest's <application> names it with")
        if e.trustAnchors.isEmpty {
            comment.append(
                "android:networkSecurityConfig=\"@xml/network_security_config\". No trust anchors of its own: the system's."
            )
        } else {
            comment.append(
                "android:networkSecurityConfig=\"@xml/network_security_config\". The trust anchors are raw resources:")
        }
        for a in e.trustAnchors { comment.append("  res/raw/\(rawName(a.name)).pem  (\(a.name))") }
        s += xmlComment(comment)
        s += "<network-security-config>\n"
        s += "    <domain-config cleartextTrafficPermitted=\"false\">\n"
        s += "        <domain includeSubdomains=\"\(e.includeSubdomains)\">\(xml(e.host))</domain>\n"
        if !e.trustAnchors.isEmpty {  // none (pins.json): the domain keeps the base config's anchors, the system's
            s += "        <trust-anchors>\n"
            for a in e.trustAnchors { s += "            <certificates src=\"@raw/\(rawName(a.name))\" />\n" }
            s += "        </trust-anchors>\n"
        }
        if !e.pins.isEmpty {
            let exp = e.effectiveExpiration.map { " expiration=\"\(day($0))\"" } ?? ""
            let horizon =
                e.expiration == nil
                ? "\(e.pinHorizonDays) days after this export" : "given with --expiration or in pins.json"
            var lines = [
                "expiration (\(horizon)): on and after this day Android stops enforcing the pins.",
                "Keep it past the last day this build will be in use (pinlab export nsc --pin-horizon DAYS).",
            ]
            if let w = e.expirationWarning { lines.append("WARNING: \(w)") }
            s += xmlComment(lines, indent: "        ")
            s += "        <pin-set\(exp)>\n"
            for p in e.spkiPins {
                s += "            <pin digest=\"SHA-256\">\(p.spkiBase64)</pin> <!-- \(xml(p.label)) -->\n"
            }
            s += "        </pin-set>\n"
        }
        if let ct = e.certificateTransparency {
            s += xmlComment(
                ct
                    ? [
                        "Certificate Transparency (Android 16+): connections to this domain need SCTs from logs the platform",
                        "knows. The lab's logs are not among them: on a device, the lab's SCT scenarios judge a CT library",
                        "configured with the lab log list (ct/log_list.json of the PKI folder), not the platform's check.",
                    ] : ["Certificate Transparency explicitly off for this domain (Android 16+)."], indent: "        ")
            s += "        <certificateTransparency enabled=\"\(ct)\" />\n"
        }
        s += "    </domain-config>\n"
        s += "    <debug-overrides>\n"
        s += xmlComment(
            [
                "Debug builds also trust user-installed CAs (Settings → Security → Encryption & credentials →",
                "Install a certificate → CA certificate): apps targeting API 24+ ignore them otherwise.",
                "overridePins=\"false\": the pins still apply, so an interception proxy's root is still refused.",
            ], indent: "        ")
        s += "        <trust-anchors>\n"
        for a in e.trustAnchors { s += "            <certificates src=\"@raw/\(rawName(a.name))\" />\n" }
        s += "            <certificates src=\"user\" overridePins=\"false\" />\n"
        s += "        </trust-anchors>\n"
        s += "    </debug-overrides>\n"
        s += "</network-security-config>\n"
        var files = [ExportFile(name: ExportFormat.nsc.fileName, text: s)]
        for a in e.trustAnchors {
            files.append(ExportFile(name: rawName(a.name) + ".pem", text: PEM.encode(a.certificateDER)))
        }
        return files
    }
}

extension ExportFormat {
    /// Android `network_security_config.xml`, plus the lab root as a raw resource.
    public static let nsc = ExportFormat(
        "nsc", fileName: "network_security_config.xml", render: NSCExport.render)
}
