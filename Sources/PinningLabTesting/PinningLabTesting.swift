public import Foundation
// PinningLabTesting: helpers for other packages' test suites. Imports neither XCTest nor Testing.
public import PinningLab
import PinningLabBase
public import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// A scenario of the bundled catalogue, by id. An open set: `ScenarioID("my-id")` names scenarios of your own
/// catalogue; the static members are the bundled ones (`ScenarioID.all` in teaching order).
public struct ScenarioID: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ id: String) { self.rawValue = id }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// `baseline`: The certificate the app was built for, with its whole chain.
    public static let baseline = ScenarioID("baseline")
    /// `root-not-sent`: A root pin must match a root the server never sends.
    public static let rootNotSent = ScenarioID("root-not-sent")
    /// `renewal-same-key`: The certificate was renewed and kept its key.
    public static let renewalSameKey = ScenarioID("renewal-same-key")
    /// `rekey`: A planned re-key to the published backup key.
    public static let rekey = ScenarioID("rekey")
    /// `emergency-rekey`: An emergency re-key to a key nobody pinned.
    public static let emergencyRekey = ScenarioID("emergency-rekey")
    /// `intermediate-renewed-same-key`: The intermediate was re-issued with the same key.
    public static let intermediateRenewedSameKey = ScenarioID("intermediate-renewed-same-key")
    /// `sibling-intermediate`: The same key, issued by a different intermediate of the same CA.
    public static let siblingIntermediate = ScenarioID("sibling-intermediate")
    /// `expired-leaf`: An expired leaf with the pinned key.
    public static let expiredLeaf = ScenarioID("expired-leaf")
    /// `not-yet-valid-leaf`: A leaf that is not valid yet.
    public static let notYetValidLeaf = ScenarioID("not-yet-valid-leaf")
    /// `expired-intermediate`: A valid leaf under an expired intermediate.
    public static let expiredIntermediate = ScenarioID("expired-intermediate")
    /// `wrong-host`: A certificate with the pinned key for another host name.
    public static let wrongHost = ScenarioID("wrong-host")
    /// `pinned-cert-other-host`: The exact pinned certificate, presented for a host name it does not cover.
    public static let pinnedCertOtherHost = ScenarioID("pinned-cert-other-host")
    /// `pin-scope-exact-host`: Pins declared for api.pinning.test: the proxy intercepts api.pinning.test.
    public static let pinScopeExactHost = ScenarioID("pin-scope-exact-host")
    /// `pin-scope-subdomain-included`: Pins declared for api.pinning.test and its subdomains: the proxy intercepts
    /// v2.api.pinning.test.
    public static let pinScopeSubdomainIncluded = ScenarioID("pin-scope-subdomain-included")
    /// `pin-scope-subdomain-excluded`: Pins declared for api.pinning.test only: v2.api.pinning.test is not pinned.
    public static let pinScopeSubdomainExcluded = ScenarioID("pin-scope-subdomain-excluded")
    /// `pin-scope-unpinned-host`: A host outside the pin scope: the genuine cdn.pinning.test.
    public static let pinScopeUnpinnedHost = ScenarioID("pin-scope-unpinned-host")
    /// `pin-scope-trailing-dot`: Pins declared for api.pinning.test: the client asks for api.pinning.test.
    public static let pinScopeTrailingDot = ScenarioID("pin-scope-trailing-dot")
    /// `pin-scope-upper-case`: Pins declared for api.pinning.test: the client asks for API.Pinning.Test.
    public static let pinScopeUpperCase = ScenarioID("pin-scope-upper-case")
    /// `pins-for-other-host`: Pins declared for cdn.pinning.test only: the genuine api.pinning.test is not pinned
    /// by them.
    public static let pinsForOtherHost = ScenarioID("pins-for-other-host")
    /// `self-signed-pinned-key`: A self-signed certificate carrying the pinned key.
    public static let selfSignedPinnedKey = ScenarioID("self-signed-pinned-key")
    /// `untrusted-rogue`: A certificate from a CA the device does not trust.
    public static let untrustedRogue = ScenarioID("untrusted-rogue")
    /// `intercepting-proxy`: An interception proxy whose root the user installed.
    public static let interceptingProxy = ScenarioID("intercepting-proxy")
    /// `chain-stuffing`: An interception proxy that appends the genuine pinned certificates.
    public static let chainStuffing = ScenarioID("chain-stuffing")
    /// `name-collision-intermediate`: A rogue intermediate with the pinned intermediate's name.
    public static let nameCollisionIntermediate = ScenarioID("name-collision-intermediate")
    /// `name-collision-root`: A rogue root with the pinned intermediate's name, sent with the genuine intermediate.
    public static let nameCollisionRoot = ScenarioID("name-collision-root")
    /// `incomplete-chain`: The server forgot to send its intermediate.
    public static let incompleteChain = ScenarioID("incomplete-chain")
    /// `reversed-chain`: The issuers arrive in reverse order.
    public static let reversedChain = ScenarioID("reversed-chain")
    /// `non-ca-signer`: A leaf certificate used as a CA.
    public static let nonCASigner = ScenarioID("non-ca-signer")
    /// `pathlen-violation`: A sub-CA below an intermediate limited to path length 0.
    public static let pathlenViolation = ScenarioID("pathlen-violation")
    /// `weak-rsa-1024`: A pinned 1024-bit RSA key.
    public static let weakRSA1024 = ScenarioID("weak-rsa-1024")
    /// `sha1-signature`: A pinned certificate signed with SHA-1.
    public static let sha1Signature = ScenarioID("sha1-signature")
    /// `tls-v1-0`: A server that offers only TLS 1.0.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let tlsV1_0 = ScenarioID("tls-v1-0")
    /// `tls-v1-1`: A server that offers only TLS 1.1.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let tlsV1_1 = ScenarioID("tls-v1-1")
    /// `tls-v1-2`: A server that speaks only TLS 1.2.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let tlsV1_2 = ScenarioID("tls-v1-2")
    /// `tls-v1-2-no-forward-secrecy`: TLS 1.2 with static RSA key exchange only (no forward secrecy).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let tlsV1_2NoForwardSecrecy = ScenarioID("tls-v1-2-no-forward-secrecy")
    /// `ats-floor`: Exactly at the App Transport Security floor.
    public static let atsFloor = ScenarioID("ats-floor")
    /// `ecdsa-p384`: A leaf with an ECDSA P-384 key.
    public static let ecdsaP384 = ScenarioID("ecdsa-p384")
    /// `rsa-2048`: A leaf with an RSA-2048 key.
    public static let rsa2048 = ScenarioID("rsa-2048")
    /// `rsa-3072`: A leaf with an RSA-3072 key.
    public static let rsa3072 = ScenarioID("rsa-3072")
    /// `rsa-4096`: A leaf with an RSA-4096 key.
    public static let rsa4096 = ScenarioID("rsa-4096")
    /// `ed25519`: A leaf with an Ed25519 key.
    public static let ed25519 = ScenarioID("ed25519")
    /// `mtls-required-valid`: Mutual TLS: the client presents its valid certificate.
    public static let mtlsRequiredValid = ScenarioID("mtls-required-valid")
    /// `mtls-required-missing`: Mutual TLS: the client presents no certificate.
    public static let mtlsRequiredMissing = ScenarioID("mtls-required-missing")
    /// `mtls-required-untrusted`: Mutual TLS: a client certificate from an untrusted CA.
    public static let mtlsRequiredUntrusted = ScenarioID("mtls-required-untrusted")
    /// `mtls-required-expired`: Mutual TLS: an expired client certificate.
    public static let mtlsRequiredExpired = ScenarioID("mtls-required-expired")
    /// `mtls-required-wrong-eku`: Mutual TLS: a client certificate meant for servers.
    public static let mtlsRequiredWrongEKU = ScenarioID("mtls-required-wrong-eku")
    /// `mtls-optional-missing`: Mutual TLS optional: the client presents no certificate.
    public static let mtlsOptionalMissing = ScenarioID("mtls-optional-missing")

    /// The rogue-CA case of the README (`untrusted-rogue`).
    public static let rogueCA = untrustedRogue
    /// The user-installed proxy case (`intercepting-proxy`).
    public static let proxy = interceptingProxy

    /// Every bundled scenario of one connection, in teaching order (the catalogue's, read from the scenario files'
    /// `order:`): what a test that hands its client one target at a time is judged on. Empty only if the bundled
    /// catalogue cannot be loaded, which `Catalogue.bundled()` reports with its reasons.
    public static let all: [ScenarioID] = bundled(steps: false)

    /// The bundled scenarios of several connections (`resumption-*`, `rotation-between-connections`): judge them with
    /// `server.verdict(profile, running: client)` and a `PinningClient` that keeps sessions across connections
    /// (``PinningClient/keepsSessionsAcrossSteps``); a closure that connects once cannot show them.
    public static let withSteps: [ScenarioID] = bundled(steps: true)

    private static func bundled(steps: Bool) -> [ScenarioID] {
        ((try? Catalogue.bundled())?.scenarios ?? []).filter { $0.isMultiStep == steps }.map { ScenarioID($0.id) }
    }
}

/// The TLS engine a fixture server runs on: `.openssl` (libssl) or `.gnutls`. Both serve exactly the chain a
/// scenario lists; run your suite on both to be sure a verdict does not depend on the server's TLS library.
///
/// ```swift
/// @Test(arguments: ScenarioID.all, ServerEngine.both)
/// func conforms(_ id: ScenarioID, _ engine: ServerEngine) async throws { … }
/// ```
public struct ServerEngine: Sendable, Hashable, CustomStringConvertible {
    /// The engine itself; any `TLSEngine` of your own works too (``init(_:)``).
    public let engine: any TLSEngine
    public init(_ engine: any TLSEngine) { self.engine = engine }

    public static let openssl = ServerEngine(Engines.openssl)
    public static let gnutls = ServerEngine(Engines.gnutls)
    /// OpenSSL, then GnuTLS.
    public static let both: [ServerEngine] = [.openssl, .gnutls]

    /// `openssl` or `gnutls`.
    public var name: String { engine.name }
    public var description: String { engine.name }
    public static func == (a: ServerEngine, b: ServerEngine) -> Bool { a.name == b.name }
    public func hash(into h: inout Hasher) { h.combine(name) }
}

extension Array where Element == ServerEngine {
    /// OpenSSL, then GnuTLS: `Lab.check(client, engines: .both)`.
    public static var both: [ServerEngine] { ServerEngine.both }
}

/// The built-in reference clients as typed values: `Lab.check(.correct)`, `Lab.check(.pinPresentedChain)`.
/// `correct` validates the chain and host name, then matches pins against the validated chain; every other one
/// makes one classic mistake (``explanation``).
public struct BuiltInClient: PinningClient {
    private let client: any PinningClient
    private init(_ name: String) {
        guard let c = BuiltInClients.named(name) else { preconditionFailure("no built-in client \(name)") }
        client = c
    }
    public var name: String { client.name }
    public var supportedProfiles: Set<PinProfile>? { client.supportedProfiles }
    public func run(_ target: ClientTarget) async -> ClientOutcome { await client.run(target) }
    public var keepsSessionsAcrossSteps: Bool { client.keepsSessionsAcrossSteps }
    public var platform: PlatformPolicy? { client.platform }
    public var checks: ClientChecks { client.checks }
    /// One sentence on what the client does (wrong).
    public var explanation: String { BuiltInClients.explanation(client.name) }
    /// Where its mistake shows in the bundled catalogue, in one sentence.
    public var prediction: String { BuiltInClients.prediction(client.name) }

    /// The built-in client called `name` (one of `all`), or `nil`. The static members below are shorthands.
    public static func named(_ name: String) -> BuiltInClient? {
        BuiltInClients.names.contains(name) ? BuiltInClient(name) : nil
    }

    public static let correct = BuiltInClient("correct")
    public static let pinPresentedChain = BuiltInClient("pin-presented-chain")
    public static let pinReplacesValidation = BuiltInClient("pin-replaces-validation")
    public static let noHostnameCheck = BuiltInClient("no-hostname-check")
    public static let rawKeyHash = BuiltInClient("raw-key-hash")
    public static let noPinning = BuiltInClient("no-pinning")
    public static let pinsByIssuerName = BuiltInClient("pins-by-issuer-name")
    public static let pinsEveryHost = BuiltInClient("pins-every-host")
    public static let skipsPinsOnResumption = BuiltInClient("skips-pins-on-resumption")
    public static let caseSensitiveScope = BuiltInClient("case-sensitive-scope")
    public static let sharesSessionsAcrossHosts = BuiltInClient("shares-sessions-across-hosts")
    public static let trustsRevokedBackupPin = BuiltInClient("trusts-revoked-backup-pin")
    public static let coalescesWithoutPins = BuiltInClient("coalesces-without-pins")
    public static let sendsEarlyDataOnResumption = BuiltInClient("sends-early-data-on-resumption")
    /// `correct` first, then the teaching clients: every row of the reference-client catalogue, whether or not it
    /// has a shorthand here.
    public static var all: [BuiltInClient] { BuiltInClients.names.map(BuiltInClient.init) }
}

extension PinningClient where Self == BuiltInClient {
    public static var correct: BuiltInClient { .correct }
    public static var pinPresentedChain: BuiltInClient { BuiltInClient.pinPresentedChain }
    public static var pinReplacesValidation: BuiltInClient { BuiltInClient.pinReplacesValidation }
    public static var noHostnameCheck: BuiltInClient { BuiltInClient.noHostnameCheck }
    public static var rawKeyHash: BuiltInClient { BuiltInClient.rawKeyHash }
    public static var noPinning: BuiltInClient { BuiltInClient.noPinning }
    public static var pinsByIssuerName: BuiltInClient { BuiltInClient.pinsByIssuerName }
    public static var pinsEveryHost: BuiltInClient { BuiltInClient.pinsEveryHost }
    public static var skipsPinsOnResumption: BuiltInClient { BuiltInClient.skipsPinsOnResumption }
    public static var caseSensitiveScope: BuiltInClient { BuiltInClient.caseSensitiveScope }
    public static var sharesSessionsAcrossHosts: BuiltInClient { BuiltInClient.sharesSessionsAcrossHosts }
    public static var trustsRevokedBackupPin: BuiltInClient { BuiltInClient.trustsRevokedBackupPin }
    public static var coalescesWithoutPins: BuiltInClient { BuiltInClient.coalescesWithoutPins }
    public static var sendsEarlyDataOnResumption: BuiltInClient { BuiltInClient.sendsEarlyDataOnResumption }
}

/// Shared state of the helpers: one work folder per process (trust files, client certificates and keys), removed
/// when the process exits.
enum TestingLab {
    static let work: URL = {
        guard let dir = try? ScratchFolders.make("pinninglab-testing") else {
            return FileManager.default.temporaryDirectory
        }
        atexit { ScratchFolders.removeAll() }
        return dir
    }()
}

extension Lab {
    /// Starts the server of a scenario on 127.0.0.1 (an ephemeral port), runs `body`, and stops the server even
    /// if `body` throws. A scenario the engine cannot serve exactly is not an error: the server's every verdict is
    /// `unsupported`, with the reason.
    ///
    /// ```swift
    /// try await Lab.withServer(.rogueCA) { server in
    ///     let verdict = await server.verdict(.leafSPKI) { target in
    ///         let client = try MyPinnedClient(roots: target.trustRootsDER, pins: target.effectivePins)
    ///         try await client.get(host: target.host, address: target.ip, port: target.port)
    ///     }
    ///     #expect(verdict.status == .pass, "\(verdict.reason)")
    /// }
    /// ```
    /// - Parameters:
    ///   - engine: `.openssl` (default) or `.gnutls`.
    ///   - catalogue: your own scenarios (``Catalogue/load(directory:identities:displayPrefix:)``); the bundled
    ///     catalogue by default.
    ///   - pkiDirectory: the lab PKI folder; the per-user cache (or `$PINLAB_DIR`) by default.
    public static func withServer<T>(
        _ id: ScenarioID, engine: ServerEngine = .openssl, catalogue: Catalogue? = nil, pkiDirectory: URL? = nil,
        _ body: (ScenarioServer) async throws -> T
    ) async throws -> T {
        let runner = try await runner(catalogue: catalogue, pkiDirectory: pkiDirectory)
        let server = try await runner.startServer(
            id.rawValue, engine: engine.engine, workDirectory: TestingLab.work, options: .init(), unsupported: .verdict)
        return try await stopping(server, stop: { await $0.stop() }, body)
    }

    /// Runs an in-process client through the whole catalogue (or `scenarios`) on both engines (or `engines`) and
    /// returns the report; `report.deviations` lists what it got wrong.
    ///
    /// ```swift
    /// let report = try await Lab.check(.correct, engines: .both)
    /// #expect(report.deviations.isEmpty)
    /// ```
    public static func check(
        _ client: some PinningClient, scenarios: [ScenarioID] = [], engines: [ServerEngine] = .both,
        profiles: Set<PinProfile>? = nil, catalogue: Catalogue? = nil, pkiDirectory: URL? = nil
    ) async throws -> CheckReport {
        let runner = try await runner(catalogue: catalogue, pkiDirectory: pkiDirectory)
        return try await runner.run(
            .inProcess(client),
            options: CheckOptions(
                engines: engines.map(\.engine), profiles: profiles, scenarios: scenarios.map(\.rawValue)))
    }

    private static func runner(catalogue: Catalogue?, pkiDirectory: URL?) async throws -> CheckRunner {
        CheckRunner(
            pki: try await Lab.openPKI(directory: pkiDirectory), catalogue: try catalogue ?? Catalogue.bundled())
    }
}
