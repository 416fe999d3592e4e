// RFC 6962 signed certificate timestamps: the structure a log returns, what it signs, and the list that certificates
// (extension 1.3.6.1.4.1.11129.2.4.2), the TLS extension (type 18) and OCSP responses (1.3.6.1.4.1.11129.2.4.5)
// carry. All of it is the TLS presentation language (`TLSWriter`), not DER.
public import Foundation

/// One RFC 6962 v1 signed certificate timestamp.
public struct SignedCertificateTimestamp: Sendable, Hashable {
    /// The log's ID: SHA-256 of its DER SubjectPublicKeyInfo.
    public var logID: [UInt8]
    /// Milliseconds since the Unix epoch.
    public var timestamp: UInt64
    /// `CtExtensions` (empty in RFC 6962 v1).
    public var extensions: [UInt8]
    /// TLS HashAlgorithm (4: SHA-256) and SignatureAlgorithm (3: ECDSA) of `signature`.
    public var hashAlgorithm: UInt8
    public var signatureAlgorithm: UInt8
    /// The log's DER ECDSA signature over ``SignedCertificateTimestamp/signedData(timestamp:entry:extensions:)``.
    public var signature: [UInt8]

    public init(
        logID: [UInt8], timestamp: UInt64, extensions: [UInt8] = [], hashAlgorithm: UInt8 = 4,
        signatureAlgorithm: UInt8 = 3, signature: [UInt8]
    ) {
        self.logID = logID
        self.timestamp = timestamp
        self.extensions = extensions
        self.hashAlgorithm = hashAlgorithm
        self.signatureAlgorithm = signatureAlgorithm
        self.signature = signature
    }

    /// When the log says it saw the entry.
    public var date: Date { Date(timeIntervalSince1970: TimeInterval(timestamp) / 1000) }

    /// What an SCT is over: the whole certificate (`x509_entry`, for the TLS extension and OCSP) or a
    /// precertificate's TBSCertificate without its poison extension, with the SHA-256 of the issuer's
    /// SubjectPublicKeyInfo (`precert_entry`, for the SCTs embedded in the final certificate).
    public enum Entry: Sendable, Hashable {
        case x509(certificateDER: [UInt8])
        case precert(issuerKeyHash: [UInt8], tbsCertificateDER: [UInt8])
    }

    /// The bytes a log signs (RFC 6962 §3.2, `digitally-signed struct`): sct_version v1 (0), signature_type
    /// certificate_timestamp (0), the timestamp, the entry type and entry, and the extensions.
    public static func signedData(timestamp: UInt64, entry: Entry, extensions: [UInt8] = []) throws -> [UInt8] {
        var w = TLSWriter()
        w.uint8(0)
        w.uint8(0)
        w.uint64(timestamp)
        do {
            switch entry {
            case .x509(let der):
                w.uint16(0)
                try w.vector(der, lengthBytes: 3, minimum: 1, field: "the certificate")
            case .precert(let keyHash, let tbs):
                guard keyHash.count == 32 else {
                    throw TLSEncodingError(field: "issuer_key_hash", count: keyHash.count, limit: "exactly 32")
                }
                w.uint16(1)
                w.raw(keyHash)
                try w.vector(tbs, lengthBytes: 3, minimum: 1, field: "the TBSCertificate")
            }
            try w.vector(extensions, lengthBytes: 2, field: "the SCT extensions")
        } catch {
            throw PKIError(.issuanceFailed, "cannot encode the data an SCT signs: \(error)")
        }
        return w.bytes
    }

    /// The TLS encoding of this SCT (a `SerializedSCT`'s contents).
    public func encoded() throws -> [UInt8] {
        var w = TLSWriter()
        w.uint8(0)  // v1
        guard logID.count == 32 else {
            throw PKIError(.issuanceFailed, "an SCT log ID is 32 bytes, not \(logID.count)")
        }
        w.raw(logID)
        w.uint64(timestamp)
        do {
            try w.vector(extensions, lengthBytes: 2, field: "the SCT extensions")
            w.uint8(hashAlgorithm)
            w.uint8(signatureAlgorithm)
            try w.vector(signature, lengthBytes: 2, field: "the SCT signature")
        } catch {
            throw PKIError(.issuanceFailed, "cannot encode an SCT: \(error)")
        }
        return w.bytes
    }

    /// Reads one TLS-encoded v1 SCT; nil when the bytes are not exactly one.
    public init?(tlsEncoded bytes: [UInt8]) {
        var r = TLSReader(bytes)
        guard r.uint8() == 0, let id = r.raw(32), let ts = r.uint64(), let ext = r.vector(lengthBytes: 2),
            let h = r.uint8(), let s = r.uint8(), let sig = r.vector(lengthBytes: 2), r.isAtEnd
        else { return nil }
        self.init(logID: id, timestamp: ts, extensions: ext, hashAlgorithm: h, signatureAlgorithm: s, signature: sig)
    }

    /// A `SignedCertificateTimestampList`: a 2-byte-length list of 2-byte-length serialized SCTs. This is the
    /// payload of the TLS extension `signed_certificate_timestamp` (18); certificates and OCSP responses wrap it
    /// in a DER OCTET STRING (``listExtensionValue(_:)``).
    public static func list(_ scts: [SignedCertificateTimestamp]) throws -> [UInt8] {
        var inner = TLSWriter()
        var outer = TLSWriter()
        do {
            for sct in scts {
                try inner.vector(try sct.encoded(), lengthBytes: 2, minimum: 1, field: "a serialized SCT")
            }
            try outer.vector(inner.bytes, lengthBytes: 2, minimum: 1, field: "the SCT list")
        } catch let e as TLSEncodingError {
            throw PKIError(.issuanceFailed, "cannot encode an SCT list: \(e)")
        }
        return outer.bytes
    }

    /// Reads a `SignedCertificateTimestampList`; nil when it is malformed.
    public static func parseList(_ bytes: [UInt8]) -> [SignedCertificateTimestamp]? {
        var r = TLSReader(bytes)
        guard let body = r.vector(lengthBytes: 2), r.isAtEnd, !body.isEmpty else { return nil }
        var items = TLSReader(body)
        var out: [SignedCertificateTimestamp] = []
        while !items.isAtEnd {
            guard let one = items.vector(lengthBytes: 2), let sct = SignedCertificateTimestamp(tlsEncoded: one) else {
                return nil
            }
            out.append(sct)
        }
        return out
    }

    /// The DER extension value that carries a list in a certificate (1.3.6.1.4.1.11129.2.4.2) or an OCSP
    /// SingleResponse (1.3.6.1.4.1.11129.2.4.5): an OCTET STRING holding the TLS-encoded list.
    public static func listExtensionValue(_ list: [UInt8]) -> [UInt8] {
        [0x04] + derLength(list.count) + list
    }
}

/// A DER definite length.
func derLength(_ n: Int) -> [UInt8] {
    if n < 0x80 { return [UInt8(n)] }
    var bytes: [UInt8] = []
    var v = n
    while v > 0 {
        bytes.insert(UInt8(v & 0xff), at: 0)
        v >>= 8
    }
    return [0x80 | UInt8(bytes.count)] + bytes
}

/// The object identifiers of RFC 6962.
public enum CTObjectIdentifier {
    /// The precertificate poison extension (critical, ASN.1 NULL): no verifier may accept a precertificate.
    public static let poison = "1.3.6.1.4.1.11129.2.4.3"
    /// The embedded SCT list extension of a certificate.
    public static let embeddedSCTList = "1.3.6.1.4.1.11129.2.4.2"
    /// The SCT list extension of an OCSP SingleResponse.
    public static let ocspSCTList = "1.3.6.1.4.1.11129.2.4.5"
}
