import Foundation
public import PinningLabPKI
public import PinningLabTLSTypes

/// What a correct client must do in one cell: proceed and send its request, or refuse before sending anything.
public enum Expectation: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case accept
    case refuse
    public var description: String { rawValue }
}

/// What the client's trust store holds: one or more roots of the PKI, written `lab-root` or
/// `lab-root+proxy-root` (DESIGN.md, "Trust profile").
public struct TrustProfile: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The normal device: only the lab root.
    public static let labRoot = TrustProfile(rawValue: "lab-root")
    /// A device on which the user installed an interception proxy's root.
    public static let labRootPlusProxyRoot = TrustProfile(rawValue: "lab-root+proxy-root")
    /// The names of the roots in the trust store.
    public var roots: [String] { rawValue.split(separator: "+", omittingEmptySubsequences: false).map(String.init) }
    public var description: String { rawValue }
}

/// One situation a pinned client meets in production: what the server presents, what the client trusts and pins,
/// and what a correct client does under each pin profile. Loaded from `scenarios/*.yaml`.
public struct Scenario: Sendable, Hashable, Identifiable {
    /// The server side of a scenario.
    public struct Server: Sendable, Hashable {
        /// Identity names of the certificates on the wire, in order; the first is the server's certificate and its
        /// key is the server's key.
        public var chain: [String]
        /// The TLS versions the server offers, oldest first.
        public var tlsVersions: [TLSVersion]
        /// IANA cipher suite names (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`); empty means the engine's default.
        public var cipherSuites: [String]
        public var clientAuth: ClientAuthentication
        /// Identity names of the CAs the server accepts client certificates from.
        public var clientAuthTrust: [String]
        /// Whether clients may resume sessions with this server (`off` unless a scenario says so).
        public var resumption: SessionResumption.Mode
        /// The parties of a scenario that name the same ticket key accept each other's tickets (one interceptor
        /// behind two servers); the key's bytes are random, made afresh for each cell.
        public var ticketKey: String?
        /// The OCSP response the server staples for a client that asks (`ocsp-staple:`), built for the first
        /// certificate of the chain; nil: none.
        public var ocspStaple: OCSPVariant? = nil
        /// Whether a client resuming one of this server's TLS 1.3 tickets may send early data (0-RTT), which the
        /// server reads and counts (`early-data: accept`); off unless a scenario says so.
        public var earlyData = false
        /// The ALPN protocols the server selects from, in its order of preference (`tls: {alpn: [h2, http/1.1]}`):
        /// with `h2` it speaks HTTP/2 to a client that offers it, and records each stream's `:authority`.
        public var alpn: [String] = ["http/1.1"]
        /// Whether the server offers HTTP/2.
        public var offersHTTP2: Bool { alpn.contains("h2") }
        /// The lab OCSP responder and CRL server the cell starts beside the server (`responder:`), which the client is
        /// given the address of (``ClientTarget/revocationResponder``, `{ocsp.url}`, `{crl.url}`); nil: none.
        public var responder: RevocationResponderMode? = nil
        /// More chains the same host holds (`alternatives:`), each leaf first: a host with an ECDSA and an RSA (or an
        /// ML-DSA) certificate. The server serves `chain` or one of these, chosen by the client's
        /// `signature_algorithms`: the first, in this order (`chain` first), whose key can sign with a scheme the client
        /// offered. Empty: the host holds one chain.
        public var alternatives: [[String]] = []
        /// The key-exchange groups the server accepts, by IANA name, in its order of preference (`tls: {groups:
        /// [x25519]}`); empty: the engine's default. A group the engine's library lacks makes the cells `unsupported`.
        public var groups: [String] = []
        /// What the server does with an Encrypted Client Hello it holds the key for (`ech: accept`); nil: it holds
        /// none (every offer is rejected, as the lab's rejection scenarios are). No engine of this build can serve it:
        /// the cells are `unsupported` with the reason.
        public var ech: EncryptedClientHelloService? = nil
        /// Every chain the host holds: `chain`, then the alternatives.
        public var chains: [[String]] { [chain] + alternatives }

        public init(
            chain: [String], tlsVersions: [TLSVersion] = [.tls12, .tls13], cipherSuites: [String] = [],
            clientAuth: ClientAuthentication = .none, clientAuthTrust: [String] = [],
            resumption: SessionResumption.Mode = .off, ticketKey: String? = nil
        ) {
            self.resumption = resumption
            self.ticketKey = ticketKey
            self.chain = chain
            self.tlsVersions = tlsVersions
            self.cipherSuites = cipherSuites
            self.clientAuth = clientAuth
            self.clientAuthTrust = clientAuthTrust
        }
    }

    /// The client side of a scenario.
    public struct Client: Sendable, Hashable {
        public var trust: TrustProfile
        /// The identity the client was built for; pin profiles are relative to it.
        public var pinned: String
        /// The identity whose key is the published backup pin (`leaf-spki+backup`).
        public var backup: String
        /// The client identity the client presents when the server asks for one; `nil` presents nothing.
        public var present: String?
        /// The host name the client asks for: it is in the URL, the SNI and the `Host` header, and the certificate
        /// is verified against it. The client still connects to the fixture server on 127.0.0.1 (curl
        /// `--resolve`, a custom DNS hook; see the CommandTemplates article), so no `/etc/hosts` entry is needed.
        public var host: String
        /// The hosts the client's pins are declared for; `nil` declares them for `host` itself.
        public var pinScope: PinScope?

        public init(
            trust: TrustProfile = .labRoot, pinned: String = Scenario.defaultPinnedIdentity,
            backup: String = Scenario.defaultBackupIdentity, present: String? = nil,
            host: String = Scenario.defaultHost, pinScope: PinScope? = nil
        ) {
            self.trust = trust
            self.pinned = pinned
            self.backup = backup
            self.present = present
            self.host = host
            self.pinScope = pinScope
        }

        /// Whether the pins are declared for `host`.
        public var pinsApply: Bool { pinScope?.covers(host) ?? true }
    }

    /// One connection of a scenario made of several (`steps:`), in order: the client keeps its TLS session cache
    /// across them.
    public struct Step: Sendable, Hashable {
        /// Whether the client's pins are in force for a step.
        public struct Pins: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
            public var rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }
            /// The client applies its pins (as declared, within their scope).
            public static let inForce = Pins(rawValue: "in-force")
            /// The client has no pins yet: an app that fetches its pin set after start, or a second client in the
            /// process that shares the TLS session cache.
            public static let absent = Pins(rawValue: "absent")
            public static let all: [Pins] = [.inForce, .absent]
            public var description: String { rawValue }
        }

        /// The host name the client asks for (URL, SNI, Host header, certificate check).
        public var host: String
        /// Who answers: `genuine` (the scenario's `server`) or a party the scenario defines under `parties`.
        public var party: String
        public var pins: Pins
        /// A chain the party's server rotates to before this step (a new generation, with session state of its
        /// own: it cannot resume what it issued before); `nil` keeps what it served.
        public var rotateTo: [String]?
        /// Whether the client sends this step's request as TLS 1.3 early data (0-RTT) when the session it resumes
        /// allows it (`early-data: send`): an app that uses 0-RTT. A correct client still sends none on a session
        /// whose chain it has not checked against the pins now in force.
        public var earlyData = false
        /// What a correct client does in this step under each pin profile.
        public var expectations: [PinProfile: Expectation]

        public init(
            host: String, party: String = Scenario.genuineParty, pins: Pins = .inForce, rotateTo: [String]? = nil,
            expectations: [PinProfile: Expectation]
        ) {
            self.host = host
            self.party = party
            self.pins = pins
            self.rotateTo = rotateTo
            self.expectations = expectations
        }

        public func expected(_ profile: PinProfile) -> Expectation { expectations[profile] ?? .refuse }
    }

    /// The party name of the scenario's own `server` in steps.
    public static let genuineParty = "genuine"

    /// The host name clients ask for unless a scenario says otherwise.
    public static let defaultHost = "localhost"
    /// The identity clients are built for unless a scenario says otherwise.
    public static let defaultPinnedIdentity = "leaf-v1"
    /// The identity whose key (K2) is shipped as the backup pin unless a scenario says otherwise.
    public static let defaultBackupIdentity = "leaf-v3-rekey"

    public var id: String
    public var title: String
    public var tags: [String]
    /// The scenario's place in its catalogue's teaching order (the file's `order:`): a catalogue sorts by it, then by
    /// id; scenarios without one come after those with one. The one place the order is written.
    public var order: Int?
    /// The teaching paragraph: what happens in production, what a correct client does and why.
    public var teaching: String
    public var server: Server
    public var client: Client
    /// What a correct client does under each pin profile; every profile of `PinProfile.all` is present.
    public var expectations: [PinProfile: Expectation]
    /// Optional explanations of single cells.
    public var notes: [PinProfile: String]
    /// Why a correct client refuses in this scenario (`pin-mismatch`, `chain-invalid`, `hostname`, `client-auth`,
    /// `protocol`), when it refuses at all. A refusal observed for another reason is reported ("rejected for the
    /// wrong reason is a bug too").
    public var refusal: RefusalCategory?
    /// The file the scenario came from, as shown in errors (`scenarios/rekey.yaml`), if it came from a file.
    public var source: String?
    /// The cells a platform's TLS policy decides (`policy:` in the file): why, and what each named platform expects.
    public var policy: Policy?
    /// The profiles where correct verifiers legitimately differ (`varies:` in the file), with the reason: the
    /// expectation is accept, and a refusal is "stricter than required", not a deviation.
    public var variance: [PinProfile: String] = [:]
    /// The varying profiles whose difference is which path the verifier validates (`path-building: true`): there a
    /// correct client's refusal on a pin mismatch is "stricter than required" too, because the pins are checked
    /// against the path its verifier built (a trusted-first verifier ends at another root).
    public var pathVariance: Set<PinProfile> = []
    /// The expectations of clients that declare checks (`expect-if:`): revocation and CT are client policy, so the
    /// same server may be refused by one correct client and accepted by another.
    public var conditional: ConditionalExpectations? = nil
    /// What a correct client does when the host serves one of its alternative chains (`expect-served:`), by the
    /// alternative's first identity; profiles an entry does not list follow `expect`, which is for `chain`.
    public var servedExpectations: [String: [PinProfile: Expectation]] = [:]
    /// The OWASP MASTG tests (`MASTG-TEST-0283`) this scenario's cells are evidence for (`mastg:` in the file): only
    /// tests whose title names the flaw a client shows by failing the cell. Every id is in `MASTG.entries`.
    public var mastg: [String] = []

    /// What a scenario says about the cells a platform's TLS policy decides: why, and what a correct client on each
    /// listed platform does. Platforms not listed, and runs that name no platform, follow `expect`.
    public struct Policy: Sendable, Hashable {
        /// Why the platform, not the pinning logic, decides these cells.
        public var reason: String
        /// The expectation per platform and profile; a listed platform has every profile.
        public var expectations: [PlatformPolicy: [PinProfile: Expectation]]

        public init(reason: String, expectations: [PlatformPolicy: [PinProfile: Expectation]]) {
            self.reason = reason
            self.expectations = expectations
        }
    }
    /// Servers other than the genuine one, by party name (an interceptor): each is its own server, on its own port.
    public var parties: [String: Server] = [:]
    /// The connections of the scenario, in order; empty for a one-connection scenario (the client connects once to
    /// `server` for `client.host`). With steps, `expectations` are the last step's.
    public var steps: [Step] = [] {
        didSet { if let last = steps.last { expectations = last.expectations } }
    }

    /// Whether the scenario is made of more than one connection.
    public var isMultiStep: Bool { !steps.isEmpty }

    /// The server of a party: `genuine` is `server`.
    public func party(_ name: String) -> Server? { name == Scenario.genuineParty ? server : parties[name] }

    public init(
        id: String, title: String, tags: [String] = [], order: Int? = nil, teaching: String, server: Server,
        client: Client,
        expectations: [PinProfile: Expectation], notes: [PinProfile: String] = [:], refusal: RefusalCategory? = nil,
        source: String? = nil, policy: Policy? = nil, variance: [PinProfile: String] = [:]
    ) {
        self.policy = policy
        self.variance = variance
        self.id = id
        self.title = title
        self.tags = tags
        self.order = order
        self.teaching = teaching
        self.server = server
        self.client = client
        self.expectations = expectations
        self.notes = notes
        self.refusal = refusal
        self.source = source
    }

    /// The expectation for a profile (`refuse` for a profile the scenario does not list, which validation forbids).
    public func expected(_ profile: PinProfile) -> Expectation { expectations[profile] ?? .refuse }

    /// The expectation for a profile on a platform: the platform's, where the scenario's `policy` lists it.
    public func expected(_ profile: PinProfile, platform: PlatformPolicy?) -> Expectation {
        platform.flatMap { policy?.expectations[$0]?[profile] } ?? expected(profile)
    }

    /// Whether a platform's policy decides the cell: the scenario's platforms do not all expect the same there.
    public func decidedByPolicy(_ profile: PinProfile) -> Bool {
        guard let policy else { return false }
        let outcomes = Set(policy.expectations.values.compactMap { $0[profile] } + [expected(profile)])
        return outcomes.count > 1
    }

    /// How the cell (this profile, on `platform`) is judged beyond its expectation.
    public func rule(_ profile: PinProfile, platform: PlatformPolicy?) -> CellRule {
        let e = expected(profile, platform: platform)
        guard let policy, decidedByPolicy(profile) else {
            return CellRule(
                platform: platform, variance: variance[profile], varianceIsPathBuilding: pathVariance.contains(profile))
        }
        let others = policy.expectations.keys.sorted().filter {
            policy.expectations[$0]?[profile] != e && $0 != platform
        }
        return CellRule(
            platform: platform, policyReason: policy.reason, otherPlatforms: others, variance: variance[profile],
            varianceIsPathBuilding: pathVariance.contains(profile))
    }

    /// The expectation for a profile when the host served the chain whose first certificate is `served` (an identity
    /// name): that alternative's `expect-served` row, else `expect`'s.
    public func expected(_ profile: PinProfile, served: String) -> Expectation {
        servedExpectations[served]?[profile] ?? expected(profile)
    }

    /// The expectation for a profile under each chain the host holds, by its first identity (`chain` first).
    public func expectationsByServedChain(_ profile: PinProfile) -> [(identity: String, expected: Expectation)] {
        server.chains.compactMap { $0.first }.map { ($0, expected(profile, served: $0)) }
    }

    /// Why a pin set of this profile is an outage waiting to happen on a host with several certificates: a client
    /// served one of them is refused (its pins do not cover that key) while one served another proceeds — the
    /// certificate a client is served follows its TLS stack's signature algorithms, which change with an update.
    /// `nil` when the host holds one chain or every chain has the same outcome.
    public func outageWarning(_ profile: PinProfile) -> String? {
        let rows = expectationsByServedChain(profile)
        let refused = rows.filter { $0.expected == .refuse }.map(\.identity)
        let accepted = rows.filter { $0.expected == .accept }.map(\.identity)
        guard !refused.isEmpty, !accepted.isEmpty else { return nil }
        return
            "the pin set does not cover every certificate this host holds: a client served \(refused.joined(separator: " or ")) is refused, one served \(accepted.joined(separator: " or ")) proceeds — an outage for every client whose TLS stack comes to prefer \(refused.count == 1 ? "that certificate" : "those certificates")"
    }

    /// The expected row in `PinProfile.all` order, e.g. `A X X A A A`.
    public var expectedRow: String {
        PinProfile.all.map { expected($0) == .accept ? "A" : "X" }.joined(separator: " ")
    }

    public var presentsClientCertificate: Bool { client.present != nil }
}

extension Scenario: Encodable {
    private enum CodingKeys: String, CodingKey {
        case id, title, tags, teaching, server, client, refusal, expect, notes, source, policy, varies, parties, steps,
            mastg
        case expectIf = "expect-if"
        case expectServed = "expect-served"
    }
    private enum ServerKeys: String, CodingKey {
        case chain
        case tlsVersions = "tls-versions"
        case cipherSuites = "ciphers"
        case clientAuth = "client-auth"
        case clientAuthTrust = "client-auth-trust"
        case resumption
        case ticketKey = "ticket-key"
        case earlyData = "early-data"
        case ocspStaple = "ocsp-staple"
        case responder, alternatives, groups, ech
    }
    private enum StepKeys: String, CodingKey {
        case host, party, pins
        case rotateTo = "rotate-to"
        case earlyData = "early-data"
        case expect
    }

    private static func encode(_ server: Server, in s: inout KeyedEncodingContainer<ServerKeys>) throws {
        try s.encode(server.chain, forKey: .chain)
        try s.encode(server.tlsVersions.map(\.scenarioName), forKey: .tlsVersions)
        try s.encode(server.cipherSuites, forKey: .cipherSuites)
        try s.encode(server.clientAuth, forKey: .clientAuth)
        try s.encode(server.clientAuthTrust, forKey: .clientAuthTrust)
        if server.resumption != .off { try s.encode(server.resumption, forKey: .resumption) }
        try s.encodeIfPresent(server.ticketKey, forKey: .ticketKey)
        if server.earlyData { try s.encode("accept", forKey: .earlyData) }
        try s.encodeIfPresent(server.ocspStaple?.rawValue, forKey: .ocspStaple)
        try s.encodeIfPresent(server.responder?.rawValue, forKey: .responder)
        if !server.alternatives.isEmpty { try s.encode(server.alternatives, forKey: .alternatives) }
        if !server.groups.isEmpty { try s.encode(server.groups, forKey: .groups) }
        try s.encodeIfPresent(server.ech?.rawValue, forKey: .ech)
    }
    private enum ClientKeys: String, CodingKey {
        case trust, pinned, backup, present, host
        case pinScope = "pin-scope"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(title, forKey: .title)
        try c.encode(tags, forKey: .tags)
        if !mastg.isEmpty { try c.encode(mastg, forKey: .mastg) }
        try c.encode(teaching, forKey: .teaching)
        var s = c.nestedContainer(keyedBy: ServerKeys.self, forKey: .server)
        try Self.encode(server, in: &s)
        if !parties.isEmpty {
            var ps = c.nestedContainer(keyedBy: AnyKey.self, forKey: .parties)
            for (name, party) in parties.sorted(by: { $0.key < $1.key }) {
                var pc = ps.nestedContainer(keyedBy: ServerKeys.self, forKey: AnyKey(name))
                try Self.encode(party, in: &pc)
            }
        }
        if !steps.isEmpty {
            var list = c.nestedUnkeyedContainer(forKey: .steps)
            for step in steps {
                var sc = list.nestedContainer(keyedBy: StepKeys.self)
                try sc.encode(step.host, forKey: .host)
                try sc.encode(step.party, forKey: .party)
                try sc.encode(step.pins, forKey: .pins)
                try sc.encodeIfPresent(step.rotateTo, forKey: .rotateTo)
                if step.earlyData { try sc.encode("send", forKey: .earlyData) }
                var e = sc.nestedContainer(keyedBy: AnyKey.self, forKey: .expect)
                for p in PinProfile.all { try e.encode(step.expected(p), forKey: AnyKey(p.rawValue)) }
            }
        }
        var cl = c.nestedContainer(keyedBy: ClientKeys.self, forKey: .client)
        try cl.encode(client.trust, forKey: .trust)
        try cl.encode(client.pinned, forKey: .pinned)
        try cl.encode(client.backup, forKey: .backup)
        try cl.encodeIfPresent(client.present, forKey: .present)
        try cl.encode(client.host, forKey: .host)
        try cl.encodeIfPresent(client.pinScope, forKey: .pinScope)
        try c.encodeIfPresent(refusal, forKey: .refusal)
        var e = c.nestedContainer(keyedBy: AnyKey.self, forKey: .expect)
        for p in PinProfile.all { try e.encode(expected(p), forKey: AnyKey(p.rawValue)) }
        var n = c.nestedContainer(keyedBy: AnyKey.self, forKey: .notes)
        for (p, text) in notes.sorted(by: { $0.key < $1.key }) { try n.encode(text, forKey: AnyKey(p.rawValue)) }
        try c.encodeIfPresent(source, forKey: .source)
        if let policy {
            var pc = c.nestedContainer(keyedBy: AnyKey.self, forKey: .policy)
            try pc.encode(policy.reason, forKey: AnyKey("reason"))
            for (platform, row) in policy.expectations.sorted(by: { $0.key < $1.key }) {
                var r = pc.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(platform.rawValue))
                for p in PinProfile.all { if let e = row[p] { try r.encode(e, forKey: AnyKey(p.rawValue)) } }
            }
        }
        if !servedExpectations.isEmpty {
            var sc = c.nestedContainer(keyedBy: AnyKey.self, forKey: .expectServed)
            for (identity, row) in servedExpectations.sorted(by: { $0.key < $1.key }) {
                var r = sc.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(identity))
                for p in PinProfile.all { if let e = row[p] { try r.encode(e, forKey: AnyKey(p.rawValue)) } }
            }
        }
        if let conditional {
            var ec = c.nestedContainer(keyedBy: AnyKey.self, forKey: .expectIf)
            try ec.encode(conditional.reason, forKey: AnyKey("reason"))
            for entry in conditional.entries {
                var r = ec.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(entry.condition.description))
                for p in PinProfile.all {
                    if let e = entry.expectations[p] { try r.encode(e, forKey: AnyKey(p.rawValue)) }
                }
            }
        }
        if !variance.isEmpty {
            var vc = c.nestedContainer(keyedBy: AnyKey.self, forKey: .varies)
            for (p, text) in variance.sorted(by: { $0.key < $1.key }) {
                if pathVariance.contains(p) {
                    var pc = vc.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(p.rawValue))
                    try pc.encode(text, forKey: AnyKey("reason"))
                    try pc.encode(true, forKey: AnyKey("path-building"))
                } else {
                    try vc.encode(text, forKey: AnyKey(p.rawValue))
                }
            }
        }
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ s: String) { stringValue = s }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
