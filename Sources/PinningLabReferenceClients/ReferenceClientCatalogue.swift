// The built-in reference clients as data: one row per client (its name, what it does wrong, where that shows in
// the catalogue, and the traits the connection code reads). Every list of built-in clients — `ReferenceClients`,
// `BuiltInClients` (the CLI's `--client`), `BuiltInClient.all` in PinningLabTesting, the tests' parameters —
// derives from `ReferenceClient.Mistake.all`. A new client made of existing traits is one row here; a new kind of
// mistake is one trait more in `ClientTraits`, read where it bites (ClientVerify, ClientConnection, ClientHTTP2).

/// How a reference client decides, trait by trait. Every default is what `correct` does; a teaching client
/// changes one of them.
struct ClientTraits: Sendable {
    /// Which chain pins are matched against.
    enum PinnedChain: Sendable {
        /// The chain validation built, up to the trusted root.
        case verified
        /// The certificates the server sent (CVE-2016-2402).
        case presented
        /// A path the client builds by following issuer *names* through the sent certificates, then the roots.
        case issuerNamePath
    }

    /// Which hosts the pins are applied to.
    enum Scope: Sendable {
        /// The hosts they were declared for (`target.pinsApply`).
        case declared
        /// Every host the client connects to.
        case everyHost
        /// The declared scope, compared with the host byte for byte (no case folding, no trailing-dot removal).
        case byteForByte
    }

    var pinnedChain: PinnedChain = .verified
    /// A pin match among the sent certificates replaces chain and host validation (while pins are configured).
    var pinReplacesValidation = false
    var checksHostname = true
    /// An SPKI pin is compared with the SHA-256 of the bare key bytes instead of the SPKI DER.
    var hashesBareKey = false
    var checksPins = true
    var scope: Scope = .declared
    /// Pins are checked again on a resumed connection.
    var checksPinsOnResumption = true
    /// A session made for one host name is resumed for another as that host's decision left it.
    var sharesSessionsAcrossHosts = false
    /// Declares `revocation=hard` but skips the check when a pin matched.
    var revocationSkippedWhenPinned = false
    /// Over HTTP/2, a connection kept for another host carries this host's request without a pin check.
    var coalescesWithoutPins = false
    /// A TLS 1.3 early-data request leaves before the session's chain is checked against the pins now in force.
    var sendsEarlyDataBeforeCheck = false
}

extension ReferenceClient {
    /// One built-in reference client: `correct` (``none``), or a teaching client that makes exactly one classic
    /// mistake. ``all`` is the catalogue; the static members are shorthands for rows of it.
    public struct Mistake: Hashable, Sendable, CustomStringConvertible {
        /// The client name this mistake gives, e.g. `pin-presented-chain`.
        public let rawValue: String
        /// One sentence for reports and labs: what this client does (wrong).
        public let explanation: String
        /// Where the mistake shows in the bundled catalogue: the cells this client fails (the tests' predictions
        /// are the cell-by-cell form of this sentence).
        public let prediction: String
        let traits: ClientTraits

        private init(_ rawValue: String, _ traits: ClientTraits, explanation: String, prediction: String) {
            self.rawValue = rawValue
            self.traits = traits
            self.explanation = explanation
            self.prediction = prediction
        }

        public static func == (a: Mistake, b: Mistake) -> Bool { a.rawValue == b.rawValue }
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
        public var description: String { rawValue }

        /// Every built-in client, `correct` first: the one declaration each client has.
        public static let all: [Mistake] = [
            Mistake(
                "correct", ClientTraits(),
                explanation: "validates chain and hostname, then matches pins against the validated chain",
                prediction: "passes every cell"),
            Mistake(
                "pin-presented-chain", ClientTraits(pinnedChain: .presented),
                explanation:
                    "matches pins against the chain the server sent instead of the validated chain (CVE-2016-2402)",
                prediction:
                    "fails root-spki wherever lab-root is not sent, every pinned profile of chain-stuffing, and intermediate-spki of name-collision-root"
            ),
            Mistake(
                "pin-replaces-validation", ClientTraits(pinnedChain: .presented, pinReplacesValidation: true),
                explanation: "accepts any presented certificate matching a pin without validating chain or hostname",
                prediction:
                    "fails where pin-presented-chain does, and accepts invalid chains (expired, not yet valid, wrong host, incomplete, weak, SHA-1, non-CA signer, pathlen) wherever a sent certificate matches a pin"
            ),
            Mistake(
                "no-hostname-check", ClientTraits(checksHostname: false),
                explanation: "validates the chain and pins but never checks that the certificate is for the host",
                prediction: "fails wrong-host wherever its pin matches, and pinned-cert-other-host under every profile"),
            Mistake(
                "raw-key-hash", ClientTraits(hashesBareKey: true),
                explanation: "hashes the bare key bytes (SecKeyCopyExternalRepresentation) instead of the SPKI DER",
                prediction:
                    "fails every SPKI cell a correct client accepts (no SPKI pin ever matches); certificate pins are unaffected"
            ),
            Mistake(
                "no-pinning", ClientTraits(checksPins: false),
                explanation: "validates chain and hostname but ignores pins",
                prediction:
                    "fails every cell only a pin refuses: interceptors, re-keys, chain stuffing, name collisions, pin scopes, resumed interceptor sessions, HTTP/2 coalescing"
            ),
            Mistake(
                "pins-by-issuer-name", ClientTraits(pinnedChain: .issuerNamePath),
                explanation:
                    "matches pins against a path built by following issuer names through the sent certificates, not the validated chain",
                prediction: "fails intermediate-spki and root-spki of name-collision-root"),
            Mistake(
                "pins-every-host", ClientTraits(scope: .everyHost),
                explanation: "applies its pins to every host, also to hosts outside the scope they were declared for",
                prediction:
                    "refuses hosts outside the pins' scope: pin-scope-subdomain-excluded, pin-scope-unpinned-host, pins-for-other-host, and the first step of resumption-cross-host and h2-coalescing-pinned-host"
            ),
            Mistake(
                "skips-pins-on-resumption", ClientTraits(checksPinsOnResumption: false),
                explanation:
                    "checks pins only on full handshakes: a resumed session is trusted without its pins (Go's VerifyPeerCertificate)",
                prediction:
                    "fails every pinned profile of resumption-after-unpinned-handshake, resumption-cross-host and early-data-to-interceptor"
            ),
            Mistake(
                "case-sensitive-scope", ClientTraits(scope: .byteForByte),
                explanation:
                    "compares the host with its pins' scope byte for byte: an upper-case or trailing-dot spelling of a pinned host escapes its pins",
                prediction: "fails every pinned profile of pin-scope-trailing-dot and pin-scope-upper-case"),
            Mistake(
                "shares-sessions-across-hosts", ClientTraits(sharesSessionsAcrossHosts: true),
                explanation:
                    "resumes a session made for another host name as that host's decision left it, without checking the new host's name or pins",
                prediction: "fails every pinned profile of resumption-cross-host"),
            Mistake(
                "trusts-revoked-backup-pin", ClientTraits(revocationSkippedWhenPinned: true),
                explanation:
                    "checks revocation (hard-fail) only when no pin matched: a revoked certificate whose key is still pinned is accepted",
                prediction:
                    "fails every pinned profile of the revocation scenarios a hard-fail client refuses, and the SPKI profiles of revoked-key-replay"
            ),
            Mistake(
                "coalesces-without-pins", ClientTraits(coalescesWithoutPins: true),
                explanation:
                    "over HTTP/2, reuses a connection made for another host whose certificate covers this one without checking this host's pins",
                prediction: "fails every pinned profile of h2-coalescing-pinned-host"),
            Mistake(
                "sends-early-data-on-resumption", ClientTraits(sendsEarlyDataBeforeCheck: true),
                explanation:
                    "sends its request as 0-RTT early data on a resumed session before checking the session's chain against its pins: the request leaves before the refusal",
                prediction: "fails every pinned profile of early-data-to-interceptor"),
        ]

        /// The mistake whose client name is `name`, if there is one.
        public init?(clientName name: String) {
            guard let found = Mistake.all.first(where: { $0.rawValue == name }) else { return nil }
            self = found
        }

        private static func row(_ name: String) -> Mistake {
            guard let found = Mistake(clientName: name) else { preconditionFailure("no reference client \(name)") }
            return found
        }

        // Shorthands for rows of `all` (a new client needs none).

        /// No mistake: validate chain and hostname, then match pins against the *validated* chain.
        public static let none = row("correct")
        /// CVE-2016-2402 style: pins are matched against the chain the server *sent* rather than the validated
        /// chain, so a stuffed chain (a proxy leaf with the genuine pinned certificates appended) passes.
        public static let pinPresentedChain = row("pin-presented-chain")
        /// A pin match *replaces* validation: no chain, expiry or hostname check at all; any presented
        /// certificate matching a pin is enough. With no pins configured (profile `none`) there is nothing to
        /// replace validation with, so the client falls back to normal chain and hostname validation.
        public static let pinReplacesValidation = row("pin-replaces-validation")
        /// Validates the chain and the pins like `correct` but never checks the hostname.
        public static let noHostnameCheck = row("no-hostname-check")
        /// Like `correct`, but an SPKI pin is compared with the SHA-256 of the bare key bytes (what iOS
        /// `SecKeyCopyExternalRepresentation` returns: the contents of the SPKI's BIT STRING), so SPKI pins never
        /// match. Certificate pins are unaffected.
        public static let rawKeyHash = row("raw-key-hash")
        /// Validates chain and hostname, ignores pins.
        public static let noPinning = row("no-pinning")
        /// Validates chain and hostname like `correct`, but matches pins against a path it builds itself by
        /// following issuer *names* from the leaf through the certificates the server sent (then the trusted roots),
        /// instead of the validated chain: a rogue issuer that copies a pinned CA's name leads it to the genuine,
        /// pinned CA sent alongside.
        public static let pinsByIssuerName = row("pins-by-issuer-name")
        /// Like `correct`, but applies its pins to every host it connects to, ignoring the scope they were
        /// declared for (`target.pinScope`): a host outside it (a CDN, a forced-update check) is refused.
        public static let pinsEveryHost = row("pins-every-host")
        /// Like `correct` on every full handshake, but a resumed session is trusted without checking its pins
        /// again (the host name still is): the pin check lives in a callback that runs only when certificates
        /// arrive, like Go's `tls.Config.VerifyPeerCertificate` (golang/go #31641, #77217).
        public static let skipsPinsOnResumption = row("skips-pins-on-resumption")
        /// Checks revocation hard-fail like `correct-revocation-hard` (staples, then the fetched status of every
        /// certificate below the trust anchor), but skips the whole check when a pin matched: a pinned key is taken
        /// as proof enough, so a revoked certificate for a key still in the pin set (the old K1 after an emergency
        /// re-key, kept as a backup pin) is accepted. Declares `revocation=hard`.
        public static let trustsRevokedBackupPin = row("trusts-revoked-backup-pin")
        /// Like `correct`, but decides whether its pins apply by comparing the host name with the scope they were
        /// declared for byte for byte: `API.Pinning.Test` or `api.pinning.test.` (the same host) escape the pins
        /// declared for `api.pinning.test` (square/okhttp #2609 and the trailing-dot bypass).
        public static let caseSensitiveScope = row("case-sensitive-scope")
        /// Like `correct`, but keeps its sessions per address and, on resuming one made for another host name,
        /// trusts it as that host's decision left it: neither the new host's name nor its pins are checked again
        /// (Bun's reused sessions across server names, oven-sh/bun #33734). A session resumed for the host it was
        /// made for is checked again like `correct` does.
        public static let sharesSessionsAcrossHosts = row("shares-sessions-across-hosts")
        /// Like `correct`, but over HTTP/2 it sends a request for another host on a connection it keeps open
        /// whenever that connection's certificate covers the host (coalescing), without checking the host's pins:
        /// the pins were checked when the connection was made, for the host it was made for (OkHttp coalesces only
        /// when `CertificatePinner` accepts, square/okhttp #3207).
        public static let coalescesWithoutPins = row("coalesces-without-pins")
        /// Like `correct`, but where the app sends its request as TLS 1.3 early data (``ClientTarget/earlyData``), it
        /// does so on any session that allows it, before checking that session's chain against the pins now in
        /// force: the pins are checked once the handshake completes, when the request has already reached the
        /// server. A session made before the pins were in force delivers the request to an interceptor as 0-RTT.
        public static let sendsEarlyDataOnResumption = row("sends-early-data-on-resumption")
    }
}
