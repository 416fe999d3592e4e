internal import SwiftASN1
// The certificate extensions that say where revocation status is published and that a server must staple it.
internal import X509

enum RevocationExtensions {
    /// id-ce-cRLDistributionPoints (RFC 5280 section 4.2.1.13).
    static let crlDistributionPointsOID: ASN1ObjectIdentifier = [2, 5, 29, 31]
    /// id-pe-tlsfeature (RFC 7633).
    static let tlsFeatureOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 5, 5, 7, 1, 24]
    /// The TLS extension number of status_request, the feature Must-Staple asks for.
    static let statusRequest = 5

    /// The AIA (OCSP), CRL distribution point and TLS feature extensions the entity asks for, in that order.
    static func extensions(for e: EntitySpec) throws -> [Certificate.Extension] {
        var out: [Certificate.Extension] = []
        if let url = e.ocspResponder {
            let aia = AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(url))]
            )
            out.append(try Certificate.Extension(aia, critical: false))
        }
        if let url = e.crlDistributionPoint {
            out.append(
                Certificate.Extension(
                    oid: crlDistributionPointsOID, critical: false,
                    value: try crlDistributionPoints(url)[...]))
        }
        if e.mustStaple {
            var s = DER.Serializer()
            try s.appendConstructedNode(identifier: .sequence) { try $0.serialize(statusRequest) }
            out.append(Certificate.Extension(oid: tlsFeatureOID, critical: false, value: s.serializedBytes[...]))
        }
        return out
    }

    /// CRLDistributionPoints ::= SEQUENCE OF DistributionPoint, one point whose distributionPoint is the fullName
    /// [0] { uniformResourceIdentifier [6] IA5String } (swift-certificates has no public type for it; SwiftASN1's
    /// DER serializer writes it).
    static func crlDistributionPoints(_ url: String) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.appendConstructedNode(identifier: .sequence) { points in
            try points.appendConstructedNode(identifier: .sequence) { point in
                // distributionPoint [0] DistributionPointName: EXPLICIT, since DistributionPointName is a CHOICE.
                try point.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                ) { name in
                    // fullName [0] GeneralNames, IMPLICIT: the SEQUENCE OF GeneralName re-tagged.
                    try name.appendConstructedNode(
                        identifier: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                    ) { names in
                        try ASN1IA5String(url).serialize(
                            into: &names, withIdentifier: ASN1Identifier(tagWithNumber: 6, tagClass: .contextSpecific))
                    }
                }
            }
        }
        return s.serializedBytes
    }
}
