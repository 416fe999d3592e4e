internal import Crypto
// Reading OCSP requests (RFC 6960 §4.1) and answering them from the lab PKI: what the lab's OCSP responder
// (PinningLab's `RevocationResponder`) serves. Parsed with SwiftASN1's DER parser; only the CertIDs are read.
public import Foundation
internal import SwiftASN1
internal import X509

/// One certificate an OCSP request asks about: its CertID.
public struct OCSPRequestedCertificate: Sendable, Hashable {
    /// `sha1` or `sha256` (the hash of issuerNameHash and issuerKeyHash).
    public var hashAlgorithm: String
    public var issuerNameHash: [UInt8]
    public var issuerKeyHash: [UInt8]
    /// The serial number's INTEGER content bytes, without leading zero bytes.
    public var serial: [UInt8]
    /// The serial number in lower-case hex (as ``Identity/serialHex`` spells it, compared case-insensitively).
    public var serialHex: String { serial.isEmpty ? "00" : Array(serial).hexString }
}

/// Why an OCSP request could not be read.
public struct OCSPRequestError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { "malformed OCSP request: \(reason)" }
}

public enum OCSPRequestReader {
    /// An OCSP request at most this long is read (a request for one certificate is about 80 bytes; with a nonce and
    /// a signature a few KiB).
    public static let maxBytes = 16 * 1024

    /// The CertIDs of the DER `OCSPRequest` `der`, in order (at least one).
    public static func certificates(in der: [UInt8]) throws(OCSPRequestError) -> [OCSPRequestedCertificate] {
        guard !der.isEmpty else { throw OCSPRequestError(reason: "the request is empty") }
        guard der.count <= maxBytes else {
            throw OCSPRequestError(reason: "the request has \(der.count) bytes (at most \(maxBytes))")
        }
        do {
            let root = try DER.parse(der)
            let tbs = try children(of: root, "OCSPRequest").first
            guard let tbs, tbs.identifier == .sequence else { throw OCSPRequestError(reason: "no tbsRequest SEQUENCE") }
            // version [0], requestorName [1] are optional and skipped: requestList is the first universal SEQUENCE.
            guard let list = try children(of: tbs, "tbsRequest").first(where: { $0.identifier == .sequence }) else {
                throw OCSPRequestError(reason: "no requestList in tbsRequest")
            }
            var out: [OCSPRequestedCertificate] = []
            for request in try children(of: list, "requestList") {
                guard let certID = try children(of: request, "Request").first, certID.identifier == .sequence else {
                    throw OCSPRequestError(reason: "a Request without a CertID")
                }
                let parts = try children(of: certID, "CertID")
                guard parts.count == 4 else {
                    throw OCSPRequestError(reason: "a CertID with \(parts.count) fields (4 expected)")
                }
                guard let oidNode = try children(of: parts[0], "hashAlgorithm").first else {
                    throw OCSPRequestError(reason: "a hashAlgorithm without an OID")
                }
                let oid = try ASN1ObjectIdentifier(derEncoded: oidNode)
                let algorithm: String
                switch oid {
                case [1, 3, 14, 3, 2, 26]: algorithm = "sha1"
                case [2, 16, 840, 1, 101, 3, 4, 2, 1]: algorithm = "sha256"
                default: throw OCSPRequestError(reason: "the CertID hash \(oid) is not SHA-1 or SHA-256")
                }
                let nameHash = try ASN1OctetString(derEncoded: parts[1]).bytes
                let keyHash = try ASN1OctetString(derEncoded: parts[2]).bytes
                guard parts[3].identifier == .integer, case .primitive(let serial) = parts[3].content, !serial.isEmpty
                else {
                    throw OCSPRequestError(reason: "the CertID's serialNumber is not an INTEGER")
                }
                out.append(
                    OCSPRequestedCertificate(
                        hashAlgorithm: algorithm, issuerNameHash: Array(nameHash),
                        issuerKeyHash: Array(keyHash), serial: Array(serial.drop(while: { $0 == 0 }))))
            }
            guard !out.isEmpty else { throw OCSPRequestError(reason: "the requestList is empty") }
            return out
        } catch let error as OCSPRequestError {
            throw error
        } catch {
            throw OCSPRequestError(reason: "not DER: \(error)")
        }
    }

    private static func children(of node: ASN1Node, _ what: String) throws(OCSPRequestError) -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else {
            throw OCSPRequestError(reason: "\(what) is not constructed")
        }
        return Array(nodes)
    }

    /// The DER of an `OCSPResponse` carrying only an error status (malformedRequest, unauthorized, tryLater…).
    public static func errorResponse(_ status: OCSPResponseStatus) -> [UInt8] {
        [0x30, 0x03, 0x0A, 0x01, UInt8(truncatingIfNeeded: status.rawValue)]
    }
}

/// What the lab answers to one OCSP request.
public struct OCSPAnswer: Sendable {
    /// DER `OCSPResponse`.
    public var response: [UInt8]
    /// The serial asked about (first CertID), nil when the request could not be read.
    public var serialHex: String?
    /// The lab identity with that serial and issuer, nil when none.
    public var subject: String?
    /// `good`, `revoked`, `unknown`, or the error status (`unauthorized`, `malformedRequest`).
    public var status: String
}

extension LabPKI {
    /// Answers the DER `OCSPRequest` `der` about its first certificate: the response ``ocspResponse(for:options:now:)``
    /// builds for the lab identity with that issuer key hash and serial; `unauthorized` when no CA of the lab issued it
    /// (the lab's responder is authoritative only for its own CAs), `malformedRequest` when it cannot be read.
    public func answerOCSPRequest(
        _ der: [UInt8], index: OCSPIssuerIndex? = nil, options: OCSPResponseOptions = .init(),
        now: Date = Date()
    ) -> OCSPAnswer {
        let asked: OCSPRequestedCertificate
        do {
            guard let first = try OCSPRequestReader.certificates(in: der).first else {
                throw OCSPRequestError(reason: "empty")
            }
            asked = first
        } catch {
            return OCSPAnswer(
                response: OCSPRequestReader.errorResponse(.malformedRequest), serialHex: nil, subject: nil,
                status: "malformedRequest")
        }
        guard let subject = (index ?? OCSPIssuerIndex(self)).identity(asked).flatMap({ self[$0] }) else {
            return OCSPAnswer(
                response: OCSPRequestReader.errorResponse(.unauthorized), serialHex: asked.serialHex,
                subject: nil, status: "unauthorized")
        }
        do {
            let response = try ocspResponse(for: subject.name, options: options, now: now)
            let status: String
            if options.responseStatus != .successful {
                status = options.responseStatus.description
            } else {
                switch options.status ?? spec.entity(subject.name)?.revocation ?? .good {
                case .good: status = "good"
                case .unknown: status = "unknown"
                case .revoked: status = "revoked"
                }
            }
            return OCSPAnswer(response: response, serialHex: asked.serialHex, subject: subject.name, status: status)
        } catch {
            return OCSPAnswer(
                response: OCSPRequestReader.errorResponse(.internalError), serialHex: asked.serialHex,
                subject: subject.name, status: "internalError")
        }
    }

    /// The identity a CertID names: issued by a lab CA whose key (and name) hash match, with that serial.
    public func identityAsked(_ asked: OCSPRequestedCertificate) -> Identity? {
        OCSPIssuerIndex(self).identity(asked).flatMap { self[$0] }
    }
}

/// The lab's CAs by the hashes a CertID carries (SHA-1 and SHA-256 of their names and keys), and the identities
/// they issued by serial: built once, so that answering a request hashes nothing but the request.
public struct OCSPIssuerIndex: Sendable {
    private struct Key: Hashable {
        var algorithm: String
        var nameHash: [UInt8]
        var keyHash: [UInt8]
    }
    private var issuers: [Key: Set<String>] = [:]
    /// Serial (lower-case hex without leading zeros) and issuer name → identity name.
    private var issued: [String: String] = [:]

    public init(_ pki: LabPKI) {
        for ca in pki.identities where ca.role.isCA {
            guard let cert = try? Certificate(derEncoded: ca.certificateDER) else { continue }
            var s = DER.Serializer()
            guard (try? s.serialize(cert.subject)) != nil else { continue }
            let name = s.serializedBytes
            let key = Array(cert.publicKey.subjectPublicKeyInfoBytes)
            issuers[
                Key(
                    algorithm: "sha1", nameHash: Array(Insecure.SHA1.hash(data: name)),
                    keyHash: Array(Insecure.SHA1.hash(data: key))), default: []
            ].insert(ca.name)
            issuers[
                Key(
                    algorithm: "sha256", nameHash: Array(SHA256.hash(data: name)),
                    keyHash: Array(SHA256.hash(data: key))), default: []
            ].insert(ca.name)
        }
        for id in pki.identities where !id.isSelfSigned {
            issued[Self.serialKey(id.serialHex) + " " + id.issuerName] = id.name
        }
    }

    private static func serialKey(_ hex: String) -> String {
        let s = hex.lowercased().filter { $0 != ":" }.drop(while: { $0 == "0" })
        return s.isEmpty ? "0" : String(s)
    }

    /// The name of the lab identity the CertID names, nil when no lab CA issued it.
    public func identity(_ asked: OCSPRequestedCertificate) -> String? {
        let key = Key(algorithm: asked.hashAlgorithm, nameHash: asked.issuerNameHash, keyHash: asked.issuerKeyHash)
        for issuer in (issuers[key] ?? []).sorted() {
            if let name = issued[Self.serialKey(asked.serialHex) + " " + issuer] { return name }
        }
        return nil
    }
}
