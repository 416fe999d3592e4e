public import PinningLabTLSTypes

/// One cell: a scenario under one pin profile on one engine, for a client on a platform that declares its checks —
/// the unit every run is made of (DESIGN.md, "One cell, one judge").
///
/// A cell is resolved once: its expectation, its rule (platform policy, declared checks, verifier variance) and the
/// refusal a correct client gives are properties of the cell, and its ``plan`` says what each connection is. Every way
/// of running a client — `pinlab check`, a batch harness, the control API, `Lab.check`, every testing entry point —
/// judges through ``judge(_:evidence:outcome:clientMilliseconds:)``, so no two of them can judge the same cell
/// differently.
public struct Cell: Sendable {
    public let scenario: Scenario
    public let profile: PinProfile
    /// The engine's name: `openssl`, `gnutls`, or a registered engine's.
    public let engine: String
    /// The client's name, as reports show it.
    public let client: String
    /// The platform whose TLS policy the client follows (`nil`: none named).
    public let platform: PlatformPolicy?
    /// What the client declares it checks beyond its pins (revocation, CT).
    public let checks: ClientChecks

    public init(
        scenario: Scenario, profile: PinProfile, engine: String, client: String, platform: PlatformPolicy? = nil,
        checks: ClientChecks = .undeclared
    ) {
        self.scenario = scenario
        self.profile = profile
        self.engine = engine
        self.client = client
        self.platform = platform
        self.checks = checks
    }

    /// What a correct client on ``platform`` that declares ``checks`` does.
    public var expected: Expectation { scenario.expected(profile, platform: platform, checks: checks) }
    /// How the cell is judged beyond its expectation.
    public var rule: CellRule { scenario.rule(profile, platform: platform, checks: checks) }
    /// Why a correct client refuses here (the scenario's `refusal`).
    public var refusal: RefusalCategory? { scenario.refusal }
    /// `scenario/profile` — how reports name a cell.
    public var id: String { "\(scenario.id)/\(profile)" }

    /// One connection of the cell's plan.
    public struct Step: Sendable, Hashable {
        /// 1, 2, … in the order the client makes them.
        public let number: Int
        /// The host name the client asks for (URL, SNI, Host header, certificate check).
        public let host: String
        /// Who answers: `genuine` (the scenario's `server`) or another party of the scenario.
        public let party: String
        /// Whether the client's pins are in force on this connection.
        public let pinsInForce: Bool
        /// The chain the party rotates to before this connection (`nil`: it keeps what it served).
        public let rotateTo: [String]?
        /// Whether the client sends this connection's request as 0-RTT early data when it may.
        public let earlyData: Bool
        /// Whether the party offers HTTP/2 (ALPN `h2`).
        public let http2: Bool
        /// What a correct client does on this connection.
        public let expected: Expectation
        /// How the connection is judged beyond its expectation (a step of several is judged plainly).
        public let rule: CellRule
        /// What the party asks of the client's certificate.
        public let clientAuth: ClientAuthentication
        /// Why a correct client refuses on this connection, where it does.
        public let refusal: RefusalCategory?

        /// The pins the client holds on this connection: `pins` when they are in force, none (of the same kind) when
        /// the step says the client has none yet. The one definition of "which pins are in force for a step".
        public func pins(from pins: PinSet) -> PinSet {
            pinsInForce ? pins : PinSet(kind: pins.kind, hashes: [])
        }

        /// The same rule for hash lists (command templates, batch documents).
        public func pins<T>(from pins: [T]) -> [T] { pinsInForce ? pins : [] }

        /// `api.pinning.test via interceptor, pins absent`.
        public var summary: String {
            "\(host) via \(party)\(pinsInForce ? "" : ", pins absent")\(earlyData ? ", 0-RTT" : "")\(rotateTo.map { ", rotated to \($0.joined(separator: " + "))" } ?? "")"
        }
    }

    /// The connections of the cell, in order: one for a one-connection scenario (its host, the genuine server, the
    /// cell's expectation and rule), one per step otherwise.
    public var plan: [Step] {
        guard scenario.isMultiStep else {
            return [
                Step(
                    number: 1, host: scenario.client.host, party: Scenario.genuineParty, pinsInForce: true,
                    rotateTo: nil,
                    earlyData: false, http2: scenario.server.offersHTTP2, expected: expected, rule: rule,
                    clientAuth: scenario.server.clientAuth, refusal: scenario.refusal)
            ]
        }
        return scenario.steps.enumerated().map { i, step in
            let party = scenario.party(step.party)
            let e = step.expected(profile)
            return Step(
                number: i + 1, host: step.host, party: step.party, pinsInForce: step.pins != .absent,
                rotateTo: step.rotateTo, earlyData: step.earlyData, http2: party?.offersHTTP2 ?? false, expected: e,
                rule: .plain, clientAuth: party?.clientAuth ?? .none, refusal: e == .refuse ? scenario.refusal : nil)
        }
    }

    /// Whether the cell is several connections that share the client's TLS session cache.
    public var isMultiStep: Bool { scenario.isMultiStep }

    /// Judges one connection of the plan from the server's evidence and, when the client reports one, its outcome
    /// (`nil`: the client makes no claim and the evidence alone decides). The one judge.
    ///
    /// On a host that holds several chains (`server.alternatives`), the expectation is the one for the chain the
    /// server sent (``ServerEvidence/servedIdentity``), and the reason says which one and whether the pin set covers
    /// every certificate of the host (``Scenario/outageWarning(_:)``).
    public func judge(
        _ step: Step, evidence: ServerEvidence, outcome: ClientOutcome?, clientMilliseconds: Double = 0
    ) -> Verdict {
        var expected = step.expected
        var refusal = step.refusal
        var rule = step.rule
        let served = scenario.server.alternatives.isEmpty || isMultiStep ? nil : evidence.servedIdentity
        if let served {
            expected = scenario.servedExpectations[served]?[profile] ?? expected
            refusal = expected == .refuse ? scenario.refusal : nil
        }
        // A client that requires a hybrid key exchange refuses whatever negotiated a classical group, on every
        // scenario: the key exchange of the connection decides before any pin is looked at.
        if checks.keyExchange == .hybrid, let why = Self.classicalKeyExchange(evidence) {
            expected = .refuse
            refusal = nil
            rule.checks = "as a key-exchange=hybrid client: \(why)"
        }
        var v = Verdict.judge(
            scenario: scenario.id, profile: profile, engine: engine, client: client, expected: expected,
            evidence: evidence, outcome: outcome, clientAuth: step.clientAuth, expectedCategory: refusal,
            clientMilliseconds: clientMilliseconds, rule: rule)
        if let served {
            v.reason += "; served \(served) of the host's \(scenario.server.chains.count) certificates"
        }
        if !isMultiStep, let warning = scenario.outageWarning(profile) {
            v.reason += "; \(warning)"
            v.outage = warning
        }
        return v
    }

    /// Why the connection's key exchange was classical, as the server saw it (`nil`: it was a post-quantum hybrid,
    /// or the evidence cannot say): the group negotiated, or — when no handshake completed — a ClientHello that
    /// offered only hybrid groups to a server that took none of them.
    static func classicalKeyExchange(_ e: ServerEvidence) -> String? {
        func isHybrid(_ name: String) -> Bool {
            let n = name.uppercased()
            return n.contains("MLKEM") || n.contains("ML-KEM") || n.contains("KYBER")
        }
        if let g = e.negotiatedGroup { return isHybrid(g) ? nil : "the server negotiated the classical group \(g)" }
        if !e.handshakeCompleted, let offered = e.offered?.groups.filter({ !$0.isGREASE }), !offered.isEmpty,
            offered.allSatisfy({ isHybrid($0.name ?? "") })
        {
            return "it offered only hybrid groups, and the server negotiated none of them"
        }
        return nil
    }

    /// Judges a one-connection cell (its plan's only step).
    public func judge(evidence: ServerEvidence, outcome: ClientOutcome?, clientMilliseconds: Double = 0) -> Verdict {
        judge(plan[0], evidence: evidence, outcome: outcome, clientMilliseconds: clientMilliseconds)
    }

    /// The verdict of a cell of several connections: the first step that did not pass decides.
    public func combining(_ steps: [(Step, Verdict)], clientMilliseconds: Double) -> Verdict {
        Verdict.combining(
            steps: steps, scenario: scenario.id, profile: profile,
            engine: engine, client: client, clientMilliseconds: clientMilliseconds)
    }

    /// A cell that was not run (unsupported, skipped, an error), with the reason.
    public func notRun(_ status: Verdict.Status, _ reason: String) -> Verdict {
        .notRun(
            scenario: scenario.id, profile: profile, engine: engine, client: client, expected: expected,
            status: status, reason: reason)
    }
}
