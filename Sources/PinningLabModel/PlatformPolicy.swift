import Foundation

/// A platform's TLS policy: what the platform a client runs on lets it negotiate and accept, whatever the client pins
/// (App Transport Security's floor, Android's and the JDK's defaults, OpenSSL's default security level). Some cells
/// of the catalogue are decided by it, not by pinning (DESIGN.md, "Trust beyond the chain"); a run names the policy
/// its client follows (`pinlab check --platform`, ``PinningClient/platform``, the batch document's `platform`).
///
/// The set and its sources are in the Catalogue article, "Platform policies".
public struct PlatformPolicy: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple's App Transport Security with no exception: TLS 1.2 or later, ECDHE (forward-secret) AES suites only,
    /// certificates signed with SHA-256 or better over RSA keys of 2048 bits or more (EC 256 or more).
    public static let ats = PlatformPolicy(rawValue: "ats")
    /// Android's defaults (Conscrypt, a network security config without overrides): TLS 1.2 or later; the default
    /// cipher list still holds static-RSA suites (`TLS_RSA_WITH_AES_*_GCM_*`).
    public static let android = PlatformPolicy(rawValue: "android")
    /// The JDK's defaults (JSSE, JDK 24 and later): `jdk.tls.disabledAlgorithms` holds `TLSv1`, `TLSv1.1` and
    /// `TLS_RSA_*`; `jdk.certpath.disabledAlgorithms` refuses RSA keys below 1024 bits and SHA-1 only in chains to
    /// the JDK's own CAs (`SHA1 jdkCA`), so a lab chain's RSA-1024 key and SHA-1 signature pass.
    public static let jdk = PlatformPolicy(rawValue: "jdk")
    /// OpenSSL 3 at its default security level as Linux distributions ship it (level 2; upstream's default since
    /// 3.2): RSA keys of 2048 bits or more, no SHA-1 signatures, no TLS below 1.2 — but static RSA key exchange is
    /// still in the DEFAULT list (only level 3 and above require forward secrecy). curl, Python, Node and the
    /// `openssl` tools on such a system follow it.
    public static let opensslDefault = PlatformPolicy(rawValue: "openssl-default")

    /// Every policy the catalogue may name, in the order documentation lists them.
    public static let all: [PlatformPolicy] = [.ats, .android, .jdk, .opensslDefault]
    public static var names: [String] { all.map(\.rawValue) }

    /// The known policy with this name, or `nil`.
    public static func named(_ name: String) -> PlatformPolicy? { all.first { $0.rawValue == name } }

    public var description: String { rawValue }

    public static func < (a: PlatformPolicy, b: PlatformPolicy) -> Bool {
        (all.firstIndex(of: a) ?? Int.max, a.rawValue) < (all.firstIndex(of: b) ?? Int.max, b.rawValue)
    }

    /// One line: what the policy allows that matters to the catalogue.
    public var summary: String {
        switch self {
        case .ats:
            return
                "App Transport Security: TLS 1.2+, ECDHE (forward-secret) AES suites, SHA-256+ signatures, RSA 2048+ / EC 256+"
        case .android:
            return "Android defaults (Conscrypt): TLS 1.2+, the default list still offers static RSA key exchange"
        case .jdk:
            return
                "JDK 24+ defaults: no TLS 1.0/1.1, no TLS_RSA_* suites; RSA 1024+ and SHA-1 outside the JDK's own CAs pass"
        case .opensslDefault:
            return "OpenSSL 3 at security level 2: TLS 1.2+, RSA 2048+, no SHA-1; static RSA key exchange still offered"
        default: return rawValue
        }
    }

    /// Where the policy is documented.
    public var source: String {
        switch self {
        case .ats: return "https://developer.apple.com/documentation/security/preventing-insecure-network-connections"
        case .android: return "https://developer.android.com/privacy-and-security/security-config"
        case .jdk:
            return
                "https://github.com/openjdk/jdk/pull/22163 (java.security: jdk.tls.disabledAlgorithms, jdk.certpath.disabledAlgorithms)"
        case .opensslDefault: return "https://docs.openssl.org/3.0/man3/SSL_CTX_set_security_level/"
        default: return ""
        }
    }
}
