internal import Foundation
// The built-in reference clients: one `correct` OpenSSL client and teaching clients that each make exactly one
// classic pinning mistake. They are judged like any other client: the server sees whether the request arrived.
import PinningLabCore
public import PinningLabModel

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
        return revocation == .none || mistake.traits.revocationSkippedWhenPinned
            ? mistake.rawValue : "\(mistake.rawValue)-revocation-\(revocation)"
    }
    /// Every reference client declares its revocation and CT checking.
    public var checks: ClientChecks { ClientChecks(revocation: revocation, ct: ct) }

    public init(mistake: Mistake = .none, revocation: ClientChecks.Revocation = .none, ct: ClientChecks.CT = .none) {
        self.mistake = mistake
        self.ct = ct
        // Its mistake is in how it checks revocation, so it checks it.
        self.revocation = mistake.traits.revocationSkippedWhenPinned ? .hard : revocation
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

    /// The reference client called `name` (one of ``names``), or `nil`. Also the clients that check stapled OCSP
    /// responses, `correct-revocation-soft` and `correct-revocation-hard`, which `all` leaves out: they differ from
    /// `correct` only where a leaf names an OCSP responder; and `correct-ct-required`, which differs from `correct`
    /// only where the target turns CT on.
    public static func named(_ name: String) -> (any PinningClient)? {
        if let m = ReferenceClient.Mistake(clientName: name) { return ReferenceClient(mistake: m) }
        return [ReferenceClient.correctRevocationSoft, .correctRevocationHard, .correctCTRequired].first {
            $0.name == name
        }
    }
}

/// The certificate chain a TLS server presents, as captured by an OpenSSL client (what `openssl s_client
/// -showcerts` prints), for tools that replay a real server's chain (`pinlab intercept --genuine-chain upstream`).
public enum PresentedChain {
    /// Connects to `ip:port` (numeric) with SNI `serverName`, and returns the DER certificates the server sent,
    /// in order, whether or not they would be trusted. Blocks the calling thread for at most `timeout`: call it
    /// from a dedicated thread. Throws a message naming the address when there is no chain.
    public static func fetch(ip: String, port: Int, serverName: String, timeout: Duration = .seconds(5))
        throws(PresentedChainError) -> [[UInt8]]
    {
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
