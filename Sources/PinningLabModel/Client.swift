import Foundation
import PinningLabBase
import PinningLabPKI  // Locked

/// What a client under test pins, relative to the identity it was built for (DESIGN.md, "Pin profile").
public struct PinProfile: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = PinProfile(rawValue: "none")
    public static let leafCert = PinProfile(rawValue: "leaf-cert")
    public static let leafSPKI = PinProfile(rawValue: "leaf-spki")
    public static let leafSPKIBackup = PinProfile(rawValue: "leaf-spki+backup")
    public static let intermediateSPKI = PinProfile(rawValue: "intermediate-spki")
    public static let rootSPKI = PinProfile(rawValue: "root-spki")
    /// All profiles, in the order reports show them.
    public static let all: [PinProfile] = [.none, .leafCert, .leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI]
    public var description: String { rawValue }
    public static func < (a: PinProfile, b: PinProfile) -> Bool {
        (all.firstIndex(of: a) ?? Int.max, a.rawValue) < (all.firstIndex(of: b) ?? Int.max, b.rawValue)
    }
    /// Whether the pins of this profile are hashes of whole certificates rather than of SPKIs.
    public var pinsCertificates: Bool { self == .leafCert }
}

/// The hashes a client holds for one cell: SHA-256 of SPKIs, or of whole certificates for `leaf-cert`.
/// Empty for the profile `none`.
public struct PinSet: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case spkiSHA256 = "spki-sha256"
        case certificateSHA256 = "cert-sha256"
    }
    public var kind: Kind
    public var hashes: [[UInt8]]
    public init(kind: Kind, hashes: [[UInt8]]) {
        self.kind = kind
        self.hashes = hashes
    }
    public static let empty = PinSet(kind: .spkiSHA256, hashes: [])
    public var isEmpty: Bool { hashes.isEmpty }
    public var base64: [String] { hashes.map { Data($0).base64EncodedString() } }
}

/// A client certificate and key the client should present (mutual TLS).
public struct ClientCredentials: Sendable, Hashable {
    /// The client certificate first, then its issuers (without the root).
    public var certificateChainDER: [[UInt8]]
    public var privateKeyPKCS8DER: [UInt8]
    /// Files on disk for command-line clients (PEM certificate, PEM PKCS#8 key, PKCS#12 and its password).
    public var certificateFile: String?
    public var keyFile: String?
    public var pkcs12File: String?
    public var pkcs12Password: String?
    public init(
        certificateChainDER: [[UInt8]], privateKeyPKCS8DER: [UInt8], certificateFile: String? = nil,
        keyFile: String? = nil, pkcs12File: String? = nil, pkcs12Password: String? = nil
    ) {
        self.certificateChainDER = certificateChainDER
        self.privateKeyPKCS8DER = privateKeyPKCS8DER
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.pkcs12File = pkcs12File
        self.pkcs12Password = pkcs12Password
    }
}

/// The host names a client's pins are declared for, as a pinning library configures them per host (OkHttp
/// `CertificatePinner` patterns `api.example.com` / `**.api.example.com`, TrustKit's `kTSKIncludeSubdomains`,
/// Alamofire's `ServerTrustManager` evaluators): `domain` itself and, with `includeSubdomains`, every name below
/// it. A host outside the scope is not pinned: a correct client validates it normally and ignores the pins.
public struct PinScope: Sendable, Hashable, Codable, CustomStringConvertible {
    public var domain: String
    public var includeSubdomains: Bool

    public init(domain: String, includeSubdomains: Bool) {
        self.domain = domain
        self.includeSubdomains = includeSubdomains
    }

    /// Whether pins declared for this scope apply to `host`. Both names are compared in their normal form
    /// (``normalizedHost(_:)``): `API.Pinning.Test` and `api.pinning.test.` are the host `api.pinning.test`, so its
    /// pins apply to them exactly as declared.
    public func covers(_ host: String) -> Bool {
        let h = Self.normalizedHost(host)
        let d = Self.normalizedHost(domain)
        return h == d || (includeSubdomains && h.hasSuffix("." + d))
    }

    /// A DNS name as a pin scope compares it: lower-cased, with one trailing dot (the fully qualified spelling,
    /// `api.pinning.test.`) dropped. DNS names compare case-insensitively, and the trailing dot names the same host.
    public static func normalizedHost(_ host: String) -> String {
        let lower = host.lowercased()
        return lower.count > 1 && lower.hasSuffix(".") ? String(lower.dropLast()) : lower
    }

    /// OkHttp's `CertificatePinner` pattern for this scope: `api.pinning.test` or `**.api.pinning.test`.
    public var okHttpPattern: String { includeSubdomains ? "**." + domain : domain }

    public var description: String { includeSubdomains ? "\(domain) and its subdomains" : domain }
}

/// Everything a client under test is told for one cell (scenario × pin profile × engine).
public struct ClientTarget: Sendable {
    /// The host name the client must use and verify: `localhost`.
    public var host: String
    /// The address the server listens on, e.g. `127.0.0.1`.
    public var ip: String
    public var port: Int
    /// `https://localhost:PORT/`.
    public var url: String { "https://\(host.contains(":") ? "[\(host)]" : host):\(port)/" }
    /// The roots in the client's trust store (DER), per the scenario's trust profile.
    public var trustRootsDER: [[UInt8]]
    /// The same roots as a PEM file, for command-line clients.
    public var trustFile: String?
    public var pins: PinSet
    public var clientCredentials: ClientCredentials?
    public var scenario: String
    public var profile: PinProfile
    /// How long the client may take in all before it is stopped and counted as refused.
    public var timeout: Duration
    /// An HTTP CONNECT proxy (`127.0.0.1:PORT`) to reach `host:port` through, as a device configured with a proxy
    /// does (`pinlab intercept`); `nil`: connect to `ip:port` directly.
    public var proxy: String?
    /// The hosts `pins` are declared for; `nil` declares them for `host` itself. A client that supports scopes
    /// applies its pins only when ``pinsApply``.
    public var pinScope: PinScope?
    /// The TLS session cache of the cell, shared by its connections: set for every step of a scenario made of
    /// several connections (the same object for all of them), `nil` for a one-connection cell, which starts with
    /// no session. Only a client whose `keepsSessionsAcrossSteps` is true gets steps.
    public var sessionCache: ClientSessionCache?
    /// The step's number (1, 2, …) in a scenario made of several connections; `nil` for a one-connection cell.
    public var step: Int?
    /// Whether the app sends its request as TLS 1.3 early data (0-RTT) when the session it resumes allows it (the
    /// step's `early-data: send`). A client that pins must not send early data on a session whose chain it has not
    /// checked against the pins now in force: early data leaves before the server says anything.
    public var earlyData = false
    /// Certificate Transparency as the app turns it on for this host (Android's per-domain `certificateTransparency`
    /// in a network security config): the logs it knows and the roots whose chains need SCTs. `nil`: CT is not
    /// turned on for this host, so even a client that requires CT checks none here. The runner sets it for the
    /// catalogue's `ct` scenarios, with the lab's listed logs and lab-root.
    public var certificateTransparency: CertificateTransparencyPolicy?
    /// Whether the server offers HTTP/2 (ALPN `h2`): a client that speaks it offers `h2` and sends its request as
    /// an HTTP/2 stream, and may keep the connection for a later step's request (connection reuse, coalescing).
    public var http2 = false
    /// The lab's revocation responder for this cell, `IP:PORT` on loopback: where the URLs the lab's certificates
    /// name (`http://ocsp.pinning.test/<path>`, `http://crl.pinning.test/<path>`) are answered, path for path, as a
    /// client that resolves those names to it would reach them (`http://IP:PORT/<path>`). `nil`: the scenario
    /// serves no responder, so a client that tries to fetch status reaches nothing (it cannot resolve the names).
    public var revocationResponder: String?
    /// Whether the pins are declared for `host` (always, without a scope).
    public var pinsApply: Bool { pinScope?.covers(host) ?? true }
    /// The pins a client configures for ``host``: ``pins`` where they are declared for it (``pinsApply``), none
    /// where they are declared for other hosts only — what an app's pinning configuration gives this connection.
    public var effectivePins: PinSet { pinsApply ? pins : PinSet(kind: pins.kind, hashes: []) }

    public init(
        host: String = "localhost", ip: String = "127.0.0.1", port: Int, trustRootsDER: [[UInt8]],
        trustFile: String? = nil, pins: PinSet, clientCredentials: ClientCredentials? = nil, scenario: String,
        profile: PinProfile, timeout: Duration = .seconds(10), proxy: String? = nil, pinScope: PinScope? = nil
    ) {
        self.proxy = proxy
        self.host = host
        self.ip = ip
        self.port = port
        self.trustRootsDER = trustRootsDER
        self.trustFile = trustFile
        self.pins = pins
        self.clientCredentials = clientCredentials
        self.scenario = scenario
        self.profile = profile
        self.timeout = timeout
        self.pinScope = pinScope
    }
}

/// What a client that requires Certificate Transparency is told for one host: the public keys of the logs on its
/// log list and the roots whose chains must carry SCTs. Chains ending at any other trusted root (one the user or an
/// administrator installed: a proxy's) are exempt, as Chrome, Apple platforms and Android exempt them.
public struct CertificateTransparencyPolicy: Sendable, Hashable {
    /// SubjectPublicKeyInfo DER of each listed log; a log's ID is the SHA-256 of its key.
    public var logPublicKeysDER: [[UInt8]]
    /// The roots (DER) whose chains must carry SCTs: the platform's own roots, never a user-installed one.
    public var enforcedRootsDER: [[UInt8]]
    /// How many distinct listed logs must have signed valid SCTs (Chrome and Apple ask for two).
    public var minimumDistinctLogs: Int

    public init(logPublicKeysDER: [[UInt8]], enforcedRootsDER: [[UInt8]], minimumDistinctLogs: Int = 2) {
        self.logPublicKeysDER = logPublicKeysDER
        self.enforcedRootsDER = enforcedRootsDER
        self.minimumDistinctLogs = minimumDistinctLogs
    }
}

/// Why a client refused, where it can tell.
public struct RefusalCategory: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let pinMismatch = RefusalCategory(rawValue: "pin-mismatch")
    public static let chainInvalid = RefusalCategory(rawValue: "chain-invalid")
    public static let hostname = RefusalCategory(rawValue: "hostname")
    public static let clientAuth = RefusalCategory(rawValue: "client-auth")
    public static let protocolError = RefusalCategory(rawValue: "protocol")
    public static let timeout = RefusalCategory(rawValue: "timeout")
    public static let other = RefusalCategory(rawValue: "other")
    public var description: String { rawValue }
}

/// What a client says it did. The server's observation is the oracle; this is the client's own claim.
public struct ClientOutcome: Sendable, Hashable, Codable {
    public enum Claim: String, Sendable, Hashable, Codable { case accepted, refused }
    public var claim: Claim
    public var category: RefusalCategory?
    /// A human explanation, e.g. "certificate verify failed: unable to get local issuer certificate".
    public var detail: String
    /// Exit status for command clients.
    public var exitStatus: Int32?
    public init(claim: Claim, category: RefusalCategory? = nil, detail: String = "", exitStatus: Int32? = nil) {
        self.claim = claim
        self.category = category
        self.detail = detail
        self.exitStatus = exitStatus
    }
    public static func accepted(_ detail: String = "") -> ClientOutcome { .init(claim: .accepted, detail: detail) }
    public static func refused(_ category: RefusalCategory, _ detail: String) -> ClientOutcome {
        .init(claim: .refused, category: category, detail: detail)
    }
}

/// A TLS session cache that lives as long as one cell: the connections (steps) of a cell share it, so a client
/// can resume in step 2 the session it got in step 1. What a client keeps in it, and under which key (the host
/// name, the address), is the client's own business — which key it picks is part of what is tested.
/// Thread-safe; values are opaque to PinningLab.
public final class ClientSessionCache: Sendable {
    private let entries = Locked<[String: any Sendable]>([:])
    public init() {}
    /// What the client stored under `key`.
    public func value(forKey key: String) -> (any Sendable)? { entries.withLock { $0[key] } }
    /// Stores `value` under `key`, replacing what was there.
    public func store(_ value: any Sendable, forKey key: String) { entries.withLock { $0[key] = value } }
    /// Forgets `key` (a session that failed to resume).
    public func removeValue(forKey key: String) { _ = entries.withLock { $0.removeValue(forKey: key) } }
    public var count: Int { entries.withLock { $0.count } }
}

/// An in-process client under test: connects to `target`, decides whether to trust the server, and if it does,
/// sends `GET / HTTP/1.1` with `Host: localhost` and reads the response.
public protocol PinningClient: Sendable {
    /// A short name for reports, e.g. `correct`.
    var name: String { get }
    /// The profiles this client can express; `nil` means all. Cells outside are skipped, not failed.
    var supportedProfiles: Set<PinProfile>? { get }
    /// The platform TLS policy the client follows (`ats`, `android`, `jdk`, `openssl-default`): the cells a
    /// platform decides are judged by its expectation. `nil` (the default): the catalogue's `expect`.
    var platform: PlatformPolicy? { get }
    /// What the client claims to check beyond its pins (revocation, CT): cells whose outcome depends on a check
    /// are judged by the scenario's expectation for it. ``ClientChecks/undeclared`` (the default): those cells are
    /// undecided, never pass or fail.
    var checks: ClientChecks { get }
    func run(_ target: ClientTarget) async -> ClientOutcome
    /// Whether the client keeps TLS sessions across the connections of a cell (`target.sessionCache`): only then
    /// is it run through scenarios made of several connections; otherwise those cells are `unsupported`.
    var keepsSessionsAcrossSteps: Bool { get }
}

extension PinningClient {
    public var supportedProfiles: Set<PinProfile>? { nil }
    public var platform: PlatformPolicy? { nil }
    public var checks: ClientChecks { .undeclared }
    public var keepsSessionsAcrossSteps: Bool { false }
}
