import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A private key of the lab, of any supported type.
struct LabKey: @unchecked Sendable {  // wraps immutable swift-crypto key values, which are thread-safe
    enum Backing {
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
        /// ML-DSA-65 or ML-DSA-87 (``type`` says which), kept as its seed and public key: swift-crypto's ML-DSA types
        /// are CryptoKit's on Apple platforms, available from macOS 26 only, so no stored value names them.
        case mldsa(MLDSAKey)
    }
    let backing: Backing
    let type: KeyType

    /// The key as swift-certificates signs with it; an ML-DSA key has none (swift-certificates 1.21 knows no ML-DSA).
    var certificatePrivateKey: Certificate.PrivateKey {
        get throws {
            switch backing {
            case .p256(let k): return Certificate.PrivateKey(k)
            case .p384(let k): return Certificate.PrivateKey(k)
            case .ed25519(let k): return Certificate.PrivateKey(k)
            case .rsa(let k): return Certificate.PrivateKey(k)
            case .mldsa: throw Self.noSwiftCertificatesKey(type)
            }
        }
    }

    /// The public key as swift-certificates holds it; an ML-DSA key has none (use ``spkiDER``).
    var publicKey: Certificate.PublicKey {
        get throws {
            switch backing {
            case .p256(let k): return Certificate.PublicKey(k.publicKey)
            case .p384(let k): return Certificate.PublicKey(k.publicKey)
            case .ed25519(let k): return Certificate.PublicKey(k.publicKey)
            case .rsa(let k): return Certificate.PublicKey(k.publicKey)
            case .mldsa: throw Self.noSwiftCertificatesKey(type)
            }
        }
    }

    /// DER of the SubjectPublicKeyInfo: what the SPKI pin hashes (RFC 9881's form for ML-DSA).
    var spkiDER: [UInt8] {
        get throws {
            switch backing {
            case .mldsa(let k): return MLDSAEncoding.spki(k.publicKey, type: type)
            default: return try Builder.der(try publicKey)
            }
        }
    }

    /// The subjectPublicKey BIT STRING's contents (the key identifier and the "raw key" pin hash it).
    var subjectPublicKeyBytes: [UInt8] {
        get throws {
            switch backing {
            case .mldsa(let k): return k.publicKey
            default: return Array(try publicKey.subjectPublicKeyInfoBytes)
            }
        }
    }

    static func noSwiftCertificatesKey(_ type: KeyType) -> PKIError {
        PKIError(
            .unsupportedSignature, "\(type.displayName) keys cannot be used here (swift-certificates has no ML-DSA)",
            fix: "use a P-256, P-384, Ed25519 or RSA key for this purpose")
    }

    /// PKCS#8 DER.
    var pkcs8DER: [UInt8] {
        switch backing {
        case .p256(let k): return Array(k.derRepresentation)
        case .p384(let k): return Array(k.derRepresentation)
        case .rsa(let k): return Array(k.pkcs8DERRepresentation)
        case .ed25519(let k):
            // OneAsymmetricKey v0, algorithm id-Ed25519 (1.3.101.112), privateKey OCTET STRING { OCTET STRING(32) }.
            return ed25519PKCS8Prefix + Array(k.rawRepresentation)
        case .mldsa(let k): return MLDSAEncoding.pkcs8(seed: k.seed, type: type)
        }
    }

    static func generate(_ type: KeyType) throws -> LabKey {
        switch type {
        case .p256: return LabKey(backing: .p256(P256.Signing.PrivateKey()), type: type)
        case .p384: return LabKey(backing: .p384(P384.Signing.PrivateKey()), type: type)
        case .ed25519: return LabKey(backing: .ed25519(Curve25519.Signing.PrivateKey()), type: type)
        case .rsa1024:
            return LabKey(backing: .rsa(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))), type: type)
        case .rsa2048: return LabKey(backing: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)), type: type)
        case .rsa3072: return LabKey(backing: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits3072)), type: type)
        case .rsa4096: return LabKey(backing: .rsa(try _RSA.Signing.PrivateKey(keySize: .bits4096)), type: type)
        case .mldsa65, .mldsa87: return try mldsa(seed: (0..<32).map { _ in UInt8.random(in: 0...255) }, type: type)
        default: throw PKIError(.unknownKeyType, "cannot generate a key of type \(type)")
        }
    }

    /// Derives an EC or Ed25519 key from a seed: the same seed and name give the same key on every machine.
    static func derive(_ type: KeyType, seed: String, name: String) throws -> LabKey {
        let ikm = SymmetricKey(data: Data(seed.utf8))
        for counter in 0..<64 {
            let info = Data("PinningLab key v1|\(name)|\(type.rawValue)|\(counter)".utf8)
            let size = type == .p384 ? 48 : 32
            let bytes = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: ikm, salt: Data("PinningLab".utf8), info: info, outputByteCount: size
            ).withUnsafeBytes { Array($0) }
            switch type {
            case .p256:
                if let k = try? P256.Signing.PrivateKey(rawRepresentation: bytes) {
                    return LabKey(backing: .p256(k), type: type)
                }
            case .p384:
                if let k = try? P384.Signing.PrivateKey(rawRepresentation: bytes) {
                    return LabKey(backing: .p384(k), type: type)
                }
            case .ed25519:
                return LabKey(
                    backing: .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: bytes)), type: type)
            case .mldsa65, .mldsa87:
                return try mldsa(seed: bytes, type: type)  // FIPS 204 KeyGen from a 32-byte seed
            default:
                throw PKIError(.unknownKeyType, "\(type) keys cannot be derived from a seed")
            }
        }
        throw PKIError(.issuanceFailed, "could not derive a key for \(name)")
    }

    /// Reads a PKCS#8 DER key of the expected type.
    static func read(pkcs8 der: [UInt8], type: KeyType) throws -> LabKey {
        switch type {
        case .p256: return LabKey(backing: .p256(try P256.Signing.PrivateKey(derRepresentation: der)), type: type)
        case .p384: return LabKey(backing: .p384(try P384.Signing.PrivateKey(derRepresentation: der)), type: type)
        case .ed25519:
            guard der.count == 48, Array(der.prefix(16)) == ed25519PKCS8Prefix else {
                throw PKIError(.keyTypeChanged, "the key is \(sniffType(pkcs8: der)), not Ed25519")
            }
            return LabKey(
                backing: .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))), type: type)
        case .mldsa65, .mldsa87:
            guard let (seed, found) = MLDSAEncoding.seed(pkcs8: der), found == type else {
                throw PKIError(.keyTypeChanged, "the key is \(sniffType(pkcs8: der)), not \(type.displayName)")
            }
            return try mldsa(seed: seed, type: type)
        default:
            let k = try _RSA.Signing.PrivateKey(unsafeDERRepresentation: der)
            let expected = Int(type.rawValue.dropFirst(3)) ?? 0
            guard k.keySizeInBits == expected else {
                throw PKIError(.keyTypeChanged, "the key is RSA-\(k.keySizeInBits), not \(type.displayName)")
            }
            return LabKey(backing: .rsa(k), type: type)
        }
    }

    /// The key type a PKCS#8 DER key really has, for error messages.
    static func sniffType(pkcs8 der: [UInt8]) -> String {
        if (try? P256.Signing.PrivateKey(derRepresentation: der)) != nil { return "P-256" }
        if (try? P384.Signing.PrivateKey(derRepresentation: der)) != nil { return "P-384" }
        if der.count == 48, Array(der.prefix(16)) == ed25519PKCS8Prefix { return "Ed25519" }
        if let (_, type) = MLDSAEncoding.seed(pkcs8: der) { return type.displayName }
        if let k = try? _RSA.Signing.PrivateKey(unsafeDERRepresentation: der) { return "RSA-\(k.keySizeInBits)" }
        return "unreadable"
    }
}

extension LabKey {
    /// An ML-DSA key from its 32-byte seed (FIPS 204 ML-DSA.KeyGen_internal).
    static func mldsa(seed: [UInt8], type: KeyType) throws -> LabKey {
        LabKey(backing: .mldsa(try MLDSAKey(seed: seed, type: type)), type: type)
    }

    /// A pure ML-DSA signature (empty context, RFC 9881 §3) of `message`, or nil for a classical key.
    func mldsaSignature(_ message: [UInt8]) throws -> [UInt8]? {
        guard case .mldsa(let k) = backing else { return nil }
        return try k.signature(message, type: type)
    }
}

/// An ML-DSA private key as the seed it is made from and its FIPS 204 public key. Every use of swift-crypto's
/// `MLDSA65`/`MLDSA87` is behind `#available(macOS 26, …)` (on Apple platforms they are CryptoKit's, from macOS 26;
/// on Linux the check is always true) and, on Apple platforms, a Swift 6.2 compiler (Xcode 26's SDK has them): an
/// earlier macOS gets ``MLDSAAvailability``'s error, never a crash or a build failure.
struct MLDSAKey: Sendable {
    let seed: [UInt8]
    let publicKey: [UInt8]

    init(seed: [UInt8], type: KeyType) throws {
        self.seed = seed
        #if !canImport(Darwin) || compiler(>=6.2)
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
                throw Self.unavailable(type)
            }
            switch type {
            case .mldsa65:
                publicKey = Array(
                    try MLDSA65.PrivateKey(seedRepresentation: seed, publicKey: nil).publicKey.rawRepresentation)
            case .mldsa87:
                publicKey = Array(
                    try MLDSA87.PrivateKey(seedRepresentation: seed, publicKey: nil).publicKey.rawRepresentation)
            default: throw PKIError(.unknownKeyType, "\(type) is not an ML-DSA key type")
            }
        #else
            throw Self.unavailable(type)
        #endif
    }

    /// A pure ML-DSA signature (empty context) of `message` by the key of this seed.
    func signature(_ message: [UInt8], type: KeyType) throws -> [UInt8] {
        #if !canImport(Darwin) || compiler(>=6.2)
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
                throw Self.unavailable(type)
            }
            switch type {
            case .mldsa65:
                return Array(try MLDSA65.PrivateKey(seedRepresentation: seed, publicKey: nil).signature(for: message))
            case .mldsa87:
                return Array(try MLDSA87.PrivateKey(seedRepresentation: seed, publicKey: nil).signature(for: message))
            default: throw PKIError(.unknownKeyType, "\(type) is not an ML-DSA key type")
            }
        #else
            throw Self.unavailable(type)
        #endif
    }

    static func unavailable(_ type: KeyType) -> PKIError {
        PKIError(
            .keyTypeUnavailable,
            MLDSAAvailability.missingReason
                ?? "\(type.displayName) keys need swift-crypto's ML-DSA, which this build of pinlab does not have",
            fix: "use Linux or macOS 26 or later (built with Xcode 26) for ML-DSA identities")
    }
}

/// OneAsymmetricKey v0, algorithm id-Ed25519 (1.3.101.112), privateKey OCTET STRING { OCTET STRING (32 bytes) }.
let ed25519PKCS8Prefix: [UInt8] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]

// MARK: - PEM

/// PEM armour: base64 in 64-column lines between BEGIN and END lines.
package enum PEM {
    /// One PEM block.
    package static func encode(_ der: [UInt8], label: String = "CERTIFICATE") -> String {
        let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(b64)\n-----END \(label)-----\n"
    }

    /// Several blocks, concatenated (a chain).
    package static func encode(_ ders: [[UInt8]], label: String = "CERTIFICATE") -> String {
        ders.map { encode($0, label: label) }.joined()
    }

    /// The DER of every block with `label` in `text`, in order.
    /// One forward pass over the UTF-8 bytes (a search from the start of what is left, per block, was quadratic on
    /// Linux); a block whose body is not base64 is skipped.
    package static func decodeAll(_ text: String, label: String = "CERTIFICATE") -> [[UInt8]] {
        let begin = Array("-----BEGIN \(label)-----".utf8)
        let end = Array("-----END \(label)-----".utf8)
        var out: [[UInt8]] = []
        var copy = text
        copy.withUTF8 { bytes in
            /// The index of the first `marker` at or after `from`, or nil.
            func find(_ marker: [UInt8], from: Int) -> Int? {
                guard marker.count <= bytes.count else { return nil }
                var i = from
                while i + marker.count <= bytes.count {
                    if bytes[i] == marker[0] {
                        var k = 1
                        while k < marker.count && bytes[i + k] == marker[k] { k += 1 }
                        if k == marker.count { return i }
                    }
                    i += 1
                }
                return nil
            }
            var from = 0
            var body: [UInt8] = []
            while let b = find(begin, from: from), let e = find(end, from: b + begin.count) {
                body.removeAll(keepingCapacity: true)
                for byte in bytes[(b + begin.count)..<e] where !(byte == 0x20 || (0x09...0x0D).contains(byte)) {
                    body.append(byte)
                }
                if let d = Data(base64Encoded: Data(body)) { out.append(Array(d)) }
                from = e + end.count
            }
        }
        return out
    }

    /// The DER of the first block with `label`, or nil.
    package static func decode(_ text: String, label: String) -> [UInt8]? { decodeAll(text, label: label).first }
}
