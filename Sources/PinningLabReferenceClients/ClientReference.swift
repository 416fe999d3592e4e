// The built-in reference clients: one `correct` OpenSSL client and teaching clients that each make exactly one
// classic pinning mistake. They are judged like any other client: the server sees whether the request arrived.
import PinningLabCore
public import PinningLabModel
internal import Foundation

/// An in-process TLS client built on OpenSSL (libssl 3), either correct or with exactly one classic mistake.
///
/// Every variant connects to `target.ip:target.port`, sends SNI `target.host` (and verifies the certificate for that
/// name, whatever the address), trusts exactly `target.trustRootsDER` (never the system store) at OpenSSL security
/// level 2 with TLS 1.2 or later and forward-secret suites only (ECDHE in TLS 1.2: App Transport Security's
/// floor), applies its pins only when they are declared for `target.host` (`target.pinsApply`), presents
/// `target.clientCredentials` when given, and bounds everything by `target.timeout`. When it trusts the server it
/// sends `GET / HTTP/1.1` with `Host: <target.host>` and `Connection: close` and reads the response; when it
/// refuses it closes (after OpenSSL's alert, since every decision is taken inside the handshake) without sending
/// any application data.
///
/// Each run builds its own `SSL_CTX`, so runs are independent and may proceed concurrently from many tasks; the
/// blocking work happens on a dedicated thread, never on the cooperative pool.
public struct ReferenceClient: PinningClient {
    /// The one mistake a teaching client makes (`none` for the correct client). An open set of names; only the
    /// static members below exist.
    public struct Mistake: Hashable, Sendable, CustomStringConvertible {
        /// The client name this mistake gives, e.g. `pin-presented-chain`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// No mistake: validate chain and hostname, then match pins against the *validated* chain.
        public static let none = Mistake("correct")
        /// CVE-2016-2402 style: pins are matched against the chain the server *sent* rather than the validated
        /// chain, so a stuffed chain (a proxy leaf with the genuine pinned certificates appended) passes.
        public static let pinPresentedChain = Mistake("pin-presented-chain")
        /// A pin match *replaces* validation: no chain, expiry or hostname check at all; any presented
        /// certificate matching a pin is enough. With no pins configured (profile `none`) there is nothing to
        /// replace validation with, so the client falls back to normal chain and hostname validation.
        public static let pinReplacesValidation = Mistake("pin-replaces-validation")
        /// Validates the chain and the pins like `correct` but never checks the hostname.
        public static let noHostnameCheck = Mistake("no-hostname-check")
        /// Like `correct`, but an SPKI pin is compared with the SHA-256 of the bare key bytes (what iOS
        /// `SecKeyCopyExternalRepresentation` returns: the contents of the SPKI's BIT STRING), so SPKI pins never
        /// match. Certificate pins are unaffected.
        public static let rawKeyHash = Mistake("raw-key-hash")
        /// Validates chain and hostname, ignores pins.
        public static let noPinning = Mistake("no-pinning")
        /// Validates chain and hostname like `correct`, but matches pins against a path it builds itself by
        /// following issuer *names* from the leaf through the certificates the server sent (then the trusted roots),
        /// instead of the validated chain: a rogue issuer that copies a pinned CA's name leads it to the genuine,
        /// pinned CA sent alongside.
        public static let pinsByIssuerName = Mistake("pins-by-issuer-name")
        /// Like `correct`, but applies its pins to every host it connects to, ignoring the scope they were
        /// declared for (`target.pinScope`): a host outside it (a CDN, a forced-update check) is refused.
        public static let pinsEveryHost = Mistake("pins-every-host")
        /// Like `correct` on every full handshake, but a resumed session is trusted without checking its pins
        /// again (the host name still is): the pin check lives in a callback that runs only when certificates
        /// arrive, like Go's `tls.Config.VerifyPeerCertificate` (golang/go #31641, #77217).
        public static let skipsPinsOnResumption = Mistake("skips-pins-on-resumption")
        /// Checks revocation hard-fail like `correct-revocation-hard` (staples, then the fetched status of every
        /// certificate below the trust anchor), but skips the whole check when a pin matched: a pinned key is taken
        /// as proof enough, so a revoked certificate for a key still in the pin set (the old K1 after an emergency
        /// re-key, kept as a backup pin) is accepted. Declares `revocation=hard`.
        public static let trustsRevokedBackupPin = Mistake("trusts-revoked-backup-pin")

        /// Like `correct`, but decides whether its pins apply by comparing the host name with the scope they were
        /// declared for byte for byte: `API.Pinning.Test` or `api.pinning.test.` (the same host) escape the pins
        /// declared for `api.pinning.test` (square/okhttp #2609 and the trailing-dot bypass).
        public static let caseSensitiveScope = Mistake("case-sensitive-scope")

        /// Like `correct`, but keeps its sessions per address and, on resuming one made for another host name,
        /// trusts it as that host's decision left it: neither the new host's name nor its pins are checked again
        /// (Bun's reused sessions across server names, oven-sh/bun #33734). A session resumed for the host it was
        /// made for is checked again like `correct` does.
        public static let sharesSessionsAcrossHosts = Mistake("shares-sessions-across-hosts")

        /// Like `correct`, but over HTTP/2 it sends a request for another host on a connection it keeps open
        /// whenever that connection's certificate covers the host (coalescing), without checking the host's pins:
        /// the pins were checked when the connection was made, for the host it was made for (OkHttp coalesces only
        /// when `CertificatePinner` accepts, square/okhttp #3207).
        public static let coalescesWithoutPins = Mistake("coalesces-without-pins")

        /// Like `correct`, but where the app sends its request as TLS 1.3 early data (``ClientTarget/earlyData``), it
        /// does so on any session that allows it, before checking that session's chain against the pins now in
        /// force: the pins are checked once the handshake completes, when the request has already reached the
        /// server. A session made before the pins were in force delivers the request to an interceptor as 0-RTT.
        public static let sendsEarlyDataOnResumption = Mistake("sends-early-data-on-resumption")

        public static let all: [Mistake] = [
            .none, .pinPresentedChain, .pinReplacesValidation, .noHostnameCheck, .rawKeyHash, .noPinning,
            .pinsByIssuerName, .pinsEveryHost, .skipsPinsOnResumption, .caseSensitiveScope, .sharesSessionsAcrossHosts,
            .trustsRevokedBackupPin, .coalescesWithoutPins, .sendsEarlyDataOnResumption,
        ]

        /// The mistake whose client name is `name`, if there is one.
        public init?(clientName name: String) {
            guard let found = Mistake.all.first(where: { $0.rawValue == name }) else { return nil }
            self = found
        }

        public var description: String { rawValue }

        /// One sentence for reports and labs: what this client does wrong.
        public var explanation: String {
            switch self {
            case .pinPresentedChain:
                return "matches pins against the chain the server sent instead of the validated chain (CVE-2016-2402)"
            case .pinReplacesValidation:
                return "accepts any presented certificate matching a pin without validating chain or hostname"
            case .noHostnameCheck:
                return "validates the chain and pins but never checks that the certificate is for the host"
            case .rawKeyHash:
                return "hashes the bare key bytes (SecKeyCopyExternalRepresentation) instead of the SPKI DER"
            case .noPinning:
                return "validates chain and hostname but ignores pins"
            case .pinsEveryHost:
                return "applies its pins to every host, also to hosts outside the scope they were declared for"
            case .trustsRevokedBackupPin:
                return "checks revocation (hard-fail) only when no pin matched: a revoked certificate whose key is still pinned is accepted"
            case .skipsPinsOnResumption:
                return "checks pins only on full handshakes: a resumed session is trusted without its pins (Go's VerifyPeerCertificate)"
            case .caseSensitiveScope:
                return "compares the host with its pins' scope byte for byte: an upper-case or trailing-dot spelling of a pinned host escapes its pins"
            case .sharesSessionsAcrossHosts:
                return "resumes a session made for another host name as that host's decision left it, without checking the new host's name or pins"
            case .coalescesWithoutPins:
                return "over HTTP/2, reuses a connection made for another host whose certificate covers this one without checking this host's pins"
            case .sendsEarlyDataOnResumption:
                return "sends its request as 0-RTT early data on a resumed session before checking the session's chain against its pins: the request leaves before the refusal"
            case .pinsByIssuerName:
                return "matches pins against a path built by following issuer names through the sent certificates, not the validated chain"
            default:
                return "validates chain and hostname, then matches pins against the validated chain"
            }
        }
    }

    public let mistake: Mistake
    /// What the client does with revocation status: `none` ignores it (and asks for no staple); otherwise it reads
    /// the stapled OCSP response, or, when none is stapled, fetches the status the leaf names — its OCSP responder,
    /// then its CRL distribution point — from ``ClientTarget/revocationResponder`` (the lab's revocation hosts lead
    /// nowhere else); then it does the same for every CA certificate of the verified chain below the trust anchor,
    /// from the OCSP responder or CRL each names (a staple speaks for the leaf only). `soft` refuses only validly
    /// signed, current proof that one of them is revoked; `hard` refuses unless it holds a validly signed, current
    /// "good" (a staple, a fetched OCSP response, or a current CRL that does not list it) for each one that names a
    /// responder or CRL (one that names neither publishes no status to demand). Either refuses a Must-Staple leaf
    /// served without a staple.
    public let revocation: ClientChecks.Revocation
    /// `required`: where the target turns Certificate Transparency on (``ClientTarget/certificateTransparency``),
    /// a chain ending at one of its enforced roots must carry valid SCTs (embedded, in the TLS extension or in a
    /// stapled OCSP response) from at least its minimum of distinct listed logs, none dated in the future; a chain
    /// ending at another trusted root (user-installed) is exempt. `none`: SCTs are ignored.
    public let ct: ClientChecks.CT
    /// `correct`, `correct-revocation-hard` for a client that checks staples, `correct-ct-required` for one that
    /// requires CT.
    public var name: String {
        if ct == .required { return "\(mistake.rawValue)-ct-required" }
        return revocation == .none || mistake == .trustsRevokedBackupPin ? mistake.rawValue : "\(mistake.rawValue)-revocation-\(revocation)"
    }
    /// Every reference client declares its revocation and CT checking.
    public var checks: ClientChecks { ClientChecks(revocation: revocation, ct: ct) }

    public init(mistake: Mistake = .none, revocation: ClientChecks.Revocation = .none, ct: ClientChecks.CT = .none) {
        self.mistake = mistake
        self.ct = ct
        // Its mistake is in how it checks revocation, so it checks it.
        self.revocation = mistake == .trustsRevokedBackupPin ? .hard : revocation
    }

    /// Every reference client keeps a session cache across the steps of a cell (`target.sessionCache`), keyed by
    /// the server's address, and decides again on every connection, resumed ones included.
    public var keepsSessionsAcrossSteps: Bool { true }

    public static let correct = ReferenceClient(mistake: .none)
    public static let pinPresentedChain = ReferenceClient(mistake: .pinPresentedChain)
    public static let pinReplacesValidation = ReferenceClient(mistake: .pinReplacesValidation)
    public static let noHostnameCheck = ReferenceClient(mistake: .noHostnameCheck)
    public static let rawKeyHash = ReferenceClient(mistake: .rawKeyHash)
    public static let noPinning = ReferenceClient(mistake: .noPinning)
    public static let pinsByIssuerName = ReferenceClient(mistake: .pinsByIssuerName)
    public static let pinsEveryHost = ReferenceClient(mistake: .pinsEveryHost)
    public static let skipsPinsOnResumption = ReferenceClient(mistake: .skipsPinsOnResumption)
    public static let caseSensitiveScope = ReferenceClient(mistake: .caseSensitiveScope)
    public static let sharesSessionsAcrossHosts = ReferenceClient(mistake: .sharesSessionsAcrossHosts)
    public static let coalescesWithoutPins = ReferenceClient(mistake: .coalescesWithoutPins)
    public static let sendsEarlyDataOnResumption = ReferenceClient(mistake: .sendsEarlyDataOnResumption)
    /// The correct client that also checks stapled OCSP responses, soft-fail.
    public static let correctRevocationSoft = ReferenceClient(mistake: .none, revocation: .soft)
    /// The correct client that also checks stapled OCSP responses, hard-fail.
    public static let correctRevocationHard = ReferenceClient(mistake: .none, revocation: .hard)
    /// The correct client that also requires Certificate Transparency (two SCTs from distinct listed logs) where
    /// the target turns it on, exempting chains to user-installed roots.
    public static let correctCTRequired = ReferenceClient(mistake: .none, ct: .required)

    /// Runs one connection on a dedicated thread and resumes with its outcome.
    public func run(_ target: ClientTarget) async -> ClientOutcome {
        await onDedicatedThread(named: "pinlab.client") { [self] in runBlocking(target) }
    }

    /// Runs one connection on the calling thread, blocking it for at most about `target.timeout`.
    /// Do not call this from the cooperative thread pool; `run(_:)` does the right thing.
    public func runBlocking(_ target: ClientTarget) -> ClientOutcome {
        ClientConnection.run(target: target, mistake: mistake, revocation: revocation, ct: ct)
    }
}

/// The catalogue of reference clients, by name.
public enum ReferenceClients {
    /// `correct` first, then the teaching clients, one per mistake.
    public static let all: [any PinningClient] = ReferenceClient.Mistake.all.map { ReferenceClient(mistake: $0) }

    /// The names of `all`, in order.
    public static var names: [String] { ReferenceClient.Mistake.all.map(\.rawValue) }

    /// The reference client called `name` (`correct`, `pin-presented-chain`, `pin-replaces-validation`,
    /// `no-hostname-check`, `raw-key-hash`, `no-pinning`, `pins-by-issuer-name`, `pins-every-host`,
    /// `skips-pins-on-resumption`, `case-sensitive-scope`, `shares-sessions-across-hosts`, `trusts-revoked-backup-pin`,
    /// `coalesces-without-pins`, `sends-early-data-on-resumption`), or `nil`.
    /// Also the clients that check stapled OCSP responses, `correct-revocation-soft` and `correct-revocation-hard`,
    /// which `all` leaves out: they differ from `correct` only where a leaf names an OCSP responder; and
    /// `correct-ct-required`, which differs from `correct` only where the target turns CT on.
    public static func named(_ name: String) -> (any PinningClient)? {
        if let m = ReferenceClient.Mistake(clientName: name) { return ReferenceClient(mistake: m) }
        return [ReferenceClient.correctRevocationSoft, .correctRevocationHard, .correctCTRequired].first { $0.name == name }
    }
}

/// The certificate chain a TLS server presents, as captured by an OpenSSL client (what `openssl s_client
/// -showcerts` prints), for tools that replay a real server's chain (`pinlab intercept --genuine-chain upstream`).
public enum PresentedChain {
    /// Connects to `ip:port` (numeric) with SNI `serverName`, and returns the DER certificates the server sent,
    /// in order, whether or not they would be trusted. Blocks the calling thread for at most `timeout`: call it
    /// from a dedicated thread. Throws a message naming the address when there is no chain.
    public static func fetch(ip: String, port: Int, serverName: String, timeout: Duration = .seconds(5)) throws(PresentedChainError) -> [[UInt8]] {
        let target = ClientTarget(
            host: serverName, ip: ip, port: port, trustRootsDER: [], pins: .empty, scenario: "presented-chain",
            profile: .none, timeout: timeout)
        switch ClientConnection.presentedChain(target: target) {
        case .success(let chain): return chain
        case .failure(let f): throw PresentedChainError(description: "\(ip):\(port) (SNI \(serverName)): \(f.detail)")
        }
    }
}

public struct PresentedChainError: Error, Sendable, CustomStringConvertible {
    public var description: String
}
