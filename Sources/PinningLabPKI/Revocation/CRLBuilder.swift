// CRLs (RFC 5280 v2) for the lab's CAs: every certificate the spec marks revoked under an issuer, with its reason,
// signed by the issuer; fresh, or stale (nextUpdate past). swift-certificates has no CRL type, so the structure is
// written with SwiftASN1's DER serializer (apple/swift-asn1), never from hand-concatenated bytes.
public import Foundation
internal import SwiftASN1
internal import X509

/// How to build one CRL.
public struct CRLOptions: Sendable, Hashable {
    /// thisUpdate and nextUpdate, relative to the moment the CRL is built.
    public var thisUpdate = RelativeTime(seconds: -3600)
    public var nextUpdate = RelativeTime(seconds: 7 * 86400)
    /// This many made-up serials revoked as well (superseded), for measuring how CRL size and time grow.
    public var extraRevokedSerials = 0

    public init() {}

    /// A CRL whose nextUpdate has passed: issued 8 days ago, due yesterday.
    public static var stale: CRLOptions {
        var o = CRLOptions()
        o.thisUpdate = RelativeTime(seconds: -8 * 86400)
        o.nextUpdate = RelativeTime(seconds: -86400)
        return o
    }
}

extension LabPKI {
    /// The identities of the spec that `issuer` issued and the spec marks revoked, with their status.
    public func revokedIdentities(issuedBy issuer: String) -> [(
        identity: Identity, reason: RevocationReason, date: Date
    )] {
        spec.entities.compactMap { e in
            guard e.issuer == issuer, e.name != issuer, case .revoked(let reason, let date) = e.revocation,
                let id = self[e.name]
            else { return nil }
            return (id, reason, issuedAt.addingTimeInterval(TimeInterval(date.seconds)))
        }
    }

    /// The CRL (DER, `CertificateList`) of the CA `issuer`, built at `now`.
    public func crl(issuer: String, options: CRLOptions = .init(), now: Date = Date()) throws -> [UInt8] {
        let ca = try identity(issuer)
        guard ca.role.isCA else {
            throw PKIError(
                .badRevocation, "\(issuer) is a \(ca.role), not a CA: it publishes no CRL", entity: issuer,
                fix: "ask for the CRL of the identity's issuer")
        }
        let signer = try RevocationSigner.cached(ca)
        let revoked = try revokedIdentities(issuedBy: issuer).map { (try serialBytes($0.identity), $0.date, $0.reason) }
        let thisUpdate = now.addingTimeInterval(TimeInterval(options.thisUpdate.seconds))
        var tbs = DER.Serializer()
        try tbs.appendConstructedNode(identifier: .sequence) { t in
            try t.serialize(1)  // v2
            try signer.serializeAlgorithm(into: &t)
            try t.serialize(signer.certificate.subject)
            try RevocationTime.serializeTime(thisUpdate, into: &t)
            try RevocationTime.serializeTime(now.addingTimeInterval(TimeInterval(options.nextUpdate.seconds)), into: &t)
            if !revoked.isEmpty || options.extraRevokedSerials > 0 {
                try t.appendConstructedNode(identifier: .sequence) { list in
                    for (serial, date, reason) in revoked {
                        try serializeEntry(serial: serial, date: date, reason: reason, into: &list)
                    }
                    for i in 0..<options.extraRevokedSerials {
                        // 0x7f then the index: never one of the lab's own serials (those start 0x40...0x7f with
                        // 15 random bytes after), and positive.
                        var serial: [UInt8] = [0x7f, 0xff]
                        withUnsafeBytes(of: UInt64(i).bigEndian) { serial.append(contentsOf: $0) }
                        try serializeEntry(serial: serial, date: thisUpdate, reason: .superseded, into: &list)
                    }
                }
            }
            // crlExtensions [0] EXPLICIT: authorityKeyIdentifier and cRLNumber (both required by RFC 5280).
            try t.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) {
                ext in
                try ext.appendConstructedNode(identifier: .sequence) { list in
                    try list.serialize(
                        try Certificate.Extension(
                            AuthorityKeyIdentifier(keyIdentifier: signer.keyIdentifier[...]), critical: false))
                    var number = DER.Serializer()
                    try number.serialize(Int(now.timeIntervalSince1970 * 1000))
                    try list.serialize(
                        Certificate.Extension(
                            oid: [2, 5, 29, 20], critical: false,
                            value: number.serializedBytes[...]))
                }
            }
        }
        let tbsBytes = tbs.serializedBytes
        var out = DER.Serializer()
        try out.appendConstructedNode(identifier: .sequence) { c in
            c.serializeRawBytes(tbsBytes)
            try signer.serializeAlgorithm(into: &c)
            try c.serialize(try signer.sign(tbsBytes))
        }
        return out.serializedBytes
    }

    private func serializeEntry(serial: [UInt8], date: Date, reason: RevocationReason, into s: inout DER.Serializer)
        throws
    {
        try s.appendConstructedNode(identifier: .sequence) { entry in
            try entry.serialize(serial[...])
            try RevocationTime.serializeTime(date, into: &entry)
            if reason != .unspecified {  // RFC 5280: the reason code unspecified should be absent
                var code = DER.Serializer()
                try reason.code.serialize(into: &code, withIdentifier: .enumerated)
                try entry.appendConstructedNode(identifier: .sequence) { list in
                    try list.serialize(
                        Certificate.Extension(
                            oid: [2, 5, 29, 21], critical: false,
                            value: code.serializedBytes[...]))
                }
            }
        }
    }
}
