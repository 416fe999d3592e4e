import Crypto
public import Foundation
import SwiftASN1
import X509

/// Issues server certificates on the fly for any host name, the way an interception proxy (mitmproxy, Charles,
/// Burp) forges a leaf for every host a device asks for: one key, generated once, shared by every minted leaf
/// (mitmproxy does the same), and a certificate per host signed by a CA of the lab PKI (`proxy-root`, or the
/// name-collision `twin-intermediate-a`).
///
/// Thread-safe: minting reads only immutable state.
public final class LeafMinter: Sendable {
    /// The issuing CA.
    public let issuer: Identity
    /// PKCS#8 DER of the one key every minted leaf certifies.
    public let leafKeyPKCS8DER: [UInt8]
    /// How long a minted certificate is valid, from one hour before minting.
    public let lifetime: TimeInterval

    private let leafKey: LabKey
    private let signer: LabKey
    private let issuerSubject: DistinguishedName
    private let authorityKeyIdentifier: [UInt8]
    private let subjectKeyIdentifier: [UInt8]
    private let leafPublicKey: Certificate.PublicKey

    /// - Parameters:
    ///   - issuer: a CA identity of the lab PKI (its key signs every leaf).
    ///   - keyType: the type of the leaf key generated here, once.
    public init(issuer: Identity, keyType: KeyType = .p256, lifetime: TimeInterval = 30 * 86400) throws {
        guard issuer.role.isCA else {
            throw PKIError(
                .issuanceFailed, "'\(issuer.name)' is a \(issuer.role), not a CA: it cannot sign minted leaves",
                entity: issuer.name, fix: "use a root or intermediate such as proxy-root")
        }
        self.issuer = issuer
        self.lifetime = lifetime
        signer = try LabKey.read(pkcs8: issuer.privateKeyPKCS8DER, type: issuer.keyType)
        leafKey = try LabKey.generate(keyType)
        leafKeyPKCS8DER = leafKey.pkcs8DER
        leafPublicKey = try leafKey.publicKey
        let issuerCertificate = try Certificate(derEncoded: issuer.certificateDER)
        issuerSubject = issuerCertificate.subject
        // The issuer's own key identifier as written in its certificate: a twin CA copies another CA's identifier,
        // and its leaves must point at that copy.
        if let ski = try issuerCertificate.extensions.subjectKeyIdentifier {
            authorityKeyIdentifier = Array(ski.keyIdentifier)
        } else {
            authorityKeyIdentifier = Array(
                Insecure.SHA1.hash(data: Array(try signer.publicKey.subjectPublicKeyInfoBytes)))
        }
        subjectKeyIdentifier = Array(Insecure.SHA1.hash(data: Array(leafPublicKey.subjectPublicKeyInfoBytes)))
    }

    /// `now + lifetime`, but never after the issuer's own notAfter (proxy-root lives for days, not a month).
    func notAfter(_ now: Date) -> Date {
        let wanted = now.addingTimeInterval(lifetime)
        return issuer.notAfter > now ? min(wanted, issuer.notAfter) : wanted
    }

    /// A certificate (DER) for `host` (a DNS name or an IP address), valid from an hour before `now`.
    public func mint(host: String, now: Date = Date()) throws -> [UInt8] {
        guard !host.isEmpty, host.utf8.count <= 253 else {
            throw PKIError(
                .issuanceFailed, "cannot mint a certificate for the host name '\(host)': it must be 1 to 253 characters"
            )
        }
        var serial = (0..<16).map { _ in UInt8.random(in: 0...255) }
        serial[0] = (serial[0] & 0x7f) | 0x40
        var ext = Certificate.Extensions()
        try ext.append(Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true))
        try ext.append(
            Certificate.Extension(KeyUsage(digitalSignature: true, keyEncipherment: leafKey.type.isRSA), critical: true)
        )
        try ext.append(Certificate.Extension(try ExtendedKeyUsage([.serverAuth]), critical: false))
        let name: GeneralName =
            parseIP(host).map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) } ?? .dnsName(host)
        try ext.append(Certificate.Extension(SubjectAlternativeNames([name]), critical: false))
        try ext.append(
            Certificate.Extension(SubjectKeyIdentifier(keyIdentifier: subjectKeyIdentifier[...]), critical: false))
        try ext.append(
            Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: authorityKeyIdentifier[...]), critical: false))
        let subject = try DistinguishedName {
            CommonName(String(host.prefix(64)))
            OrganizationName("PinningLab interception proxy")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(bytes: serial), publicKey: leafPublicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: notAfter(now),
            issuer: issuerSubject, subject: subject,
            signatureAlgorithm: Builder.signatureAlgorithm(signer: signer.type, hash: nil),
            extensions: ext, issuerPrivateKey: try signer.certificatePrivateKey)
        return try Builder.der(certificate)
    }
}
