import Foundation
import PinningLabPKI

/// Cronet (Chromium's network stack for Android): `CronetEngine.Builder.addPublicKeyPins(host, pinsSha256,
/// includeSubdomains, expirationDate)` in Java. The pins are the raw 32-byte SHA-256 digests of the SPKI, written as
/// byte arrays (no `java.util.Base64`, which needs API 26). The builder's
/// `enablePublicKeyPinningBypassForLocalTrustAnchors` defaults to true — pins are then skipped for chains ending at
/// a user-installed CA, which is exactly an interception proxy — so the export turns it off.
enum CronetExport {
    static func javaBytes(_ base64: String) -> String {
        let bytes = Data(base64Encoded: base64).map(Array.init) ?? []
        return "new byte[] {" + bytes.map { "(byte) 0x" + String(format: "%02x", $0) }.joined(separator: ", ") + "}"
    }

    static func java(_ e: PinExport) -> [ExportFile] {
        let expiration = e.effectiveExpiration ?? e.exportDate
        let millis = Int64((expiration.timeIntervalSince1970 * 1000).rounded(.down))
        var s = slashComment(
            e.headerLines(.cronetJava) + [
                "Cronet stops enforcing the pins after EXPIRATION (\(NSCExport.day(expiration))): keep it past the last day this",
                "build will be in use (pinlab export cronet-java --pin-horizon DAYS or --expiration YYYY-MM-DD).",
            ])
        s += """
            import java.util.Date;
            import java.util.HashSet;
            import java.util.Set;
            import org.chromium.net.CronetEngine;

            public final class PinningLabCronetPins {
                public static final String HOST = \(quoted(e.host));
                public static final boolean INCLUDE_SUBDOMAINS = \(e.includeSubdomains);
                /** \(NSCExport.day(expiration))T00:00:00Z: after it Cronet no longer enforces the pins. */
                public static final Date EXPIRATION = new Date(\(millis)L);

                private PinningLabCronetPins() {}

                /** SHA-256 of each pinned DER SubjectPublicKeyInfo. */
                public static Set<byte[]> pins() {
                    Set<byte[]> pins = new HashSet<>();

            """
        for p in e.spkiPins {
            s += "        // \(p.spkiBase64)  \(p.label)\n"
            s += "        pins.add(\(javaBytes(p.spkiBase64)));\n"
        }
        s += """
                    return pins;
                }

                /** Adds the pins to a builder: {@code PinningLabCronetPins.apply(new CronetEngine.Builder(context)).build()}. */
                public static CronetEngine.Builder apply(CronetEngine.Builder builder) {
                    return builder
                            .addPublicKeyPins(HOST, pins(), INCLUDE_SUBDOMAINS, EXPIRATION)
                            // The default (true) skips the pins for chains that end at a user-installed CA: a proxy's.
                            .enablePublicKeyPinningBypassForLocalTrustAnchors(false);
                }
            }

            """
        return [ExportFile(name: ExportFormat.cronetJava.fileName, text: s)]
    }
}

extension ExportFormat {
    /// Cronet's `CronetEngine.Builder.addPublicKeyPins` in Java, with the expiration date and includeSubdomains.
    public static let cronetJava = ExportFormat(
        "cronet-java", fileName: "PinningLabCronetPins.java", render: CronetExport.java)
}
