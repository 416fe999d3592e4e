import Foundation
public import PinningLabTLSTypes

/// What happened in one cell, as far as it could be seen.
public enum ObservedOutcome: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The client sent its request: the server read application data.
    case accepted
    /// The client closed or alerted before sending anything, or the handshake failed.
    case refused
    public var description: String { rawValue }
    public init(_ e: Expectation) { self = e == .accept ? .accepted : .refused }
    public var asExpectation: Expectation { self == .accepted ? .accept : .refuse }
}

/// What the server saw of one client connection, reduced to what a verdict needs. Engine-neutral.
public struct ServerEvidence: Sendable, Hashable, Codable {
    /// Whether a connection from the client arrived at all.
    public var connected: Bool
    /// Whether the TLS handshake completed on the server's side.
    public var handshakeCompleted: Bool
    /// Whether the server read application data (the HTTP request line): the client accepted.
    public var applicationDataReceived: Bool
    /// The request line the server read, e.g. `GET / HTTP/1.1`.
    public var requestLine: String?
    /// The alert the client sent, e.g. `bad_certificate (42)` (never close_notify).
    @ReportedAlert public var alertReceived: TLSAlert?
    /// The alert the server sent, e.g. `certificate_required (116)` (never close_notify).
    @ReportedAlert public var alertSent: TLSAlert?
    /// The server's own error, e.g. the reason it rejected a client certificate.
    public var serverError: String?
    public var negotiatedVersion: String?
    public var cipherSuite: String?
    public var sni: String?
    /// Whether the client offered Encrypted Client Hello on this connection (`encrypted_client_hello` in its
    /// ClientHello; `sni` is then the outer, public name). No engine of the lab accepts ECH: the offer was rejected.
    /// Absent where none was offered or the engine could not see the ClientHello.
    public var echOffered: Bool?
    /// The host the client named in clear (SNI, no ECH) on a later connection of the same cell after its ECH offer
    /// was rejected: the downgrade a correct ECH client never makes (RFC 9849, section 6.1.6). Absent otherwise.
    public var echClearFallback: String?
    /// The subject of the client certificate presented, if any.
    public var clientCertificateSubject: String?
    /// Milliseconds from accept to the end of the handshake, when it completed.
    public var handshakeMilliseconds: Double?
    /// How the connection resumed an earlier session (no certificate was sent); absent for a full handshake.
    public var resumption: ResumptionMechanism?
    /// How many bytes of the request arrived as TLS 1.3 early data (0-RTT), before the handshake completed, as the
    /// server counted them; absent when none did.
    /// The key-exchange group the server's library negotiated (`x25519`, `X25519MLKEM768`), as it names it; absent
    /// when none was (no handshake, a resumption by PSK alone) or the engine could not say.
    public var negotiatedGroup: String?
    /// What the client's (first) ClientHello offered: `groups` (supported_groups), `keyShares` (the groups of its
    /// key_share entries) and `signatureAlgorithms`, each as `name (0x11ec)` in the client's order; absent where the
    /// engine did not see the ClientHello.
    public var offered: ClientHelloOffers?
    /// The server answered with a HelloRetryRequest (the client offered the group chosen without a key share);
    /// absent otherwise.
    public var helloRetryRequest: Bool?
    /// The SHA-256 (base64) of the certificate the server sent first, as a report's chain writes
    /// `certificateSHA256`: which certificate this client was served. Absent when none was (a resumption) or the
    /// engine could not capture it.
    public var servedCertificateSHA256: String?
    /// The identity whose chain the server sent (`leaf-rsa-2048`): on a host that holds several
    /// (`server.alternatives`), the expectation follows it. Absent when no certificate was sent (a resumption, no
    /// handshake) or the engine could not say.
    public var servedIdentity: String?
    public var earlyDataBytes: Int?

    public init(
        connected: Bool, handshakeCompleted: Bool = false, applicationDataReceived: Bool = false,
        requestLine: String? = nil, alertReceived: TLSAlert? = nil, alertSent: TLSAlert? = nil,
        serverError: String? = nil, negotiatedVersion: String? = nil, cipherSuite: String? = nil,
        sni: String? = nil, clientCertificateSubject: String? = nil, handshakeMilliseconds: Double? = nil,
        resumption: ResumptionMechanism? = nil
    ) {
        self.resumption = resumption
        self.connected = connected
        self.handshakeCompleted = handshakeCompleted
        self.applicationDataReceived = applicationDataReceived
        self.requestLine = requestLine
        self.alertReceived = alertReceived
        self.alertSent = alertSent
        self.serverError = serverError
        self.negotiatedVersion = negotiatedVersion
        self.cipherSuite = cipherSuite
        self.sni = sni
        self.clientCertificateSubject = clientCertificateSubject
        self.handshakeMilliseconds = handshakeMilliseconds
    }

    /// No connection reached the server.
    public static let noConnection = ServerEvidence(connected: false)

    public var outcome: ObservedOutcome { applicationDataReceived ? .accepted : .refused }
}

/// An alert as reports write it, `bad_certificate (42)`, and read it back (the code counts; the name is the code's);
/// absent from the JSON when there is none. Used by every alert field of a verdict and its evidence.
@propertyWrapper
public struct ReportedAlert: Sendable, Hashable, Codable {
    public var wrappedValue: TLSAlert?

    public init(wrappedValue: TLSAlert?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        guard !c.decodeNil() else {
            wrappedValue = nil
            return
        }
        let text = try c.decode(String.self)
        guard text.hasSuffix(")"), let open = text.lastIndex(of: "("),
            let code = UInt8(text[text.index(after: open)..<text.index(before: text.endIndex)])
        else {
            throw DecodingError.dataCorruptedError(
                in: c,
                debugDescription: "'\(text)' is not an alert written as `name (code)`, e.g. `bad_certificate (42)`")
        }
        wrappedValue = TLSAlert(code: code)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let a = wrappedValue { try c.encode(a.description) } else { try c.encodeNil() }
    }
}

extension KeyedEncodingContainer {
    /// A missing alert leaves its key out, as `encodeIfPresent` would for a plain optional.
    mutating func encode(_ value: ReportedAlert, forKey key: Key) throws {
        if value.wrappedValue != nil { try encodeIfPresent(value, forKey: key) }
    }
}

extension KeyedDecodingContainer {
    /// A missing key is no alert.
    func decode(_ type: ReportedAlert.Type, forKey key: Key) throws -> ReportedAlert {
        try decodeIfPresent(type, forKey: key) ?? ReportedAlert(wrappedValue: nil)
    }
}

/// The verdict of one cell (scenario × pin profile × engine): expected against observed, with the reason.
public struct Verdict: Sendable, Hashable, Codable {
    public struct Status: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Observed equals expected, and the client's claim (if any) agrees with the server.
        public static let pass = Status(rawValue: "pass")
        /// Observed differs from expected: the client deviates.
        public static let fail = Status(rawValue: "fail")
        /// The server's observation matches the expectation but the client claims the opposite.
        public static let disagree = Status(rawValue: "disagree")
        /// The client does not support this pin profile; not run.
        public static let skipped = Status(rawValue: "skipped")
        /// The engine cannot serve this scenario; not run.
        public static let unsupported = Status(rawValue: "unsupported")
        /// The harness could not run the cell (a server failed to start, the client could not be launched).
        public static let error = Status(rawValue: "error")
        /// The outcome is the one the run's platform policy prescribes, and the policy — not the pinning logic —
        /// decides the cell (`policy: <reason>`). Not a deviation.
        public static let policy = Status(rawValue: "policy")
        /// The client refused where correct verifiers legitimately differ and accepting is what is expected
        /// (`stricter than required: <reason>`). Not a deviation.
        public static let stricter = Status(rawValue: "stricter")
        public static let all: [Status] = [.pass, .fail, .disagree, .skipped, .unsupported, .error, .policy, .stricter]
        public var description: String { rawValue }
        /// Whether this status makes `pinlab check` exit non-zero.
        public var isDeviation: Bool { self == .fail || self == .disagree || self == .error }
    }

    /// Times in milliseconds.
    public struct Timings: Sendable, Hashable, Codable {
        /// The client's run, from launch to its end.
        public var clientMilliseconds: Double
        /// The server's handshake, when it completed.
        public var handshakeMilliseconds: Double?
        public init(clientMilliseconds: Double = 0, handshakeMilliseconds: Double? = nil) {
            self.clientMilliseconds = clientMilliseconds
            self.handshakeMilliseconds = handshakeMilliseconds
        }
    }

    private enum CodingKeys: String, CodingKey {
        case scenario, profile, engine, client, expected, observed, claim
        case status = "verdict"
        case reason, category,
            expectedCategory, wrongReason, alert, clientDetail, evidence, timings, baselined, steps, device
        case mastg, outage
    }

    /// The OWASP MASTG test and MASWE weakness ids this cell is evidence for (`MASTG-TEST-0283`, `MASWE-0052`), from
    /// its scenario's `mastg:` field and `MASTG.entries`; absent for scenarios that name none and cells not run.
    public var mastg: [String]?

    /// On a host that holds several certificates (`server.alternatives`): why this profile's pin set is an outage
    /// waiting to happen — it does not cover every certificate the host holds (``Scenario/outageWarning(_:)``); absent
    /// otherwise, and for cells not run.
    public var outage: String?

    /// The verdict of one connection of a cell made of several (`Scenario.steps`).
    public struct Step: Sendable, Hashable, Codable {
        private enum CodingKeys: String, CodingKey {
            case step, host, party, pins, expected, observed
            case status = "verdict"
            case reason, category, evidence
        }
        /// 1, 2, … in the scenario's order.
        public var step: Int
        public var host: String
        public var party: String
        public var pins: Scenario.Step.Pins
        public var expected: Expectation
        public var observed: ObservedOutcome?
        public var status: Status
        public var reason: String
        public var category: RefusalCategory?
        public var evidence: ServerEvidence?

        public init(_ s: Cell.Step, verdict v: Verdict) {
            step = s.number
            host = s.host
            party = s.party
            pins = s.pinsInForce ? .inForce : .absent
            expected = v.expected
            observed = v.observed
            status = v.status
            reason = v.reason
            category = v.category
            evidence = v.evidence
        }
    }

    /// A cell made of several connections: passes when every step does. Its `expected` and `observed` are the
    /// last step's; its status and reason the first step's that did not pass (else the last step's).
    package static func combining(
        steps: [(Cell.Step, Verdict)], scenario: String, profile: PinProfile, engine: String, client: String,
        clientMilliseconds: Double
    ) -> Verdict {
        let numbered = steps.map { Step($0.0, verdict: $0.1) }
        let deciding = steps.firstIndex { $0.1.status != .pass } ?? (steps.count - 1)
        let (step, v) = steps[deciding]
        var cell = v
        cell.scenario = scenario
        cell.profile = profile
        cell.engine = engine
        cell.client = client
        cell.reason = "step \(deciding + 1) of \(steps.count) (\(step.summary)): \(v.reason)"
        if let last = steps.last?.1 {
            cell.expected = last.expected
            cell.observed = last.observed
        }
        cell.wrongReason = steps.contains { $0.1.wrongReason }
        cell.timings = Timings(
            clientMilliseconds: clientMilliseconds, handshakeMilliseconds: v.timings.handshakeMilliseconds)
        cell.steps = numbered
        return cell
    }

    public var scenario: String
    public var profile: PinProfile
    public var engine: String
    public var client: String
    public var expected: Expectation
    /// The outcome the verdict rests on: the server's observation (the oracle); `nil` when not run.
    public var observed: ObservedOutcome?
    /// The client's own claim, for adapters that report one.
    public var claim: ClientOutcome.Claim?
    public var status: Status
    /// A one-line human reason, e.g. "expected refuse, but the server received GET / HTTP/1.1".
    public var reason: String
    /// Why the client refused, where the evidence allows.
    public var category: RefusalCategory?
    /// Why a correct client refuses in this scenario (the scenario's `refusal`).
    public var expectedCategory: RefusalCategory?
    /// The client refused as expected, but the evidence shows another reason than a correct client's
    /// ("rejected for the wrong reason"). Reported, not counted as a deviation: classification is heuristic.
    public var wrongReason: Bool
    /// The alert seen on the wire (sent by the client, or by the server when it refused a client certificate).
    @ReportedAlert public var alert: TLSAlert?
    /// The client's detail text (error message or exit status).
    public var clientDetail: String?
    public var evidence: ServerEvidence?
    public var timings: Timings
    /// Set by a baseline comparison when this deviating cell deviated the same way in the baseline (a known,
    /// accepted divergence: it does not fail the run); absent otherwise.
    public var baselined: Bool?
    /// The verdict of each connection, for a cell made of several (`Scenario.steps`); `nil` for one connection.
    public var steps: [Step]?
    /// The device that ran the cell, for a cell leased to a device by the control API's queue (`POST /leases`);
    /// absent otherwise.
    public var device: Device?

    /// A device of a farm (a phone, a worker) and its operating system, as it named them when it leased the cell.
    public struct Device: Sendable, Hashable, Codable {
        public var name: String
        public var os: String
        public init(name: String, os: String) {
            self.name = name
            self.os = os
        }
    }

    public init(
        scenario: String, profile: PinProfile, engine: String, client: String, expected: Expectation,
        observed: ObservedOutcome?, claim: ClientOutcome.Claim?, status: Status, reason: String,
        category: RefusalCategory? = nil, expectedCategory: RefusalCategory? = nil, wrongReason: Bool = false,
        alert: TLSAlert? = nil, clientDetail: String? = nil, evidence: ServerEvidence? = nil,
        timings: Timings = Timings()
    ) {
        self.scenario = scenario
        self.profile = profile
        self.engine = engine
        self.client = client
        self.expected = expected
        self.observed = observed
        self.claim = claim
        self.status = status
        self.reason = reason
        self.category = category
        self.expectedCategory = expectedCategory
        self.wrongReason = wrongReason
        self.alert = alert
        self.clientDetail = clientDetail
        self.evidence = evidence
        self.timings = timings
    }

    /// A cell that was not run.
    public static func notRun(
        scenario: String, profile: PinProfile, engine: String, client: String, expected: Expectation,
        status: Status, reason: String
    ) -> Verdict {
        Verdict(
            scenario: scenario, profile: profile, engine: engine, client: client, expected: expected,
            observed: nil, claim: nil, status: status, reason: reason)
    }

    /// Judges one connection from the server's evidence and, when the adapter reports one, the client's outcome.
    /// Called by ``Cell/judge(_:evidence:outcome:clientMilliseconds:)`` only: a cell's expectation, rule and refusal
    /// come from the cell.
    package static func judge(
        scenario: String, profile: PinProfile, engine: String, client: String, expected: Expectation,
        evidence: ServerEvidence, outcome: ClientOutcome?, clientAuth: ClientAuthentication = .none,
        expectedCategory: RefusalCategory? = nil, clientMilliseconds: Double = 0, rule: CellRule = .plain
    ) -> Verdict {
        let observed = evidence.outcome
        let claimed: ObservedOutcome? = outcome.map { $0.claim == .accepted ? .accepted : .refused }
        let alert = evidence.alertReceived ?? evidence.alertSent
        var category: RefusalCategory?
        if observed == .refused || claimed == .refused {
            category = classify(evidence: evidence, outcome: outcome, clientAuth: clientAuth)
        }

        var status: Status
        var reason: String
        let matches = observed.asExpectation == expected
        switch (matches, claimed) {
        case (false, _):
            status = .fail
            if observed == .accepted {
                let sent = evidence.requestLine ?? "application data"
                let early =
                    evidence.earlyDataBytes.map {
                        " as \($0) bytes of 0-RTT early data, before the handshake completed"
                    } ?? ""
                // A client that checks its pins after sending claims a refusal: the request leaked all the same.
                reason =
                    claimed == .refused
                    ? "expected refuse, but the client sent its request, then refused: the server had already received \(sent)\(early)"
                    : "expected refuse, but the client sent its request (\(sent))\(early)"
            } else {
                reason =
                    "expected accept, but the client "
                    + refusalPhrase(evidence: evidence, category: category, alert: alert)
            }
        case (true, let c?) where c != observed:
            status = .disagree
            reason =
                c == .accepted
                ? "the client claims it succeeded, but the server received no request"
                : "the client claims it refused, but the server received its request (\(evidence.requestLine ?? "application data"))"
        default:
            status = .pass
            reason =
                observed == .accepted
                ? "sent its request as expected"
                : "refused as expected: " + refusalPhrase(evidence: evidence, category: category, alert: alert)
        }
        applyRule(
            rule, expected: expected, observed: observed, claimed: claimed, category: category, status: &status,
            reason: &reason)
        if let name = evidence.echClearFallback, status != .fail {
            // Whatever that connection then did, the inner name went over the wire in clear.
            status = .fail
            reason =
                "after its Encrypted Client Hello was rejected, the client connected again naming \(name) in clear "
                + "(a downgrade: a correct client stops, or retries once with the server's retry configs); " + reason
        }
        var wrongReason = false
        // The scenario's refusal category speaks for `expect`; a refusal a declared check asks for (a revoked
        // certificate refused under a pin that matches) has its own reason.
        if status == .pass, observed == .refused, rule.checks == nil, let want = expectedCategory, let got = category,
            want != got
        {
            wrongReason = true
            reason += "; but a correct client refuses here for \(want), not \(got)"
        }
        if status != .pass || wrongReason, let d = outcome?.detail, !d.isEmpty {
            reason += "; client says: \(d)"
        }
        return Verdict(
            scenario: scenario, profile: profile, engine: engine, client: client, expected: expected,
            observed: observed, claim: outcome?.claim, status: status, reason: reason, category: category,
            expectedCategory: expectedCategory, wrongReason: wrongReason, alert: alert,
            clientDetail: outcome.map(detailText), evidence: evidence,
            timings: Timings(
                clientMilliseconds: clientMilliseconds, handshakeMilliseconds: evidence.handshakeMilliseconds))
    }

    /// Platform policy and verifier variance: a cell the run's platform decides is `policy` when the outcome is the
    /// platform's, `stricter` when the client refused what its platform allows (another platform refuses it), and a
    /// deviation that names the platform when the client accepted what it refuses; a refusal where verifiers
    /// legitimately differ is `stricter`. With no platform named, a policy cell is judged by `expect` as before, and a deviation names the
    /// platforms whose clients do what this client did.
    static func applyRule(
        _ rule: CellRule, expected: Expectation, observed: ObservedOutcome, claimed: ObservedOutcome?,
        category: RefusalCategory?, status: inout Status, reason: inout String
    ) {
        // A refusal on a pin mismatch is the pinning logic's doing: never excused as variance or policy.
        let platformRefusal =
            expected == .accept && observed == .refused && claimed != .accepted && category != .pinMismatch
        // …unless the scenario says the variance is the validated path itself: then the pin check ran on another path.
        let pathRefusal =
            rule.varianceIsPathBuilding && expected == .accept && observed == .refused && claimed != .accepted
        if status == .fail, let why = rule.variance, platformRefusal || pathRefusal {
            status = .stricter
            reason =
                "stricter than required: \(why); the client "
                + reason.replacingOccurrences(of: "expected accept, but the client ", with: "")
            return
        }
        if let why = rule.undecided {
            status = .policy
            reason = "undecided: \(why); the client " + (observed == .accepted ? "sent its request" : "refused")
            return
        }
        if let checks = rule.checks, status == .pass || status == .fail {
            reason += " (\(checks))"
        }
        guard let why = rule.policyReason else { return }
        let want = expected == .accept ? "accepts" : "refuses"
        if let platform = rule.platform {
            switch status {
            case .pass:
                status = .policy
                reason = "policy: \(why) — \(platform) \(want) here; \(reason)"
            case .fail where platformRefusal:
                // The platform allows what the client refused, and other platforms (or `expect`) refuse it: the client
                // is stricter than its platform, not flawed.
                status = .stricter
                reason =
                    "stricter than required: \(why) — \(platform) accepts here; the client "
                    + reason.replacingOccurrences(of: "expected accept, but the client ", with: "")
            case .fail:
                reason = "platform \(platform) \(want) here (\(why)); \(reason)"
            default:
                break
            }
        } else if status == .fail, !rule.otherPlatforms.isEmpty {
            let names = rule.otherPlatforms.map(\.rawValue).joined(separator: ", ")
            reason += "; policy: \(why) — as on \(names): name the client's platform with --platform"
        }
    }

    /// A cell's "stricter than required" or policy explanation, for reports (`nil` for other cells).
    public var ruleNote: String? {
        switch status {
        case .policy, .stricter: return reason
        default: return nil
        }
    }

    static func detailText(_ o: ClientOutcome) -> String {
        var parts: [String] = []
        if let s = o.exitStatus { parts.append("exit \(s)") }
        if !o.detail.isEmpty { parts.append(o.detail) }
        return parts.joined(separator: ": ")
    }

    package static func refusalPhrase(evidence: ServerEvidence, category: RefusalCategory?, alert: TLSAlert?) -> String
    {
        var s: String
        if !evidence.connected {
            s = "never connected"
        } else if let sent = evidence.alertSent, evidence.alertReceived == nil {
            s = "was refused by the server (alert \(sent))"
        } else if let a = evidence.alertReceived {
            s = "aborted the handshake with alert \(a)"
        } else if evidence.handshakeCompleted {
            s = "closed after the handshake without sending a request"
        } else {
            s = "closed during the handshake"
        }
        if let category { s += " [\(category)]" }
        return s
    }

    /// Classifies a refusal: the client's own category first, then the alerts on the wire.
    public static func classify(
        evidence: ServerEvidence, outcome: ClientOutcome?, clientAuth: ClientAuthentication = .none
    ) -> RefusalCategory? {
        // The server itself refused the client's certificate (or its absence).
        if clientAuth != .none, evidence.alertReceived == nil, evidence.alertSent != nil || evidence.serverError != nil
        {
            return .clientAuth
        }
        if let c = outcome?.category { return c }
        switch (evidence.alertReceived ?? evidence.alertSent)?.code {
        case TLSAlert.certificateRequired:
            return .clientAuth
        case TLSAlert.unknownCA, TLSAlert.certificateExpired, TLSAlert.badCertificate, TLSAlert.unsupportedCertificate,
            TLSAlert.certificateRevoked, TLSAlert.certificateUnknown:
            return .chainInvalid
        case TLSAlert.protocolVersion, TLSAlert.insufficientSecurity, TLSAlert.handshakeFailure,
            TLSAlert.illegalParameter,
            TLSAlert.decodeError:
            return .protocolError
        default:
            break
        }
        if let d = outcome?.detail.lowercased() {
            if d.contains("pinned") || d.contains(" pin ") || d.contains(" pins") || d.contains("pin mismatch")
                || d.contains("public key does not match")
            {
                return .pinMismatch
            }
            if d.contains("hostname") || d.contains("host name") || d.contains("subject alternative name")
                || d.contains("no alternative certificate subject name")
            {
                return .hostname
            }
            if d.contains("timed out") || d.contains("timeout") { return .timeout }
            if d.contains("verify") || d.contains("certificate") || d.contains("issuer") { return .chainInvalid }
        }
        return nil
    }
}

/// Counts of statuses over a set of verdicts.
public struct VerdictSummary: Sendable, Hashable, Codable {
    public var total = 0
    public var pass = 0
    public var fail = 0
    public var disagree = 0
    public var skipped = 0
    public var unsupported = 0
    public var error = 0
    /// Passing refusals whose reason differs from a correct client's (not deviations).
    public var wrongReason = 0
    /// Cells the run's platform policy decided, as it prescribes (not deviations).
    public var policy = 0
    /// Refusals stricter than required where correct verifiers differ (not deviations).
    public var stricter = 0
    /// Deviating cells that deviated the same way in the baseline (counted in `fail`/`disagree`/`error` too).
    public var baselined = 0
    public init() {}
    public init(_ verdicts: [Verdict]) {
        for v in verdicts {
            add(v.status)
            if v.wrongReason { wrongReason += 1 }
            if v.baselined == true { baselined += 1 }
        }
    }
    public mutating func add(_ s: Verdict.Status) {
        total += 1
        switch s {
        case .pass: pass += 1
        case .fail: fail += 1
        case .disagree: disagree += 1
        case .skipped: skipped += 1
        case .unsupported: unsupported += 1
        case .policy: policy += 1
        case .stricter: stricter += 1
        default: error += 1
        }
    }
    private enum CodingKeys: String, CodingKey {
        case total, pass, fail, disagree, skipped, unsupported, error, wrongReason, policy, stricter, baselined
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        total = try c.decode(Int.self, forKey: .total)
        pass = try c.decode(Int.self, forKey: .pass)
        fail = try c.decode(Int.self, forKey: .fail)
        disagree = try c.decode(Int.self, forKey: .disagree)
        skipped = try c.decode(Int.self, forKey: .skipped)
        unsupported = try c.decode(Int.self, forKey: .unsupported)
        error = try c.decode(Int.self, forKey: .error)
        wrongReason = try c.decode(Int.self, forKey: .wrongReason)
        policy = try c.decodeIfPresent(Int.self, forKey: .policy) ?? 0
        stricter = try c.decodeIfPresent(Int.self, forKey: .stricter) ?? 0
        baselined = try c.decodeIfPresent(Int.self, forKey: .baselined) ?? 0
    }

    /// The counts; `policy`, `stricter` and `baselined` only when not zero (reports of runs without them are unchanged).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(total, forKey: .total)
        try c.encode(pass, forKey: .pass)
        try c.encode(fail, forKey: .fail)
        try c.encode(disagree, forKey: .disagree)
        try c.encode(skipped, forKey: .skipped)
        try c.encode(unsupported, forKey: .unsupported)
        try c.encode(error, forKey: .error)
        try c.encode(wrongReason, forKey: .wrongReason)
        if policy > 0 { try c.encode(policy, forKey: .policy) }
        if stricter > 0 { try c.encode(stricter, forKey: .stricter) }
        if baselined > 0 { try c.encode(baselined, forKey: .baselined) }
    }

    public var deviations: Int { fail + disagree + error }
    public var deviates: Bool { deviations > 0 }
    /// `140 cells: 136 pass, 2 fail, 0 disagree, 2 skipped, 0 unsupported, 0 error`.
    public var line: String {
        "\(total) cells: \(pass) pass, \(fail) fail, \(disagree) disagree, \(skipped) skipped, \(unsupported) unsupported, \(error) error"
            + (policy > 0 ? ", \(policy) policy" : "") + (stricter > 0 ? ", \(stricter) stricter than required" : "")
            + (baselined > 0 ? " (\(baselined) deviating as in the baseline)" : "")
            + (wrongReason > 0 ? " (\(wrongReason) refused for another reason)" : "")
    }
}

/// How one cell is judged beyond its expectation: the platform the run names, whether a platform's TLS policy decides
/// the cell (and why), and whether correct verifiers legitimately differ there (and why). `Scenario.rule(_:platform:)`
/// makes it from the scenario's `policy` and `varies`.
public struct CellRule: Sendable, Hashable {
    /// The platform the run names; `nil`: none (the scenario's `expect`, as before platforms existed).
    public var platform: PlatformPolicy?
    /// Set when a platform's TLS policy, not the pinning logic, decides the cell: the scenario's policy reason.
    public var policyReason: String?
    /// The listed platforms whose correct clients do the opposite of this cell's expectation.
    public var otherPlatforms: [PlatformPolicy]
    /// Set when correct verifiers legitimately differ here: a refusal is "stricter than required", with this reason.
    public var variance: String?
    /// Set when the outcome depends on a check (revocation, CT) the client does not declare: the cell is neither
    /// pass nor fail but `policy`, undecided, with this reason.
    public var undecided: String? = nil
    /// Set when the expectation is the one for the client's declared checks: said in the reason.
    public var checks: String? = nil
    /// The variance is which path verifiers validate: a refusal on a pin mismatch is excused too (the pins were
    /// checked against the path this client's verifier built).
    public var varianceIsPathBuilding: Bool

    public init(
        platform: PlatformPolicy? = nil, policyReason: String? = nil, otherPlatforms: [PlatformPolicy] = [],
        variance: String? = nil, varianceIsPathBuilding: Bool = false
    ) {
        self.platform = platform
        self.policyReason = policyReason
        self.otherPlatforms = otherPlatforms
        self.variance = variance
        self.varianceIsPathBuilding = varianceIsPathBuilding
    }

    /// No platform, no policy, no variance: the cell is judged by its expectation alone.
    public static let plain = CellRule()
}
