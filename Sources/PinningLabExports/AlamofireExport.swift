import Foundation
import PinningLabPKI

/// Alamofire 5: `ServerTrustManager(evaluators: [host: PublicKeysTrustEvaluator(...)])`, the
/// `PinnedCertificatesTrustEvaluator` variant, and the `.cer` files (DER) the evaluators load. Alamofire compares
/// keys and certificates, not hashes, so the pins travel as certificates: for an SPKI pin, any certificate that
/// carries the pinned key (the pinned identity's own).
enum AlamofireExport {
    static func cerName(_ p: ExportPin) -> String { p.identity?.name ?? p.name }

    static func render(_ e: PinExport) -> [ExportFile] {
        let pins = e.spkiPins
        let names = pins.map { quoted(cerName($0)) }.joined(separator: ", ")
        let primaryIsCertificates = e.pinsCertificates
        var s = slashComment(
            e.headerLines(.alamofire) + [
                "Add these files to the app target (Copy Bundle Resources): "
                    + pins.map { cerName($0) + ".cer" }.joined(separator: ", ") + ".",
                "They are loaded by name, not with Bundle.main.af.certificates (which takes every .cer/.crt/.der in the",
                "bundle: a root certificate bundled for another reason would silently become a pin).",
                "Default validation stays on: the device must trust the lab root (install the mobileconfig export).",
            ])
        s += """
            import Alamofire
            import Foundation
            import Security

            enum PinningLabTrust {
                static let host = \(quoted(e.host))
                /// The pinned certificates' file names (without `.cer`), primary first.
                static let certificateNames = [\(names)]

                /// The pinned certificates from the bundle; a missing file is a programming error.
                static func certificates(in bundle: Bundle = .main) -> [SecCertificate] {
                    certificateNames.map { name in
                        guard let url = bundle.url(forResource: name, withExtension: "cer"),
                              let data = try? Data(contentsOf: url),
                              let certificate = SecCertificateCreateWithData(nil, data as CFData)
                        else { preconditionFailure("\\(name).cer is missing from the bundle or is not DER") }
                        return certificate
                    }
                }

                /// Public-key pinning: accepts a validated chain holding one of the pinned keys (survives renewals
                /// that keep the key).
                static func publicKeysManager(in bundle: Bundle = .main) -> ServerTrustManager {
                    ServerTrustManager(evaluators: [
                        host: PublicKeysTrustEvaluator(
                            keys: certificates(in: bundle).af.publicKeys,
                            performDefaultValidation: true,
                            validateHost: true),
                    ])
                }

                /// Certificate pinning: accepts a validated chain holding one of the pinned certificates exactly
                /// (breaks at every renewal).
                static func pinnedCertificatesManager(in bundle: Bundle = .main) -> ServerTrustManager {
                    ServerTrustManager(evaluators: [
                        host: PinnedCertificatesTrustEvaluator(
                            certificates: certificates(in: bundle),
                            acceptSelfSignedCertificates: false,
                            performDefaultValidation: true,
                            validateHost: true),
                    ])
                }

                /// The session to use; `ServerTrustManager` refuses hosts without an evaluator
                /// (`allHostsMustBeEvaluated` defaults to true).
                static let session = Session(serverTrustManager: \(primaryIsCertificates ? "pinnedCertificatesManager()" : "publicKeysManager()"))
            }

            """
        var files = [ExportFile(name: ExportFormat.alamofire.fileName, text: s)]
        for p in pins {
            if let id = p.identity { files.append(ExportFile(name: cerName(p) + ".cer", bytes: id.certificateDER)) }
        }
        return files
    }
}

extension ExportFormat {
    /// Alamofire 5: a `ServerTrustManager` with `PublicKeysTrustEvaluator` and `PinnedCertificatesTrustEvaluator`,
    /// plus the `.cer` files (DER) the evaluators load.
    public static let alamofire = ExportFormat(
        "alamofire", fileName: "PinningLabTrust.swift", pinsCertificates: true, render: AlamofireExport.render)
}
