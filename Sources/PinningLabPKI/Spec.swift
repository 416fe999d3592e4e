import Crypto
public import Foundation
import Yams

/// A time relative to the moment certificates are issued: `-1h`, `+30d`, `now`, `-1d12h`.
public struct RelativeTime: Sendable, Hashable, CustomStringConvertible {
    /// The furthest a relative time reaches: 1000 years (a certificate's dates stop at 9999).
    public static let maxSeconds: Int64 = 1000 * 365 * 86400

    public var seconds: Int64
    public init(seconds: Int64) { self.seconds = seconds }

    /// Parses `now`, `0`, or a sign followed by one or more `<number><unit>` with units s, m, h, d, w, y (365 d).
    public init?(parsing text: String) {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t == "now" || t == "0" {
            seconds = 0
            return
        }
        guard let first = t.first, first == "+" || first == "-" else { return nil }
        let sign: Int64 = first == "-" ? -1 : 1
        var total: Int64 = 0
        var number: Int64? = nil
        var sawUnit = false
        for ch in t.dropFirst() {
            if let d = ch.wholeNumberValue, ch.isASCII {
                number = (number ?? 0) * 10 + Int64(d)
                if number! > 1_000_000 { return nil }
                continue
            }
            guard let n = number else { return nil }
            let unit: Int64
            switch ch {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86400
            case "w": unit = 7 * 86400
            case "y": unit = 365 * 86400
            default: return nil
            }
            total += n * unit  // at most 1,000,000 × a year's seconds: no overflow before the bound below
            guard total <= Self.maxSeconds else { return nil }
            number = nil
            sawUnit = true
        }
        guard sawUnit, number == nil else { return nil }
        seconds = sign * total
    }

    public var description: String {
        if seconds == 0 { return "now" }
        let a = abs(seconds)
        let sign = seconds < 0 ? "-" : "+"
        for (u, n) in [("y", Int64(365 * 86400)), ("d", 86400), ("h", 3600), ("m", 60)] where a % n == 0 {
            return "\(sign)\(a / n)\(u)"
        }
        return "\(sign)\(a)s"
    }
}

/// Validity relative to issuance.
public struct RelativeValidity: Sendable, Hashable {
    public var notBefore: RelativeTime
    public var notAfter: RelativeTime
    public init(notBefore: RelativeTime, notAfter: RelativeTime) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }
}

/// A hash for the issuer's signature.
public struct SignatureHash: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let sha1 = SignatureHash(rawValue: "sha1")
    public static let sha256 = SignatureHash(rawValue: "sha256")
    public static let sha384 = SignatureHash(rawValue: "sha384")
    public static let sha512 = SignatureHash(rawValue: "sha512")
    public static let all: [SignatureHash] = [.sha1, .sha256, .sha384, .sha512]
    public var description: String { rawValue }
}

/// Extended key usages an entity may carry.
public struct KeyUsagePurpose: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let serverAuth = KeyUsagePurpose(rawValue: "serverAuth")
    public static let clientAuth = KeyUsagePurpose(rawValue: "clientAuth")
    public static let codeSigning = KeyUsagePurpose(rawValue: "codeSigning")
    public static let emailProtection = KeyUsagePurpose(rawValue: "emailProtection")
    /// A delegated OCSP responder's certificate (id-kp-OCSPSigning).
    public static let ocspSigning = KeyUsagePurpose(rawValue: "ocspSigning")
    public static let all: [KeyUsagePurpose] = [.serverAuth, .clientAuth, .codeSigning, .emailProtection, .ocspSigning]
    public var description: String { rawValue }
}

/// A DNS name or an IP range (`127.0.0.0/8`, `::1/128`) in a name constraint.
public enum NameConstraintItem: Sendable, Hashable, CustomStringConvertible {
    case dns(String)
    case ip(address: [UInt8], mask: [UInt8])
    public var description: String {
        switch self {
        case .dns(let d): return d
        case .ip(let a, let m):
            let prefix = m.reduce(0) { $0 + $1.nonzeroBitCount }
            return "\(formatIP(a))/\(prefix)"
        }
    }
}

/// One entity of the spec as written, with defaults applied.
public struct EntitySpec: Sendable, Hashable {
    public var name: String
    public var role: Role
    /// The issuing entity; equal to `name` for roots and self-signed certificates.
    public var issuer: String
    public var keyName: String
    public var keyType: KeyType
    /// Relative distinguished names in order, e.g. `[("CN", "PinningLab Root CA"), ("O", "PinningLab")]`.
    public var subject: [SubjectAttribute]
    public var hosts: [String]
    public var validity: RelativeValidity
    public var signature: SignatureHash?
    public var isCA: Bool
    public var pathLength: Int?
    public var permitted: [NameConstraintItem]
    public var excluded: [NameConstraintItem]
    public var usages: [KeyUsagePurpose]
    /// Copy subject DN and subject key identifier from this entity (a name-collision twin).
    public var twinOf: String?
    public var summary: String?
    /// The OCSP responder URL written in the Authority Information Access extension (`http://ocsp.pinning.test/…`).
    public var ocspResponder: String? = nil
    /// The CRL distribution point (`http://crl.pinning.test/…`).
    public var crlDistributionPoint: String? = nil
    /// The TLS feature extension with status_request (Must-Staple).
    public var mustStaple: Bool = false
    /// What the lab's OCSP responses and CRLs say about this entity.
    public var revocation: RevocationStatus = .good
    /// Line of the entity in the spec file.
    public var line: Int
    /// SCTs embedded through the precertificate flow (`scts:`), in order.
    public var embeddedSCTs: [SCTRequest] = []
    /// SCTs over the final certificate (`tlsSCTs:`), for the TLS extension and OCSP responses.
    public var tlsSCTs: [SCTRequest] = []

    public var isSelfSigned: Bool { issuer == name }
}

public struct SubjectAttribute: Sendable, Hashable {
    public var type: String
    public var value: String
}

/// The lab PKI spec (`pki/lab.yaml`): named keys and entities, validated.
public struct PKISpec: Sendable {
    /// The file the spec was read from (for errors).
    public var file: String
    /// Named keys and their types, e.g. `K1: p256`; entities without `key:` get a key named after themselves.
    public var keys: [String: KeyType]
    /// Entities in an order where every issuer comes before what it issues.
    public var entities: [EntitySpec]
    /// SHA-256 of the spec text: certificates are re-issued when it changes.
    public var fingerprint: String
    /// The lab's Certificate Transparency logs (`ctLogs:`).
    public var ctLogs: [CTLogSpec] = []
    /// What `defaults:` set: a part added with ``adding(part:file:)`` takes them.
    var defaults = SpecDefaults()

    public func entity(_ name: String) -> EntitySpec? { entities.first { $0.name == name } }
    public var names: [String] { entities.map(\.name) }

    public static func load(contentsOf url: URL) throws -> PKISpec {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw PKIError(
                .fileUnreadable, "cannot read the PKI spec: \(error.localizedDescription)", file: url.path,
                fix: "check the path, or run without --spec to use the built-in lab PKI")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            // The line of the first byte that is not UTF-8 (Latin-1 or UTF-16 saved by an editor).
            var line = 1
            var i = 0
            let bytes = [UInt8](data)
            while i < bytes.count {
                let b = bytes[i]
                let n = b < 0x80 ? 1 : b >> 5 == 0b110 ? 2 : b >> 4 == 0b1110 ? 3 : b >> 3 == 0b11110 ? 4 : 0
                let valid = n > 0 && i + n <= bytes.count && bytes[(i + 1)..<(i + n)].allSatisfy { $0 >> 6 == 0b10 }
                if !valid { break }
                if b == 0x0A { line += 1 }
                i += n
            }
            throw PKIError(
                .fileUnreadable, "the PKI spec is not UTF-8 text (line \(line) holds a byte that is not)",
                file: url.path, line: line, fix: "save the file as UTF-8")
        }
        return try parse(yaml: text, file: url.path)
    }

    public static func parse(yaml: String, file: String = "<spec>") throws -> PKISpec {
        try SpecParser(file: file, text: yaml).parse()
    }
}
