internal import Crypto
// OCSP responses (RFC 6960) for lab identities: a BasicOCSPResponse signed by the issuing CA or a delegated
// responder, and the variants the revocation scenarios serve (expired, bad signature, wrong responder, an error
// status with no response at all). swift-certificates keeps its OCSP types internal, so the structures are written
// with SwiftASN1's DER serializer (apple/swift-asn1), never from hand-concatenated bytes.
public import Foundation
internal import SwiftASN1
internal import X509

/// OCSPResponseStatus (RFC 6960 section 4.2.1). Anything but `successful` carries no response body.
public struct OCSPResponseStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let successful = OCSPResponseStatus(rawValue: 0)
    public static let malformedRequest = OCSPResponseStatus(rawValue: 1)
    public static let internalError = OCSPResponseStatus(rawValue: 2)
    public static let tryLater = OCSPResponseStatus(rawValue: 3)
    public static let sigRequired = OCSPResponseStatus(rawValue: 5)
    public static let unauthorized = OCSPResponseStatus(rawValue: 6)
    public var description: String {
        switch rawValue {
        case 0: return "successful"
        case 1: return "malformedRequest"
        case 2: return "internalError"
        case 3: return "tryLater"
        case 5: return "sigRequired"
        case 6: return "unauthorized"
        default: return "status \(rawValue)"
        }
    }
}

/// The kinds of OCSP response the lab serves, as scenarios name them.
public enum OCSPVariant: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The status the spec gives the identity, signed by its issuer, fresh.
    case asIssued = "as-issued"
    /// `good`, `revoked` or `unknown` whatever the spec says, signed by the issuer, fresh.
    case good, revoked, unknown
    /// The spec's status, but nextUpdate has passed (thisUpdate 8 days ago, nextUpdate yesterday).
    case expired
    /// The spec's status with a signature that does not verify.
    case badSignature = "bad-signature"
    /// The spec's status signed by a CA that is not the issuer and holds no delegation (`lab-intermediate-b`).
    case wrongResponder = "wrong-responder"
    /// The spec's status signed by the issuer's delegated responder (id-kp-OCSPSigning), its certificate included.
    case delegated
    /// responseStatus tryLater, no response body.
    case tryLater = "try-later"
    /// responseStatus unauthorized, no response body.
    case unauthorized
    /// `good`, signed by the issuer, fresh, carrying the identity's SCT list (its `tlsSCTs:`) in the single
    /// response's extension 1.3.6.1.4.1.11129.2.4.5 (RFC 6962 section 3.3); the server then sends those SCTs in the
    /// staple only, not in the TLS extension.
    case goodWithSCTs = "good-with-scts"
    public var description: String { rawValue }

    /// The builder options this variant stands for.
    public var options: OCSPResponseOptions {
        var o = OCSPResponseOptions()
        switch self {
        case .asIssued, .delegated: break
        case .good: o.status = .good
        case .revoked: o.status = .revoked(reason: .keyCompromise, date: RelativeTime(seconds: -3600))
        case .unknown: o.status = .unknown
        case .expired:
            o.thisUpdate = RelativeTime(seconds: -8 * 86400)
            o.nextUpdate = RelativeTime(seconds: -86400)
        case .badSignature: o.corruptSignature = true
        case .wrongResponder: o.responder = .unauthorized(OCSPResponseOptions.defaultWrongResponder)
        case .tryLater: o.responseStatus = .tryLater
        case .unauthorized: o.responseStatus = .unauthorized
        case .goodWithSCTs:
            o.status = .good
            o.includesSCTs = true
        }
        if self == .delegated { o.responder = .delegated(nil) }
        return o
    }
}

/// How to build one OCSP response.
public struct OCSPResponseOptions: Sendable, Hashable {
    /// Who signs it.
    public enum Responder: Sendable, Hashable {
        /// The CA that issued the certificate.
        case issuer
        /// The named delegated responder (a certificate with id-kp-OCSPSigning issued by the issuer); nil: the
        /// first such entity of the spec under the issuer.
        case delegated(String?)
        /// Another CA of the spec, which has no authority over the certificate; its certificate is included.
        case unauthorized(String)
    }
    /// The CA the wrong-responder variant signs with: a sibling under the same root, so that its certificate chains
    /// to a trusted root and only the authorization check (RFC 6960 section 4.2.2.2) refuses it.
    public static let defaultWrongResponder = "lab-intermediate-b"

    /// The status to state; nil: the one the spec gives the identity.
    public var status: RevocationStatus?
    public var responder: Responder = .issuer
    /// thisUpdate and nextUpdate, relative to the moment the response is built (producedAt).
    public var thisUpdate = RelativeTime(seconds: -3600)
    public var nextUpdate: RelativeTime? = RelativeTime(seconds: 7 * 86400)
    public var corruptSignature = false
    /// Anything but successful: the response is that status alone.
    public var responseStatus = OCSPResponseStatus.successful
    /// Carry the identity's SCT list (`tlsSCTs:`) in the single response's SCT extension (1.3.6.1.4.1.11129.2.4.5).
    public var includesSCTs = false

    public init() {}
}

extension LabPKI {
    /// An OCSP response (DER, `OCSPResponse`) about identity `name`, built at `now`. Revocation dates are relative
    /// to the PKI's issuance; thisUpdate and nextUpdate to `now`, so a response is always fresh unless asked not to be.
    public func ocspResponse(for name: String, options: OCSPResponseOptions = .init(), now: Date = Date()) throws
        -> [UInt8]
    {
        let subject = try identity(name)
        guard !subject.isSelfSigned else {
            throw PKIError(
                .badRevocation, "\(name) is self-signed: no issuer can answer for it", entity: name,
                fix: "ask for the status of a certificate a CA of the lab issued")
        }
        var out = DER.Serializer()
        guard options.responseStatus == .successful else {
            try out.appendConstructedNode(identifier: .sequence) { r in
                try options.responseStatus.rawValue.serialize(into: &r, withIdentifier: .enumerated)
            }
            return out.serializedBytes
        }
        let issuer = try RevocationSigner.cached(try identity(subject.issuerName))
        let signer: RevocationSigner
        var includeCertificate = false
        switch options.responder {
        case .issuer: signer = issuer
        case .delegated(let wanted):
            let responderName = try wanted ?? delegatedResponder(of: subject.issuerName)
            signer = try RevocationSigner.cached(try identity(responderName))
            includeCertificate = true
        case .unauthorized(let other):
            signer = try RevocationSigner.cached(try identity(other))
            includeCertificate = true
        }
        let status = options.status ?? spec.entity(name)?.revocation ?? .good

        var tbs = DER.Serializer()
        try tbs.appendConstructedNode(identifier: .sequence) { data in
            // version [0] EXPLICIT DEFAULT v1: omitted. responderID byKey [2] EXPLICIT KeyHash.
            try data.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)) {
                try $0.serialize(ASN1OctetString(contentBytes: signer.keyHash[...]))
            }
            try data.serialize(try RevocationTime.generalized(now))
            try data.appendConstructedNode(identifier: .sequence) { responses in
                try responses.appendConstructedNode(identifier: .sequence) { single in
                    try serializeCertID(subject: subject, issuer: issuer, into: &single)
                    try serializeStatus(status, into: &single)
                    try single.serialize(
                        try RevocationTime.generalized(now.addingTimeInterval(TimeInterval(options.thisUpdate.seconds)))
                    )
                    if let next = options.nextUpdate {
                        try single.appendConstructedNode(
                            identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                        ) {
                            try $0.serialize(
                                try RevocationTime.generalized(now.addingTimeInterval(TimeInterval(next.seconds))))
                        }
                    }
                    if options.includesSCTs {
                        guard let list = subject.signedCertificateTimestampList else {
                            throw PKIError(
                                .badRevocation, "\(name) has no SCTs for an OCSP response to carry", entity: name,
                                fix: "staple good-with-scts only for a leaf with `tlsSCTs:` (e.g. leaf-ct-tls)")
                        }
                        // singleExtensions [1] EXPLICIT Extensions: one Extension { extnID, extnValue OCTET STRING },
                        // whose value is the TLS-encoded SCT list in an OCTET STRING.
                        try single.appendConstructedNode(
                            identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)
                        ) { tagged in
                            try tagged.appendConstructedNode(identifier: .sequence) { extensions in
                                try extensions.appendConstructedNode(identifier: .sequence) { ext in
                                    try ext.serialize(
                                        try ASN1ObjectIdentifier(dotRepresentation: CTObjectIdentifier.ocspSCTList))
                                    try ext.serialize(
                                        ASN1OctetString(
                                            contentBytes: SignedCertificateTimestamp.listExtensionValue(list)[...]))
                                }
                            }
                        }
                    }
                }
            }
        }
        let tbsBytes = tbs.serializedBytes
        var basic = DER.Serializer()
        try basic.appendConstructedNode(identifier: .sequence) { b in
            b.serializeRawBytes(tbsBytes)
            try signer.serializeAlgorithm(into: &b)
            try b.serialize(try signer.sign(tbsBytes, corrupt: options.corruptSignature))
            if includeCertificate {
                b.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) {
                    certs in
                    certs.appendConstructedNode(identifier: .sequence) { $0.serializeRawBytes(signer.certificateDER) }
                }
            }
        }
        let basicBytes = basic.serializedBytes
        try out.appendConstructedNode(identifier: .sequence) { r in
            try OCSPResponseStatus.successful.rawValue.serialize(into: &r, withIdentifier: .enumerated)
            try r.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) {
                rb in
                try rb.appendConstructedNode(identifier: .sequence) { bytes in
                    try bytes.serialize(ASN1ObjectIdentifier.ocspBasic)
                    try bytes.serialize(ASN1OctetString(contentBytes: basicBytes[...]))
                }
            }
        }
        return out.serializedBytes
    }

    /// The first entity issued by `issuer` that carries id-kp-OCSPSigning.
    func delegatedResponder(of issuer: String) throws -> String {
        guard
            let e = spec.entities.first(where: {
                $0.issuer == issuer && $0.usages.contains(.ocspSigning) && $0.name != issuer
            })
        else {
            throw PKIError(
                .badRevocation, "no delegated OCSP responder is issued by \(issuer)", entity: issuer,
                fix: "add a leaf issued by \(issuer) with usages: [ocspSigning]")
        }
        return e.name
    }

    /// CertID with SHA-1 hashes (what every client sends and matches).
    private func serializeCertID(subject: Identity, issuer: RevocationSigner, into s: inout DER.Serializer) throws {
        let nameHash = issuer.nameHash
        let serial = try serialBytes(subject)
        try s.appendConstructedNode(identifier: .sequence) { id in
            try id.appendConstructedNode(identifier: .sequence) { alg in
                try alg.serialize(ASN1ObjectIdentifier.sha1)
                try alg.serialize(ASN1Null())
            }
            try id.serialize(ASN1OctetString(contentBytes: nameHash[...]))
            try id.serialize(ASN1OctetString(contentBytes: issuer.keyHash[...]))
            try id.serialize(serial[...])
        }
    }

    /// CertStatus: good [0] IMPLICIT NULL, revoked [1] IMPLICIT RevokedInfo, unknown [2] IMPLICIT NULL.
    private func serializeStatus(_ status: RevocationStatus, into s: inout DER.Serializer) throws {
        switch status {
        case .good:
            ASN1Null().serialize(into: &s, withIdentifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
        case .unknown:
            ASN1Null().serialize(into: &s, withIdentifier: ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific))
        case .revoked(let reason, let date):
            let at = issuedAt.addingTimeInterval(TimeInterval(date.seconds))
            try s.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) {
                info in
                try info.serialize(try RevocationTime.generalized(at))
                try info.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
                {
                    try reason.code.serialize(into: &$0, withIdentifier: .enumerated)
                }
            }
        }
    }
}

extension ASN1ObjectIdentifier {
    /// id-pkix-ocsp-basic.
    static let ocspBasic: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 48, 1, 1]
    /// id-sha1 (OIW).
    static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
}
