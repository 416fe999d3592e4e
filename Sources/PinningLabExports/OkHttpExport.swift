import Foundation
import PinningLabPKI

/// OkHttp `CertificatePinner` (`sha256/BASE64` pins for the host), in Java and in Kotlin. The classes are complete
/// files (default package: add your own `package` line) so they compile as they are.
enum OkHttpExport {
    /// The host patterns: the host, and with subdomains `*.host`. OkHttp 3 (Debian's 3.13) knows only `*.`, one
    /// label deep; `**.` (any depth) came with OkHttp 4, so it is not used here.
    static func patterns(_ e: PinExport) -> [String] { e.includeSubdomains ? [e.host, "*." + e.host] : [e.host] }

    /// The `CertificatePinner.Builder` calls, one `.add(pattern, "sha256/…")` line per host pattern and pin, each
    /// indented by `indent` spaces (Java, Kotlin and Ktor's OkHttp engine share them).
    static func builderAdds(_ e: PinExport, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var s = ""
        for pattern in patterns(e) {
            for p in e.spkiPins {
                s += "\(pad).add(\(quoted(pattern)), \(quoted(PinFormat.okhttpPin(p.spkiBase64))))  // \(p.label)\n"
            }
        }
        return s
    }

    static func java(_ e: PinExport) -> [ExportFile] {
        var s = slashComment(e.headerLines(.okHttpJava))
        s += """
            import okhttp3.CertificatePinner;

            public final class PinningLabPins {
                public static final String HOST = \(quoted(e.host));

                private PinningLabPins() {}

                /** The pinner for {@code OkHttpClient.Builder().certificatePinner(...)}. */
                public static CertificatePinner certificatePinner() {
                    return new CertificatePinner.Builder()

            """
        s += builderAdds(e, indent: 12)
        s += """
                        .build();
                }
            }

            """
        return [ExportFile(name: ExportFormat.okHttpJava.fileName, text: s)]
    }

    static func kotlin(_ e: PinExport) -> [ExportFile] {
        var s = slashComment(e.headerLines(.okHttpKotlin))
        s += """
            import okhttp3.CertificatePinner

            object PinningLabPins {
                const val HOST = \(quoted(e.host))

                /** The pinner for `OkHttpClient.Builder().certificatePinner(...)`. */
                val certificatePinner: CertificatePinner = CertificatePinner.Builder()

            """
        s += builderAdds(e, indent: 8)
        s += "        .build()\n}\n"
        return [ExportFile(name: ExportFormat.okHttpKotlin.fileName, text: s)]
    }
}

extension ExportFormat {
    /// OkHttp `CertificatePinner` in Kotlin.
    public static let okHttpKotlin = ExportFormat(
        "okhttp-kotlin", fileName: "PinningLabPins.kt", render: OkHttpExport.kotlin)

    /// OkHttp `CertificatePinner` in Java.
    public static let okHttpJava = ExportFormat(
        "okhttp-java", fileName: "PinningLabPins.java", render: OkHttpExport.java)
}
