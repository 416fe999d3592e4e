public import Foundation

/// What an entity of the lab PKI is for.
public struct Role: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let root = Role(rawValue: "root")
    public static let intermediate = Role(rawValue: "intermediate")
    public static let leaf = Role(rawValue: "leaf")
    public static let client = Role(rawValue: "client")
    public static let all: [Role] = [.root, .intermediate, .leaf, .client]
    public var isCA: Bool { self == .root || self == .intermediate }
    public var description: String { rawValue }
    /// The role with its indefinite article, for messages: "a root", "an intermediate".
    package var withArticle: String { (rawValue.first.map { "aeiou".contains($0) } == true ? "an " : "a ") + rawValue }
}

/// A key algorithm and size.
public struct KeyType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let p256 = KeyType(rawValue: "p256")
    public static let p384 = KeyType(rawValue: "p384")
    public static let ed25519 = KeyType(rawValue: "ed25519")
    public static let rsa1024 = KeyType(rawValue: "rsa1024")
    public static let rsa2048 = KeyType(rawValue: "rsa2048")
    public static let rsa3072 = KeyType(rawValue: "rsa3072")
    public static let rsa4096 = KeyType(rawValue: "rsa4096")
    /// ML-DSA-65 (FIPS 204; RFC 9881 OID 2.16.840.1.101.3.4.3.18), a post-quantum signature key. Opt-in: only a spec
    /// that names it makes one (swift-crypto has it on Linux; on Apple platforms only from macOS 26).
    public static let mldsa65 = KeyType(rawValue: "mldsa65")
    /// ML-DSA-87 (RFC 9881 OID 2.16.840.1.101.3.4.3.19).
    public static let mldsa87 = KeyType(rawValue: "mldsa87")
    public static let all: [KeyType] = [
        .p256, .p384, .ed25519, .rsa1024, .rsa2048, .rsa3072, .rsa4096, .mldsa65, .mldsa87,
    ]
    public var isRSA: Bool { rawValue.hasPrefix("rsa") }
    /// A post-quantum ML-DSA key: its certificates are built and signed by the lab's own DER code (swift-certificates
    /// has no ML-DSA), and OpenSSL before 3.5, GnuTLS 3.7 and most pinning libraries cannot use it.
    public var isMLDSA: Bool { rawValue.hasPrefix("mldsa") }
    /// EC and Ed25519 keys can be derived from a seed; RSA keys are always random.
    public var isDeterministic: Bool { !isRSA }
    public var description: String { rawValue }
    /// A short human label: "P-256", "RSA-2048", "Ed25519".
    public var displayName: String {
        switch self {
        case .p256: return "P-256"
        case .p384: return "P-384"
        case .ed25519: return "Ed25519"
        case .mldsa65: return "ML-DSA-65"
        case .mldsa87: return "ML-DSA-87"
        default: return isRSA ? "RSA-" + rawValue.dropFirst(3) : rawValue
        }
    }
}

/// The hashes a client may hold for one certificate.
public struct Pins: Sendable, Hashable, Codable {
    /// SHA-256 of the DER SubjectPublicKeyInfo: the standard pin (OkHttp, curl, TrustKit, Android, HPKP).
    public var spkiSHA256: [UInt8]
    /// SHA-256 of the whole certificate DER.
    public var certificateSHA256: [UInt8]
    /// SHA-256 of the bare key bytes iOS `SecKeyCopyExternalRepresentation` returns (PKCS#1 for RSA,
    /// X9.63 `04||X||Y` for EC, the 32 raw bytes for Ed25519). Not a standard pin: kept to teach the mismatch.
    public var rawKeySHA256: [UInt8]

    public init(spkiSHA256: [UInt8], certificateSHA256: [UInt8], rawKeySHA256: [UInt8]) {
        self.spkiSHA256 = spkiSHA256
        self.certificateSHA256 = certificateSHA256
        self.rawKeySHA256 = rawKeySHA256
    }

    public var spkiBase64: String { Data(spkiSHA256).base64EncodedString() }
    public var spkiHex: String { spkiSHA256.hexString }
    public var certificateBase64: String { Data(certificateSHA256).base64EncodedString() }
    public var certificateHex: String { certificateSHA256.hexString }
    public var rawKeyBase64: String { Data(rawKeySHA256).base64EncodedString() }
    public var rawKeyHex: String { rawKeySHA256.hexString }
}

extension [UInt8] {
    /// Lower-case hexadecimal, no separators.
    package var hexString: String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: count * 2) { out in
            digits.withUTF8Buffer { d in
                for (i, b) in enumerated() {
                    out[2 * i] = d[Int(b >> 4)]
                    out[2 * i + 1] = d[Int(b & 0x0f)]
                }
            }
            return count * 2
        }
    }
}

/// One issued entity of the lab PKI: its certificate, its key and the chain up to (not including) its root.
public struct Identity: Sendable, Hashable {
    /// The entity's name in the spec, e.g. `leaf-v1`.
    public var name: String
    public var role: Role
    /// The issuing entity's name; equal to `name` when self-signed.
    public var issuerName: String
    /// The name of the kept key (e.g. `K1`); identities sharing a key share the SPKI pin.
    public var keyName: String
    public var keyType: KeyType
    /// DER of the certificate.
    public var certificateDER: [UInt8]
    /// PKCS#8 DER of the private key.
    public var privateKeyPKCS8DER: [UInt8]
    /// DER of the issuers above this certificate, nearest first, stopping before the self-signed root
    /// (what a server sends after its leaf). Empty for roots and self-signed certificates.
    public var issuerChainDER: [[UInt8]]
    /// DER of the self-signed root at the top of the chain (this certificate itself for a root).
    public var rootDER: [UInt8]
    public var rootName: String
    public var subject: String
    public var issuer: String
    public var serialHex: String
    public var notBefore: Date
    public var notAfter: Date
    /// DNS names and IP addresses in the subjectAltName.
    public var hosts: [String]
    public var pins: Pins
    /// The TLS-encoded `SignedCertificateTimestampList` over this certificate (`tlsSCTs:` in the spec): what a
    /// server sends in the `signed_certificate_timestamp` TLS extension (type 18). Wrap it with
    /// ``SignedCertificateTimestamp/listExtensionValue(_:)`` for an OCSP response's SCT extension.
    public var signedCertificateTimestampList: [UInt8]? = nil
    /// DER of the precertificate (poison extension 1.3.6.1.4.1.11129.2.4.3) the embedded SCTs were issued for.
    public var precertificateDER: [UInt8]? = nil

    public init(
        name: String, role: Role, issuerName: String, keyName: String, keyType: KeyType,
        certificateDER: [UInt8], privateKeyPKCS8DER: [UInt8], issuerChainDER: [[UInt8]], rootDER: [UInt8],
        rootName: String, subject: String, issuer: String, serialHex: String, notBefore: Date, notAfter: Date,
        hosts: [String], pins: Pins
    ) {
        self.name = name
        self.role = role
        self.issuerName = issuerName
        self.keyName = keyName
        self.keyType = keyType
        self.certificateDER = certificateDER
        self.privateKeyPKCS8DER = privateKeyPKCS8DER
        self.issuerChainDER = issuerChainDER
        self.rootDER = rootDER
        self.rootName = rootName
        self.subject = subject
        self.issuer = issuer
        self.serialHex = serialHex
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.hosts = hosts
        self.pins = pins
    }

    /// The chain a well-configured server sends: this certificate, then its issuers, without the root.
    public var servedChainDER: [[UInt8]] { [certificateDER] + issuerChainDER }
    public var isSelfSigned: Bool { issuerName == name }
}
