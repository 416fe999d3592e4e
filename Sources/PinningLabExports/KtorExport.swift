import Foundation
import PinningLab
import PinningLabPKI

/// Ktor's HTTP client on its OkHttp engine: an OkHttp `CertificatePinner` installed through
/// `HttpClient(OkHttp) { engine { config { certificatePinner(…) } } }`, in Kotlin. (Ktor's Darwin engine has a
/// `CertificatePinner` of its own with the same `sha256/BASE64` pins; this export is for Android and the JVM.)
enum KtorExport {
    static func kotlin(_ e: PinExport) -> [ExportFile] {
        var s = slashComment(e.headerLines(.ktorKotlin))
        s += """
            import io.ktor.client.HttpClient
            import io.ktor.client.engine.okhttp.OkHttp
            import okhttp3.CertificatePinner

            object PinningLabKtorPins {
                const val HOST = \(quoted(e.host))

                val certificatePinner: CertificatePinner = CertificatePinner.Builder()

            """
        for pattern in OkHttpExport.patterns(e) {
            for p in e.spkiPins {
                s += "        .add(\(quoted(pattern)), \(quoted(PinFormat.okhttpPin(p.spkiBase64))))  // \(p.label)\n"
            }
        }
        s += """
                    .build()

                /** A Ktor client whose OkHttp engine refuses any chain without one of the pinned keys. */
                fun client(): HttpClient = HttpClient(OkHttp) {
                    engine {
                        config {
                            certificatePinner(certificatePinner)
                        }
                    }
                }
            }

            """
        return [ExportFile(name: ExportFormat.ktorKotlin.fileName, text: s)]
    }
}
