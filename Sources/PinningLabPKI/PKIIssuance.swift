internal import Crypto
// Issuing the certificates of a spec: names, extensions and signatures with swift-certificates.
internal import Foundation
internal import SwiftASN1
internal import X509
internal import _CryptoExtras

extension Builder {
    func distinguishedName(_ attrs: [SubjectAttribute]) throws -> DistinguishedName {
        var rdns: [RelativeDistinguishedName] = []
        for a in attrs {
            let attr: RelativeDistinguishedName.Attribute
            switch a.type {
            case "C": attr = try .init(type: .RDNAttributeType.countryName, printableString: a.value)
            case "CN": attr = .init(type: .RDNAttributeType.commonName, utf8String: a.value)
            case "O": attr = .init(type: .RDNAttributeType.organizationName, utf8String: a.value)
            case "OU": attr = .init(type: .RDNAttributeType.organizationalUnitName, utf8String: a.value)
            case "L": attr = .init(type: .RDNAttributeType.localityName, utf8String: a.value)
            case "ST": attr = .init(type: .RDNAttributeType.stateOrProvinceName, utf8String: a.value)
            default: attr = try .init(type: .RDNAttributeType.emailAddress, ia5String: a.value)
            }
            rdns.append(RelativeDistinguishedName(attr))
        }
        return DistinguishedName(rdns)
    }

    static func signatureAlgorithm(signer: KeyType, hash: SignatureHash?) -> Certificate.SignatureAlgorithm {
        switch signer {
        case .p256: return hash == .sha384 ? .ecdsaWithSHA384 : hash == .sha512 ? .ecdsaWithSHA512 : .ecdsaWithSHA256
        case .p384: return hash == .sha256 ? .ecdsaWithSHA256 : hash == .sha512 ? .ecdsaWithSHA512 : .ecdsaWithSHA384
        case .ed25519: return .ed25519
        default:
            switch hash {
            case .sha1: return .sha1WithRSAEncryption
            case .sha384: return .sha384WithRSAEncryption
            case .sha512: return .sha512WithRSAEncryption
            default: return .sha256WithRSAEncryption
            }
        }
    }

    /// `extensions` with one more extension `oid` whose extnValue is `value`, last.
    static func withCTExtension(_ extensions: Certificate.Extensions, _ oid: String, critical: Bool, value: [UInt8])
        throws -> Certificate.Extensions
    {
        var out = extensions
        try out.append(
            Certificate.Extension(
                oid: ASN1ObjectIdentifier(dotRepresentation: oid), critical: critical, value: value[...]))
        return out
    }

    static func der(_ value: some DERSerializable) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.serialize(value)
        return s.serializedBytes
    }

    func issueAll(
        keys: [String: LabKey], keyOrigins: [String: StateFile.Key], ctLogs: [CTLogSigner] = [], now: Date
    ) throws -> ([Identity], StateFile) {
        let logs = Dictionary(uniqueKeysWithValues: ctLogs.map { ($0.log.name, $0) })
        var subjects: [String: DistinguishedName] = [:]
        var skis: [String: [UInt8]] = [:]
        var publicKeys: [String: LabKey] = [:]
        var reissueBy = now.timeIntervalSince1970 + 86400
        // Names and key identifiers first (an issuer's follow from the spec and its key alone), then every
        // certificate is built and signed concurrently.
        for e in spec.entities {
            let subjectKey = keys[e.keyName]!
            publicKeys[e.name] = subjectKey
            let ownSKI = Array(Insecure.SHA1.hash(data: try subjectKey.subjectPublicKeyBytes))
            skis[e.name] = e.twinOf.map { skis[$0]! } ?? ownSKI
            subjects[e.name] = try e.twinOf.map { subjects[$0]! } ?? distinguishedName(e.subject)
            for offset in [e.validity.notBefore.seconds, e.validity.notAfter.seconds] where offset > 0 {
                reissueBy = min(reissueBy, now.timeIntervalSince1970 + TimeInterval(offset) - 600)
            }
        }
        let slots = ResultSlots<StateFile.Entry>(count: spec.entities.count)
        let names = (subjects: subjects, skis: skis, publicKeys: publicKeys)
        DispatchQueue.concurrentPerform(iterations: spec.entities.count) { i in
            let (subjects, skis, publicKeys) = names
            slots.set(i) {
                let e = spec.entities[i]
                let subjectKey = publicKeys[e.name]!
                let spkiDER = try subjectKey.spkiDER
                let ski = skis[e.name]!
                let subject = subjects[e.name]!
                let issuerSpec = spec.entity(e.issuer)!
                let signer = keys[issuerSpec.keyName]!
                let issuerDN = e.isSelfSigned ? subject : subjects[e.issuer]!
                let aki = e.isSelfSigned ? ski : skis[e.issuer]!

                var serial = (0..<16).map { _ in UInt8.random(in: 0...255) }
                serial[0] = (serial[0] & 0x7f) | 0x40
                let notBefore = now.addingTimeInterval(TimeInterval(e.validity.notBefore.seconds))
                let notAfter = now.addingTimeInterval(TimeInterval(e.validity.notAfter.seconds))

                var ext = Certificate.Extensions()
                try ext.append(
                    Certificate.Extension(
                        e.isCA
                            ? BasicConstraints.isCertificateAuthority(maxPathLength: e.pathLength)
                            : .notCertificateAuthority,
                        critical: true))
                let usage =
                    e.isCA
                    ? KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true)
                    : KeyUsage(digitalSignature: true, keyEncipherment: e.keyType.isRSA)
                try ext.append(Certificate.Extension(usage, critical: true))
                if !e.usages.isEmpty {
                    let eku = try ExtendedKeyUsage(
                        e.usages.map { u -> ExtendedKeyUsage.Usage in
                            switch u {
                            case .serverAuth: return .serverAuth
                            case .clientAuth: return .clientAuth
                            case .codeSigning: return .codeSigning
                            case .ocspSigning: return .ocspSigning
                            default: return .emailProtection
                            }
                        })
                    try ext.append(Certificate.Extension(eku, critical: false))
                }
                if !e.hosts.isEmpty {
                    let names = e.hosts.map { h -> GeneralName in
                        if let ip = parseIP(h) { return .ipAddress(ASN1OctetString(contentBytes: ip[...])) }
                        return .dnsName(h)
                    }
                    try ext.append(Certificate.Extension(SubjectAlternativeNames(names), critical: false))
                }
                if !e.permitted.isEmpty || !e.excluded.isEmpty {
                    func general(_ items: [NameConstraintItem]) -> [GeneralName] {
                        items.map {
                            switch $0 {
                            case .dns(let d): return .dnsName(d)
                            case .ip(let a, let m): return .ipAddress(ASN1OctetString(contentBytes: (a + m)[...]))
                            }
                        }
                    }
                    try ext.append(
                        Certificate.Extension(
                            NameConstraints(
                                permittedSubtrees: general(e.permitted), excludedSubtrees: general(e.excluded)),
                            critical: true))
                }
                try ext.append(Certificate.Extension(SubjectKeyIdentifier(keyIdentifier: ski[...]), critical: false))
                if !e.isSelfSigned {
                    try ext.append(
                        Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: aki[...]), critical: false))
                }
                for revocationExtension in try RevocationExtensions.extensions(for: e) {
                    try ext.append(revocationExtension)
                }

                func sign(_ extensions: Certificate.Extensions) throws -> [UInt8] {
                    do {
                        // An ML-DSA subject or issuer: the lab's own DER (PostQuantumCertificates.swift).
                        if subjectKey.type.isMLDSA || signer.type.isMLDSA {
                            return try Self.postQuantumCertificate(
                                subject: subjectKey, signer: signer, hash: e.signature
                            ) {
                                try Certificate(
                                    version: .v3, serialNumber: .init(bytes: serial), publicKey: $0,
                                    notValidBefore: notBefore, notValidAfter: notAfter, issuer: issuerDN,
                                    subject: subject,
                                    signatureAlgorithm: $2, extensions: extensions, issuerPrivateKey: $1)
                            }
                        }
                        return try Self.der(
                            try Certificate(
                                version: .v3, serialNumber: .init(bytes: serial), publicKey: try subjectKey.publicKey,
                                notValidBefore: notBefore, notValidAfter: notAfter, issuer: issuerDN, subject: subject,
                                signatureAlgorithm: Self.signatureAlgorithm(signer: signer.type, hash: e.signature),
                                extensions: extensions, issuerPrivateKey: try signer.certificatePrivateKey))
                    } catch {
                        throw PKIError(
                            .issuanceFailed, "cannot issue the certificate: \(error)", file: spec.file,
                            line: e.line, entity: e.name)
                    }
                }
                // RFC 6962 §3.1: a precertificate (the certificate plus the critical poison extension) goes to the
                // logs; the final certificate carries their SCTs where the precertificate had the poison.
                var precertificateDER: [UInt8]? = nil
                if !e.embeddedSCTs.isEmpty {
                    let precert = try sign(
                        try Self.withCTExtension(
                            ext, CTObjectIdentifier.poison, critical: true,
                            value: Precertificate.poisonValue))
                    let issuerSPKI = try signer.spkiDER
                    let scts = try e.embeddedSCTs.map { r in
                        try logs[r.log]!.timestamp(
                            precertificate: precert, issuerSPKIDER: issuerSPKI,
                            at: now.addingTimeInterval(TimeInterval(r.timestamp.seconds)),
                            validSignature: r.validSignature)
                    }
                    let list = try SignedCertificateTimestamp.list(scts)
                    ext = try Self.withCTExtension(
                        ext, CTObjectIdentifier.embeddedSCTList, critical: false,
                        value: SignedCertificateTimestamp.listExtensionValue(list))
                    precertificateDER = precert
                }
                let certDER = try sign(ext)
                var tlsSCTList: [UInt8]? = nil
                if !e.tlsSCTs.isEmpty {
                    tlsSCTList = try SignedCertificateTimestamp.list(
                        e.tlsSCTs.map { r in
                            try logs[r.log]!.timestamp(
                                .x509(certificateDER: certDER),
                                at: now.addingTimeInterval(TimeInterval(r.timestamp.seconds)),
                                validSignature: r.validSignature)
                        })
                }
                return StateFile.Entry(
                    name: e.name, role: e.role.rawValue, issuerName: e.issuer, keyName: e.keyName,
                    keyType: e.keyType.rawValue, der: Data(certDER).base64EncodedString(),
                    subject: subject.description, issuer: issuerDN.description, serial: serial.hexString,
                    notBefore: notBefore.timeIntervalSince1970.rounded(.down),
                    notAfter: notAfter.timeIntervalSince1970.rounded(.down), hosts: e.hosts,
                    spki: Array(SHA256.hash(data: spkiDER)).hexString,
                    cert: Array(SHA256.hash(data: certDER)).hexString,
                    raw: Array(SHA256.hash(data: try subjectKey.subjectPublicKeyBytes)).hexString,
                    tlsSCTList: tlsSCTList.map { Data($0).base64EncodedString() },
                    precertificate: precertificateDER.map { Data($0).base64EncodedString() })
            }
        }
        let entries = try slots.values()
        let state = StateFile(
            specFingerprint: spec.fingerprint, seedFingerprint: seedFingerprint,
            issuedAt: now.timeIntervalSince1970, reissueBy: reissueBy,
            pkcs12Password: options.pkcs12Encoder == nil ? nil : options.pkcs12Password,
            keys: keyOrigins, identities: entries,
            ctLogIDs: Dictionary(uniqueKeysWithValues: ctLogs.map { ($0.log.name, $0.log.logID.hexString) }))
        return (try assemble(state: state, keys: keys), state)
    }

}
