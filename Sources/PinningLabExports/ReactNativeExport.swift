import Foundation
import PinningLabPKI

/// react-native-ssl-public-key-pinning (frw/react-native-ssl-public-key-pinning): the `PinningOptions` object its
/// `initializeSslPinning` takes, as an ES module. Per its README: one key per domain, `includeSubdomains` (default
/// false) and `publicKeyHashes`, each the base64 SHA-256 of a certificate's SubjectPublicKeyInfo — the same pins as
/// TrustKit and OkHttp. The library hands them to TrustKit on iOS (which throws on fewer than two pins, so the format
/// requires two) and to OkHttp's `CertificatePinner` on Android, as `**.DOMAIN` when `includeSubdomains` is true
/// (`SslPublicKeyPinningModule.java`), else `DOMAIN`.
enum ReactNativeExport {
    /// What differs between the two platforms for this configuration, for the header comment.
    static func platformNotes(_ e: PinExport) -> [String] {
        var lines = [
            "iOS: TrustKit (TSKPublicKeyHashes, TSKIncludeSubdomains). Android: OkHttp CertificatePinner, pattern "
                + (e.includeSubdomains
                    ? "**.\(e.host) (the host and every subdomain, any depth)." : "\(e.host) (this host only)."),
            "The domain key takes no wildcard: '*.\(e.host)' would be OkHttp's one-label wildcard on Android, and on iOS "
                + "TrustKit has no wildcard syntax (the key is refused or matches no host); use includeSubdomains instead.",
            "Only the fetch/XMLHttpRequest networking of React Native is pinned; native libraries with their own HTTP "
                + "stack are not, and an Expo development client can bypass the pins on iOS (issue #223 of the library).",
        ]
        if e.includeSubdomains {
            lines.append("includeSubdomains: true covers \(e.host) itself and its subdomains on both platforms.")
        }
        return lines
    }

    static func module(_ e: PinExport) -> [ExportFile] {
        var header = e.headerLines(.reactNative)
        header += platformNotes(e)
        header.append("Call configurePinningLabPinning() once, as early as possible in the app's entry point.")
        var s = slashComment(header)
        s += """
            import { initializeSslPinning } from 'react-native-ssl-public-key-pinning';

            /** react-native-ssl-public-key-pinning's PinningOptions: domain -> { includeSubdomains, publicKeyHashes }. */
            export const pinningLabPinningOptions = {
              \(quoted(e.host)): {
                includeSubdomains: \(e.includeSubdomains),
                publicKeyHashes: [

            """
        for p in e.spkiPins { s += "      \(quoted(p.spkiBase64)), // \(p.label)\n" }
        s += """
                ],
              },
            };

            /** Enables the pins for every fetch/XMLHttpRequest request of the app. */
            export async function configurePinningLabPinning() {
              await initializeSslPinning(pinningLabPinningOptions);
            }

            """
        return [ExportFile(name: ExportFormat.reactNative.fileName, text: s)]
    }
}

extension ExportFormat {
    /// react-native-ssl-public-key-pinning's `initializeSslPinning` options, as a JavaScript (ES module) file.
    public static let reactNative = ExportFormat(
        "react-native", fileName: "sslPinning.js", requiresTwoPins: true, render: ReactNativeExport.module)
}
