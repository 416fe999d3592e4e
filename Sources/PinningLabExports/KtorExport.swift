import Foundation
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
        s += OkHttpExport.builderAdds(e, indent: 8)
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

extension ExportFormat {
    /// Ktor's client on the OkHttp engine with an OkHttp `CertificatePinner`, in Kotlin.
    public static let ktorKotlin = ExportFormat(
        "ktor-kotlin", fileName: "PinningLabKtorPins.kt", render: KtorExport.kotlin)
}
