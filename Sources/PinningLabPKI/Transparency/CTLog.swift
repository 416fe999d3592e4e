internal import Crypto
// The lab's Certificate Transparency logs: what the spec says about them, what a client is told (log ID, key,
// URL, MMD), and the one thing a lab log does: sign timestamps for certificates and precertificates.
internal import Foundation
internal import SwiftASN1

/// A CT log of the spec (`ctLogs:` in `pki/lab.yaml`). Its key is P-256, kept in `keys/NAME.pem` like the CAs'
/// keys and, like theirs, always random: whoever held it could sign SCTs every client told about the log accepts.
public struct CTLogSpec: Sendable, Hashable {
    public var name: String
    /// The operator the log list names; Chrome's policy counts SCTs from distinct operators.
    public var operatorName: String
    /// The log's submission URL (a lab name: nothing listens there; SCTs are issued with the certificates).
    public var url: String
    /// Maximum merge delay in seconds.
    public var mmd: Int
    /// Whether the exported log lists name it. An unlisted log is one clients are not told about: its SCTs are
    /// "from an unknown log" to every client.
    public var listed: Bool
    public var summary: String?
    /// Line of the log in the spec file.
    public var line: Int
}

/// One SCT an entity asks for: `scts:` (embedded through the precertificate flow) or `tlsSCTs:` (over the final
/// certificate, for the TLS extension and OCSP responses).
public struct SCTRequest: Sendable, Hashable {
    /// A name from `ctLogs:`.
    public var log: String
    /// The SCT's timestamp relative to issuance (default `-1m`; `+1d` makes a timestamp in the future).
    public var timestamp: RelativeTime
    /// `false` makes the log sign other data than the SCT describes: a well-formed signature that does not verify.
    public var validSignature: Bool

    public init(log: String, timestamp: RelativeTime = RelativeTime(seconds: -60), validSignature: Bool = true) {
        self.log = log
        self.timestamp = timestamp
        self.validSignature = validSignature
    }
}

/// A lab CT log as clients are told about it: what the spec declares (`log.name`, `log.operatorName`, `log.url`,
/// `log.mmd`, `log.listed`, `log.summary` read through to ``spec``) and its public key.
@dynamicMemberLookup
public struct CTLog: Sendable, Hashable {
    /// The log as `ctLogs:` declares it.
    public var spec: CTLogSpec
    /// DER SubjectPublicKeyInfo of the log's P-256 key.
    public var publicKeyDER: [UInt8]
    /// SHA-256 of ``publicKeyDER``: the ID every SCT of the log carries.
    public var logID: [UInt8] { Array(SHA256.hash(data: publicKeyDER)) }
    public var logIDBase64: String { Data(logID).base64EncodedString() }
    public var keyBase64: String { Data(publicKeyDER).base64EncodedString() }
    public subscript<T>(dynamicMember field: KeyPath<CTLogSpec, T>) -> T { spec[keyPath: field] }
}

/// A log with its signing key, while certificates are issued.
struct CTLogSigner: Sendable {
    let log: CTLog
    let key: P256.Signing.PrivateKey

    init(spec: CTLogSpec, key: LabKey) throws {
        guard case .p256(let k) = key.backing else {
            throw PKIError(.keyTypeChanged, "the key of a CT log must be P-256", entity: spec.name)
        }
        self.key = k
        log = CTLog(spec: spec, publicKeyDER: Array(k.publicKey.derRepresentation))
    }

    /// Signs an SCT for `entry` at `date`. A request for a bad signature signs the entry with the timestamp one
    /// millisecond later: the signature is the log's and well-formed, but not over what the SCT says.
    func timestamp(_ entry: SignedCertificateTimestamp.Entry, at date: Date, validSignature: Bool) throws
        -> SignedCertificateTimestamp
    {
        let ms = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
        let signed = try SignedCertificateTimestamp.signedData(timestamp: validSignature ? ms : ms + 1, entry: entry)
        let signature = try key.signature(for: signed)
        return SignedCertificateTimestamp(
            logID: log.logID, timestamp: ms, signature: Array(signature.derRepresentation))
    }

    /// What a log does with a submitted precertificate (RFC 6962 §3.1): checks that it carries the critical poison
    /// extension, removes it from the TBSCertificate, and timestamps that with the SHA-256 of the issuer's key.
    func timestamp(precertificate der: [UInt8], issuerSPKIDER: [UInt8], at date: Date, validSignature: Bool) throws
        -> SignedCertificateTimestamp
    {
        let tbs = try Precertificate.tbsWithoutPoison(der)
        let entry = SignedCertificateTimestamp.Entry.precert(
            issuerKeyHash: Array(SHA256.hash(data: issuerSPKIDER)), tbsCertificateDER: tbs)
        return try timestamp(entry, at: date, validSignature: validSignature)
    }
}

/// Precertificates: DER surgery on a TBSCertificate's extensions, with SwiftASN1's node tree.
enum Precertificate {
    /// The extension value of the poison: ASN.1 NULL.
    static let poisonValue: [UInt8] = [0x05, 0x00]

    /// The TBSCertificate of `certificateDER` with the extension `oid` removed, re-encoded; the extensions keep
    /// their order. Throws unless that extension is present exactly once (and critical, when `mustBeCritical`).
    static func tbsWithout(_ oid: ASN1ObjectIdentifier, in certificateDER: [UInt8], mustBeCritical: Bool) throws
        -> [UInt8]
    {
        func bad(_ why: String) -> PKIError { PKIError(.issuanceFailed, "not a precertificate a log accepts: \(why)") }
        let root = try DER.parse(certificateDER)
        guard case .constructed(let certParts) = root.content, let tbs = certParts.first(where: { _ in true }),
            case .constructed(let tbsParts) = tbs.content
        else { throw bad("not a certificate") }
        let extensionsTag = ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific)
        var found = 0
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { s in
            for part in tbsParts {
                guard part.identifier == extensionsTag else {
                    s.serializeRawBytes(part.encodedBytes)
                    continue
                }
                guard case .constructed(let wrapped) = part.content, let list = wrapped.first(where: { _ in true }),
                    case .constructed(let extensions) = list.content
                else { throw bad("malformed extensions") }
                try s.appendConstructedNode(identifier: extensionsTag) { s in
                    try s.appendConstructedNode(identifier: .sequence) { s in
                        for ext in extensions {
                            guard case .constructed(let fields) = ext.content else { throw bad("malformed extension") }
                            let items = Array(fields)
                            guard let first = items.first else { throw bad("empty extension") }
                            let extOID = try ASN1ObjectIdentifier(derEncoded: first)
                            if extOID == oid {
                                found += 1
                                // Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue }
                                let critical = items.count == 3 && (try? Bool(derEncoded: items[1])) == true
                                if mustBeCritical && !critical { throw bad("the \(oid) extension is not critical") }
                                continue
                            }
                            s.serializeRawBytes(ext.encodedBytes)
                        }
                    }
                }
            }
        }
        guard found == 1 else { throw bad("\(found) extensions \(oid), not one") }
        return serializer.serializedBytes
    }

    static func tbsWithoutPoison(_ der: [UInt8]) throws -> [UInt8] {
        try tbsWithout(
            try ASN1ObjectIdentifier(dotRepresentation: CTObjectIdentifier.poison), in: der, mustBeCritical: true)
    }
}
