internal import Crypto
// What OCSP responses and CRLs share: times, algorithm identifiers and signatures, serialized with SwiftASN1's DER
// serializer (swift-certificates keeps its OCSP types internal and has no CRL type).
internal import Foundation
import PinningLabBase
internal import SwiftASN1
internal import X509

/// The issuer (or responder) that signs a revocation artefact: its certificate and key.
struct RevocationSigner: Sendable {
    let certificate: Certificate
    let certificateDER: [UInt8]
    let key: LabKey
    let algorithm: Certificate.SignatureAlgorithm
    /// SHA-1 of the subjectPublicKey BIT STRING's contents: OCSP's issuerKeyHash and byKey, and the CRL's AKI.
    let keyHash: [UInt8]
    /// SHA-1 of the DER of the signer's subject name: a CertID's issuerNameHash.
    let nameHash: [UInt8]

    /// Parses the certificate and key, and hashes the name and key once (every response names them).
    init(_ identity: Identity) throws {
        certificateDER = identity.certificateDER
        certificate = try Certificate(derEncoded: identity.certificateDER)
        key = try LabKey.read(pkcs8: identity.privateKeyPKCS8DER, type: identity.keyType)
        algorithm = Builder.signatureAlgorithm(signer: identity.keyType, hash: nil)
        keyHash = Array(Insecure.SHA1.hash(data: Array(certificate.publicKey.subjectPublicKeyInfoBytes)))
        nameHash = Array(Insecure.SHA1.hash(data: try Builder.der(certificate.subject)))
    }

    /// Signers already parsed, by certificate: a responder answers many requests with the same few CAs, and
    /// parsing the certificate and the PKCS#8 key again for each one was most of a response's cost. A re-issued CA
    /// has another certificate, so it is parsed afresh; the table is emptied when it reaches 64 entries.
    private static let parsed = Locked<[[UInt8]: RevocationSigner]>([:])

    static func cached(_ identity: Identity) throws -> RevocationSigner {
        if let known = parsed.withLock({ $0[identity.certificateDER] }) { return known }
        let signer = try RevocationSigner(identity)
        parsed.withLock {
            if $0.count >= 64 { $0.removeAll() }
            $0[identity.certificateDER] = signer
        }
        return signer
    }

    /// The certificate's own subject key identifier, or the key hash.
    var keyIdentifier: [UInt8] {
        (try? certificate.extensions.subjectKeyIdentifier).flatMap { $0.map { Array($0.keyIdentifier) } } ?? keyHash
    }

    /// The signature of `tbs`, as the BIT STRING of a signed structure holds it.
    func sign(_ tbs: [UInt8], corrupt: Bool = false) throws -> ASN1BitString {
        var bytes = try key.certificatePrivateKey.sign(bytes: tbs, signatureAlgorithm: algorithm).rawRepresentation
        // A bad signature: the last byte flipped (never part of a length, so the structure stays well formed).
        if corrupt, !bytes.isEmpty { bytes[bytes.count - 1] ^= 0x01 }
        return ASN1BitString(bytes: bytes[...])
    }

    /// AlgorithmIdentifier of the signature (RSA carries NULL parameters, ECDSA and Ed25519 none).
    func serializeAlgorithm(into s: inout DER.Serializer) throws {
        let oid: ASN1ObjectIdentifier
        var nullParameters = false
        switch algorithm {
        case .ecdsaWithSHA256: oid = [1, 2, 840, 10045, 4, 3, 2]
        case .ecdsaWithSHA384: oid = [1, 2, 840, 10045, 4, 3, 3]
        case .ecdsaWithSHA512: oid = [1, 2, 840, 10045, 4, 3, 4]
        case .ed25519: oid = [1, 3, 101, 112]
        case .sha1WithRSAEncryption:
            oid = [1, 2, 840, 113549, 1, 1, 5]
            nullParameters = true
        case .sha384WithRSAEncryption:
            oid = [1, 2, 840, 113549, 1, 1, 12]
            nullParameters = true
        case .sha512WithRSAEncryption:
            oid = [1, 2, 840, 113549, 1, 1, 13]
            nullParameters = true
        default:
            oid = [1, 2, 840, 113549, 1, 1, 11]
            nullParameters = true
        }
        try s.appendConstructedNode(identifier: .sequence) { a in
            try a.serialize(oid)
            if nullParameters { try a.serialize(ASN1Null()) }
        }
    }
}

enum RevocationTime {
    /// Gregorian in UTC, made once (making a calendar and a time zone cost more than the conversion itself).
    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    private static func components(_ date: Date) -> DateComponents {
        utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    }

    static func generalized(_ date: Date) throws -> GeneralizedTime {
        let c = components(date)
        return try GeneralizedTime(
            year: c.year!, month: c.month!, day: c.day!, hours: c.hour!, minutes: c.minute!,
            seconds: c.second!, fractionalSeconds: 0)
    }

    /// RFC 5280 Time: UTCTime through 2049, GeneralizedTime from 2050.
    static func serializeTime(_ date: Date, into s: inout DER.Serializer) throws {
        let c = components(date)
        if c.year! < 2050 {
            try s.serialize(
                try UTCTime(
                    year: c.year!, month: c.month!, day: c.day!, hours: c.hour!, minutes: c.minute!,
                    seconds: c.second!))
        } else {
            try s.serialize(try generalized(date))
        }
    }
}

/// The serial number of a lab identity, as an INTEGER's content bytes: read from the certificate's DER where it
/// stands (Certificate → TBSCertificate → optional [0] version → INTEGER), without decoding the rest; through
/// swift-certificates when that walk does not find it.
func serialBytes(_ identity: Identity) throws -> [UInt8] {
    if let serial = DERWalk.serialNumber(of: identity.certificateDER) { return serial }
    return try Certificate(derEncoded: identity.certificateDER).serialNumber.bytes.map { $0 }
}

/// Just enough DER to find one field without decoding a whole structure.
package enum DERWalk {
    /// The tag and the content's range of the element starting at `at`; nil when its header or length does not fit.
    package static func element(_ der: [UInt8], at: Int) -> (tag: UInt8, content: Range<Int>)? {
        guard at + 2 <= der.count else { return nil }
        let tag = der[at]
        var length = Int(der[at + 1])
        var start = at + 2
        if length & 0x80 != 0 {
            let n = length & 0x7F
            guard n >= 1, n <= 4, start + n <= der.count else { return nil }
            length = der[start..<(start + n)].reduce(0) { $0 << 8 | Int($1) }
            start += n
        }
        guard start + length <= der.count else { return nil }
        return (tag, start..<(start + length))
    }

    /// The serial number's content bytes of a DER certificate.
    package static func serialNumber(of der: [UInt8]) -> [UInt8]? {
        guard let cert = element(der, at: 0), cert.tag == 0x30,
            let tbs = element(der, at: cert.content.lowerBound), tbs.tag == 0x30,
            var field = element(der, at: tbs.content.lowerBound)
        else { return nil }
        if field.tag == 0xA0 {
            guard let next = element(der, at: field.content.upperBound) else { return nil }
            field = next
        }
        guard field.tag == 0x02, !field.content.isEmpty, field.content.upperBound <= tbs.content.upperBound else {
            return nil
        }
        return Array(der[field.content])
    }
}
