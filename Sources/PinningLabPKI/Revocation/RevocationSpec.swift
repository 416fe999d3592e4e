// What the spec says about an identity's revocation: where its status is published (an OCSP responder in the
// Authority Information Access extension, a CRL distribution point), whether its server must staple (the TLS
// feature extension), and the status itself.

/// The reason of a revocation (RFC 5280 section 5.3.1 CRLReason; the same codes in OCSP's RevokedInfo).
public struct RevocationReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unspecified = RevocationReason(rawValue: "unspecified")
    public static let keyCompromise = RevocationReason(rawValue: "keyCompromise")
    public static let cACompromise = RevocationReason(rawValue: "cACompromise")
    public static let affiliationChanged = RevocationReason(rawValue: "affiliationChanged")
    public static let superseded = RevocationReason(rawValue: "superseded")
    public static let cessationOfOperation = RevocationReason(rawValue: "cessationOfOperation")
    public static let certificateHold = RevocationReason(rawValue: "certificateHold")
    public static let privilegeWithdrawn = RevocationReason(rawValue: "privilegeWithdrawn")
    public static let aACompromise = RevocationReason(rawValue: "aACompromise")
    public static let all: [RevocationReason] = [
        .unspecified, .keyCompromise, .cACompromise, .affiliationChanged, .superseded, .cessationOfOperation,
        .certificateHold, .privilegeWithdrawn, .aACompromise,
    ]
    /// The CRLReason code (7 is unused; removeFromCRL, 8, only appears in delta CRLs and is not offered).
    public var code: Int {
        switch self {
        case .keyCompromise: return 1
        case .cACompromise: return 2
        case .affiliationChanged: return 3
        case .superseded: return 4
        case .cessationOfOperation: return 5
        case .certificateHold: return 6
        case .privilegeWithdrawn: return 9
        case .aACompromise: return 10
        default: return 0
        }
    }
    public var description: String { rawValue }
}

/// The revocation status the lab publishes for an identity (in OCSP responses and CRLs).
public enum RevocationStatus: Sendable, Hashable, CustomStringConvertible {
    /// Not revoked (the default).
    case good
    /// Revoked for `reason` at `date`, relative to the moment certificates are issued (never after it).
    case revoked(reason: RevocationReason, date: RelativeTime)
    /// The responder does not know the certificate.
    case unknown

    public var isRevoked: Bool {
        if case .revoked = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .good: return "good"
        case .unknown: return "unknown"
        case .revoked(let reason, let date): return "revoked (\(reason), \(date))"
        }
    }
}

/// The lab host names revocation URLs may use: the harness serves them on loopback, so a certificate never sends a
/// client to a real host.
public enum RevocationHosts {
    public static let ocsp = "ocsp.pinning.test"
    public static let crl = "crl.pinning.test"
}
