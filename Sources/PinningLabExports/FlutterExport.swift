import Foundation
import PinningLabPKI

/// Flutter / Dart: the `http_certificate_pinning` package (diefferson/http_certificate_pinning, a fork of
/// ssl_pinning_plugin that adds a Dio interceptor and an `http` client). Chosen over ssl_pinning_plugin (the same
/// check, without the Dio and `http` integrations Flutter apps use) and over dio with a `SecurityContext` and
/// `badCertificateCallback`: that callback runs only when the chain is untrusted, so a chain ending at any trusted
/// root — a user-installed interception root included — never reaches it; it is not pinning.
///
/// Its pins are SHA-256 fingerprints of the whole DER certificate, written as colon-separated upper-case hex
/// (the README: `openssl x509 -noout -fingerprint -sha256`), not SPKI hashes: the export writes the certificate
/// fingerprint of each pinned identity, so a renewal with the same key breaks them. The package has no host
/// patterns: `CertificatePinningInterceptor` checks the fingerprints against the request's base URL, whatever its
/// host, in a separate native connection made before the request (the request itself goes through dart:io, which
/// also ignores Android's network_security_config pins, flutter#96722).
enum FlutterExport {
    /// `AB:CD:…`: the form the package's README shows.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    static func dart(_ e: PinExport) -> [ExportFile] {
        var header = e.headerLines(.flutter)
        header += [
            "http_certificate_pinning compares SHA-256 fingerprints of the whole certificate (colon-separated hex), not",
            "the SPKI hashes above: the fingerprints below are those of the pinned identities' certificates, so a new",
            "certificate for the same key (a renewal) no longer matches; ship the next certificate's fingerprint first.",
            "The package has no host patterns and no includeSubdomains: every request of the Dio client is checked, "
                + "whatever its host\(e.includeSubdomains ? " (the --include-subdomains of this export has no equivalent here)" : "").",
            "The check is a separate native connection made before each request; dart:io ignores Android's",
            "network_security_config pins (flutter#96722). A badCertificateCallback comparing fingerprints is not",
            "pinning: it runs only for chains the device does not trust.",
        ]
        var s = slashComment(header)
        s += """
            import 'package:dio/dio.dart';
            import 'package:http_certificate_pinning/http_certificate_pinning.dart';

            /// The host these fingerprints were exported for.
            const String pinningLabHost = \(quoted(e.host));

            /// SHA-256 fingerprints of the pinned certificates (DER), as http_certificate_pinning compares them.
            const List<String> pinningLabCertificateFingerprints = <String>[

            """
        var seen = Set<String>()
        for p in e.pins {
            guard let id = p.identity else { continue }
            let fp = fingerprint(id.pins.certificateSHA256)
            guard seen.insert(fp).inserted else { continue }
            s += "  \(quoted(fp)), // certificate of \(p.label)\n"
        }
        s += """
            ];

            /// A Dio client whose every request is preceded by the fingerprint check.
            Dio pinningLabDio(String baseUrl) {
              return Dio(BaseOptions(baseUrl: baseUrl))
                ..interceptors.add(CertificatePinningInterceptor(
                    allowedSHAFingerprints: pinningLabCertificateFingerprints));
            }

            """
        return [ExportFile(name: ExportFormat.flutter.fileName, text: s)]
    }
}

extension ExportFormat {
    /// Flutter's `http_certificate_pinning` (certificate SHA-256 fingerprints) as a Dart file with a Dio client.
    public static let flutter = ExportFormat(
        "flutter", fileName: "pinning_lab_pins.dart", pinsCertificates: true, render: FlutterExport.dart)
}
