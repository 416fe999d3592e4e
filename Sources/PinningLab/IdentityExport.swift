import Foundation
import PinningLabOpenSSL
public import PinningLabPKI

/// The forms one PKI identity can be exported in (`pinlab pki export --format`, the control API's
/// `GET /identities/{name}?format=`).
public struct IdentityExportFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The certificate, PEM.
    public static let pem = IdentityExportFormat(rawValue: "pem")
    /// The certificate, DER (`.cer`, as iOS bundles take it).
    public static let der = IdentityExportFormat(rawValue: "der")
    /// The certificate and its issuers without the root (what a server sends), PEM.
    public static let chain = IdentityExportFormat(rawValue: "chain")
    /// The chain and the root, PEM.
    public static let fullchain = IdentityExportFormat(rawValue: "fullchain")
    /// The identity's root, PEM.
    public static let root = IdentityExportFormat(rawValue: "root")
    /// The private key, PKCS#8 PEM.
    public static let key = IdentityExportFormat(rawValue: "key")
    /// Key, certificate and chain as PKCS#12 (PBE-SHA1-3DES, SHA-1 MAC: what `SecPKCS12Import` reads).
    public static let p12 = IdentityExportFormat(rawValue: "p12")
    public static let all: [IdentityExportFormat] = [.pem, .der, .chain, .fullchain, .root, .key, .p12]

    /// A format by name; `cer` is `der` and `pkcs12` is `p12`.
    public init?(parsing text: String) {
        let name = ["cer": "der", "pkcs12": "p12"][text] ?? text
        guard Self.all.contains(where: { $0.rawValue == name }) else { return nil }
        rawValue = name
    }

    /// DER and PKCS#12 are binary; everything else is PEM text.
    public var isBinary: Bool { self == .der || self == .p12 }
    /// Holds a private key.
    public var isSecret: Bool { self == .key || self == .p12 }
    /// The media type to serve it with.
    public var mediaType: String {
        switch self {
        case .der: return "application/pkix-cert"
        case .p12: return "application/x-pkcs12"
        default: return "application/x-pem-file"
        }
    }
    public var description: String { rawValue }
}

extension LabPKI {
    /// The bytes of `identity` in `format`. PKCS#12 is built with OpenSSL under `password` (default: the lab's,
    /// ``LabPKI/pkcs12Password``); building it is a C call of a few tens of milliseconds, so async callers run this
    /// off Swift's cooperative pool.
    public func export(_ identity: Identity, as format: IdentityExportFormat, password: String? = nil) throws -> [UInt8]
    {
        let pem = { (ders: [[UInt8]]) in Array(PEM.encode(ders).utf8) }
        switch format {
        case .der: return identity.certificateDER
        case .chain: return pem(identity.servedChainDER)
        case .fullchain:
            return pem(identity.isSelfSigned ? identity.servedChainDER : identity.servedChainDER + [identity.rootDER])
        case .root: return pem([identity.rootDER])
        case .key: return Array(PEM.encode(identity.privateKeyPKCS8DER, label: "PRIVATE KEY").utf8)
        case .p12:
            return try OpenSSLPKCS12().encode(
                privateKeyPKCS8DER: identity.privateKeyPKCS8DER, certificateDER: identity.certificateDER,
                chainDER: identity.issuerChainDER, friendlyName: identity.name, password: password ?? pkcs12Password)
        default: return pem([identity.certificateDER])
        }
    }
}
