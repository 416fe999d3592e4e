internal import Crypto
// Reading SCTs back out of a certificate and checking them against a lab log, as a CT-enforcing client does:
// for `pinlab pki show`, the tests, and any caller that wants the lab's own view next to OpenSSL's.
public import Foundation
internal import SwiftASN1
internal import X509

extension SignedCertificateTimestamp {
    /// The SCTs embedded in a certificate (extension 1.3.6.1.4.1.11129.2.4.2); nil when it has none or they cannot
    /// be read.
    public static func embedded(in certificateDER: [UInt8]) -> [SignedCertificateTimestamp]? {
        guard let cert = try? Certificate(derEncoded: certificateDER),
            let oid = try? ASN1ObjectIdentifier(dotRepresentation: CTObjectIdentifier.embeddedSCTList),
            let ext = cert.extensions.first(where: { $0.oid == oid }),
            let octets = try? ASN1OctetString(derEncoded: ext.value)
        else { return nil }
        return parseList(Array(octets.bytes))
    }
}

extension SignedCertificateTimestamp.Entry {
    /// The precertificate entry a verifier rebuilds from a final certificate: its TBSCertificate without the
    /// embedded SCT list, with the SHA-256 of the issuer's SubjectPublicKeyInfo (RFC 6962 §3.2).
    public static func precert(reconstructedFrom certificateDER: [UInt8], issuerCertificateDER: [UInt8]) throws -> Self
    {
        let issuer = try Certificate(derEncoded: issuerCertificateDER)
        let spki = try Builder.der(issuer.publicKey)
        let tbs = try Precertificate.tbsWithout(
            try ASN1ObjectIdentifier(dotRepresentation: CTObjectIdentifier.embeddedSCTList), in: certificateDER,
            mustBeCritical: false)
        return .precert(issuerKeyHash: Array(SHA256.hash(data: spki)), tbsCertificateDER: tbs)
    }
}

extension CTLog {
    /// Whether `sct` is this log's and its signature verifies over `entry` (the timestamp is not judged here).
    public func verifies(_ sct: SignedCertificateTimestamp, for entry: SignedCertificateTimestamp.Entry) -> Bool {
        sct.verifies(logPublicKeyDER: publicKeyDER, for: entry)
    }
}

extension SignedCertificateTimestamp {
    /// Whether this SCT carries the ID of the log whose P-256 key is `logPublicKeyDER` (SubjectPublicKeyInfo DER) and
    /// its ECDSA-SHA256 signature verifies with that key over `entry` (the timestamp is not judged here).
    public func verifies(logPublicKeyDER: [UInt8], for entry: Entry) -> Bool {
        guard logID == Array(SHA256.hash(data: logPublicKeyDER)), hashAlgorithm == 4, signatureAlgorithm == 3,
            let key = try? P256.Signing.PublicKey(derRepresentation: logPublicKeyDER),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: self.signature),
            let data = try? Self.signedData(timestamp: timestamp, entry: entry, extensions: extensions)
        else { return false }
        return key.isValidSignature(signature, for: data)
    }
}

/// One SCT of an identity as the lab sees it: where it travels, whose it is, and whether it would count.
public struct SCTSummary: Sendable, Hashable, CustomStringConvertible {
    public enum Delivery: String, Sendable {
        case embedded = "embedded"
        case tlsExtension = "TLS extension"
    }
    public var delivery: Delivery
    /// The lab log whose ID it carries, nil for an ID no lab log has.
    public var log: String?
    public var logListed: Bool
    public var date: Date
    /// The signature verifies with that log's key over what the SCT covers.
    public var signatureVerifies: Bool

    public var description: String {
        let stamp = CTLogList.iso8601(date)
        let who = log.map { "\($0)\(logListed ? "" : " (unlisted: unknown to clients)")" } ?? "an unknown log ID"
        var verdict = signatureVerifies ? "signature verifies" : "signature does NOT verify"
        if date > Date().addingTimeInterval(300) { verdict += "; timestamp in the future" }
        return "\(delivery.rawValue): \(who), \(stamp), \(verdict)"
    }
}

extension LabPKI {
    /// The SCTs an identity carries (embedded) or is served with (TLS extension), each checked against the lab logs.
    public func timestampSummaries(of identity: Identity) -> [SCTSummary] {
        var out: [SCTSummary] = []
        func summarize(
            _ scts: [SignedCertificateTimestamp], _ delivery: SCTSummary.Delivery,
            _ entry: SignedCertificateTimestamp.Entry?
        ) {
            for sct in scts {
                let log = ctLogs.first { $0.logID == sct.logID }
                out.append(
                    SCTSummary(
                        delivery: delivery, log: log?.name, logListed: log?.listed ?? false, date: sct.date,
                        signatureVerifies: entry.map { e in log?.verifies(sct, for: e) ?? false } ?? false))
            }
        }
        if let embedded = SignedCertificateTimestamp.embedded(in: identity.certificateDER) {
            let issuer =
                identity.isSelfSigned ? identity.certificateDER : identity.issuerChainDER.first ?? identity.rootDER
            let entry = try? SignedCertificateTimestamp.Entry.precert(
                reconstructedFrom: identity.certificateDER, issuerCertificateDER: issuer)
            summarize(embedded, .embedded, entry)
        }
        if let list = identity.signedCertificateTimestampList, let scts = SignedCertificateTimestamp.parseList(list) {
            summarize(scts, .tlsExtension, .x509(certificateDER: identity.certificateDER))
        }
        return out
    }
}
