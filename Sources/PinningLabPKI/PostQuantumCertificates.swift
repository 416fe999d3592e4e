internal import Crypto
// ML-DSA keys and certificates (FIPS 204, RFC 9881) in DER the lab writes itself: swift-certificates 1.21 has no
// ML-DSA public key or signature algorithm, so a certificate that carries or is signed by an ML-DSA key is first
// built by swift-certificates around a placeholder key, then its TBSCertificate gets the real SubjectPublicKeyInfo
// and signature AlgorithmIdentifier, and is signed again by the real issuer key.
internal import Foundation
internal import SwiftASN1
internal import X509

/// DER of ML-DSA keys: PKCS#8 with the 32-byte seed, SubjectPublicKeyInfo with the FIPS 204 public key.
enum MLDSAEncoding {
    /// The last arc of id-ml-dsa-65 (2.16.840.1.101.3.4.3.18) and id-ml-dsa-87 (…3.19).
    static func oidLastArc(_ type: KeyType) -> UInt8 { type == .mldsa87 ? 0x13 : 0x12 }

    /// AlgorithmIdentifier { id-ml-dsa-NN } with absent parameters (RFC 9881 §2).
    static func algorithmIdentifier(_ type: KeyType) -> [UInt8] {
        DERBytes.tlv(0x30, [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, oidLastArc(type)])
    }

    /// SubjectPublicKeyInfo { algorithm, BIT STRING (0 unused bits) public key }.
    static func spki(_ publicKey: [UInt8], type: KeyType) -> [UInt8] {
        DERBytes.tlv(0x30, algorithmIdentifier(type) + DERBytes.tlv(0x03, [0x00] + publicKey))
    }

    /// OneAsymmetricKey v0 whose privateKey is the seed-only ML-DSA-PrivateKey choice: `[0] IMPLICIT OCTET STRING
    /// (SIZE (32))` (RFC 9881 §6). OpenSSL 3.5 and Go 1.27 read this form.
    static func pkcs8(seed: [UInt8], type: KeyType) -> [UInt8] {
        DERBytes.tlv(
            0x30, [0x02, 0x01, 0x00] + algorithmIdentifier(type) + DERBytes.tlv(0x04, DERBytes.tlv(0x80, seed)))
    }

    /// The seed and key type of an ML-DSA PKCS#8 key (seed-only or "both" form), or nil when it is none.
    static func seed(pkcs8 der: [UInt8]) -> ([UInt8], KeyType)? {
        guard let root = try? DER.parse(der), case .constructed(let top) = root.content else { return nil }
        let parts = Array(top)
        guard parts.count >= 3, case .constructed(let alg) = parts[1].content,
            let oidNode = Array(alg).first, oidNode.identifier == .objectIdentifier,
            let oid = try? ASN1ObjectIdentifier(derEncoded: oidNode)
        else { return nil }
        let type: KeyType
        switch oid.description {
        case "2.16.840.1.101.3.4.3.18": type = .mldsa65
        case "2.16.840.1.101.3.4.3.19": type = .mldsa87
        default: return nil
        }
        guard case .primitive(let inner) = parts[2].content, let choice = try? DER.parse(Array(inner)) else {
            return nil
        }
        switch choice.content {
        case .primitive(let bytes)
        where choice.identifier.tagClass == .contextSpecific && choice.identifier.tagNumber == 0:
            return bytes.count == 32 ? (Array(bytes), type) : nil
        case .constructed(let both):  // SEQUENCE { seed OCTET STRING, expandedKey OCTET STRING }
            guard let first = Array(both).first, case .primitive(let bytes) = first.content, bytes.count == 32 else {
                return nil
            }
            return (Array(bytes), type)
        default:
            return nil
        }
    }
}

/// Tag-length-value DER for the few structures built by hand.
enum DERBytes {
    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 {
            bytes.insert(UInt8(v & 0xff), at: 0)
            v >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }

    /// The DER of each child of the SEQUENCE `der`.
    static func children(_ der: [UInt8]) throws -> [[UInt8]] {
        let node = try DER.parse(der)
        guard case .constructed(let nodes) = node.content else {
            throw PKIError(.issuanceFailed, "not a DER SEQUENCE")
        }
        return nodes.map { Array($0.encodedBytes) }
    }

    /// The SubjectPublicKeyInfo DER of a DER certificate, read without knowing its algorithm.
    static func spki(certificate der: [UInt8]) throws -> [UInt8] {
        let tbs = try children(try children(der)[0])
        // TBSCertificate: [0] version (optional), serial, signature, issuer, validity, subject, SPKI.
        let offset = tbs.first?.first == 0xa0 ? 1 : 0
        guard tbs.count > 5 + offset else { throw PKIError(.issuanceFailed, "not a certificate") }
        return tbs[5 + offset]
    }

    /// The subjectPublicKey BIT STRING's contents (after the unused-bits byte) of an SPKI DER.
    static func subjectPublicKey(spki: [UInt8]) throws -> [UInt8] {
        let parts = try children(spki)
        guard parts.count == 2 else { throw PKIError(.issuanceFailed, "not a SubjectPublicKeyInfo") }
        let bitString = try DER.parse(parts[1])
        guard case .primitive(let bytes) = bitString.content, !bytes.isEmpty else {
            throw PKIError(.issuanceFailed, "not a SubjectPublicKeyInfo")
        }
        return Array(bytes.dropFirst())
    }
}

extension Builder {
    /// The placeholder key a certificate is first built around when its subject or issuer key is ML-DSA; neither
    /// its public key nor its signature survives in the certificate.
    static let placeholderKey = P256.Signing.PrivateKey()

    /// A certificate whose subject key or issuer key (or both) is ML-DSA: swift-certificates builds the TBS with the
    /// placeholder key, whose SPKI and signature algorithm are then replaced, and the TBS is signed by `signer`.
    /// `build(publicKey, issuerKey, algorithm)` makes the placeholder certificate.
    static func postQuantumCertificate(
        subject: LabKey, signer: LabKey, hash: SignatureHash?,
        build: (Certificate.PublicKey, Certificate.PrivateKey, Certificate.SignatureAlgorithm) throws -> Certificate
    ) throws -> [UInt8] {
        let placeholderPublic = Certificate.PublicKey(placeholderKey.publicKey)
        let algorithm = signer.type.isMLDSA ? .ecdsaWithSHA256 : signatureAlgorithm(signer: signer.type, hash: hash)
        let issuerKey = signer.type.isMLDSA ? Certificate.PrivateKey(placeholderKey) : try signer.certificatePrivateKey
        let placeholder = try der(
            try build(subject.type.isMLDSA ? placeholderPublic : try subject.publicKey, issuerKey, algorithm))
        let outer = try DERBytes.children(placeholder)
        var tbs = try DERBytes.children(outer[0])
        let offset = tbs.first?.first == 0xa0 ? 1 : 0
        let algorithmID = signer.type.isMLDSA ? MLDSAEncoding.algorithmIdentifier(signer.type) : outer[1]
        tbs[1 + offset] = algorithmID
        tbs[5 + offset] = try subject.spkiDER
        let tbsDER = DERBytes.tlv(0x30, tbs.flatMap { $0 })
        let signature: [UInt8]
        if let s = try signer.mldsaSignature(tbsDER) {
            signature = s
        } else {
            signature = Array(
                try signer.certificatePrivateKey.sign(bytes: tbsDER, signatureAlgorithm: algorithm).rawRepresentation)
        }
        return DERBytes.tlv(0x30, tbsDER + algorithmID + DERBytes.tlv(0x03, [0x00] + signature))
    }
}

/// What the engines say of a key their library cannot load.
package enum PostQuantumKey {
    /// "ML-DSA-65" or "ML-DSA-87" when `pkcs8` is an ML-DSA private key (RFC 9881), else nil.
    package static func name(pkcs8: [UInt8]) -> String? { MLDSAEncoding.seed(pkcs8: pkcs8)?.1.displayName }

    /// The reason a cell with this key is `unsupported` on `library` (e.g. "OpenSSL 3.0.19 1 Jul 2025"), or nil when
    /// the key is no ML-DSA key (then the failure is the key's, not the library's).
    package static func unsupportedReason(pkcs8: [UInt8], library: String, needs: String) -> String? {
        name(pkcs8: pkcs8).map { "\($0) keys need \(needs); this engine runs \(library)" }
    }
}

/// Whether this platform can make ML-DSA keys: swift-crypto on Linux (BoringSSL) always; on Apple platforms
/// swift-crypto is CryptoKit, which has MLDSA65/MLDSA87 from macOS 26 (iOS 26 …) only.
package enum MLDSAAvailability {
    /// Why ML-DSA keys cannot be made here, or nil when they can.
    package static var missingReason: String? {
        #if canImport(Darwin) && compiler(>=6.2)
            if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) { return nil }
            return "ML-DSA keys need macOS 26 or later (swift-crypto uses CryptoKit's MLDSA65 and MLDSA87 on Apple "
                + "platforms); this system runs \(ProcessInfo.processInfo.operatingSystemVersionString)"
        #elseif canImport(Darwin)
            return "ML-DSA keys need a pinlab built with Xcode 26 or later (CryptoKit's MLDSA65 and MLDSA87) running "
                + "on macOS 26 or later; this one was built with an earlier SDK"
        #else
            return nil
        #endif
    }

    /// Refuses, before anything is written, a spec with an ML-DSA key on a platform without ML-DSA.
    static func check(_ spec: PKISpec) throws {
        guard let why = missingReason else { return }
        guard let e = spec.entities.first(where: { $0.keyType.isMLDSA }) else { return }
        // A spec with a part (`lab.yaml + post-quantum.yaml`): the line is the part's, so the file alone is named.
        let combined = spec.file.contains(" + ")
        throw PKIError(
            .keyTypeUnavailable, why, file: spec.file, line: combined ? nil : e.line, entity: e.name, field: "keyType",
            fix: "open this PKI on Linux or macOS 26 or later, or leave the ML-DSA entities out (without "
                + "--post-quantum, the built-in lab has none)")
    }
}
