public import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabEngines
public import PinningLabModel
public import PinningLabPKI
import PinningLabReferenceClients

/// A pin set followed over time: the pins, and where they come from.
public struct TimelineLane: Sendable, Hashable, Codable {
    public var name: String
    public var description: String
    public var kind: PinSet.Kind
    /// Base64 SHA-256 hashes (of SPKIs, or of certificates for `cert-sha256`).
    public var pins: [String]

    public init(name: String, description: String, kind: PinSet.Kind = .spkiSHA256, pins: [String]) {
        self.name = name
        self.description = description
        self.kind = kind
        self.pins = pins
    }
}

/// What one pin set did at one renewal.
public struct LaneStep: Sendable, Hashable, Codable {
    public var renewal: Int
    public var day: Int
    public var accepted: Bool
    /// The client's reason when it refused (the server saw no request).
    public var detail: String?
}

/// One pin set's whole horizon.
public struct LaneResult: Sendable, Hashable, Codable {
    public var lane: TimelineLane
    public var steps: [LaneStep]
    /// The first renewal it refused, or nil when it held through the horizon.
    public var firstBreak: LaneStep? { steps.first { !$0.accepted } }

    public init(lane: TimelineLane, steps: [LaneStep]) {
        self.lane = lane
        self.steps = steps
    }

    enum CodingKeys: String, CodingKey { case lane, steps, firstBreak }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        lane = try c.decode(TimelineLane.self, forKey: .lane)
        steps = try c.decode([LaneStep].self, forKey: .steps)
    }

    /// The JSON carries `firstBreak` too (absent when the pin set holds), so a reader need not search the steps.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(lane, forKey: .lane)
        try c.encode(steps, forKey: .steps)
        try c.encodeIfPresent(firstBreak, forKey: .firstBreak)
    }
}

/// `pinlab timeline`'s result: the plan that was issued and what each pin set did with each chain.
public struct TimelineReport: Sendable, Codable {
    public var tool = "pinlab"
    public var kind = "timeline"
    public var formatVersion = 1
    public var policy: CAPolicy
    public var start: Date
    public var horizonDays: Int
    public var engine: String
    public var renewals: [Renewal]
    public var lanes: [LaneResult]
    /// Seconds spent issuing the chains and running the handshakes.
    public var issueSeconds: Double
    public var runSeconds: Double
    /// The client's trust store when `--trust-store` chose one (nil: lab-root, plus lab-root-2 from the rollover).
    public var trustStore: TimelineTrustStore?
}

/// Which roots the timeline's client trusts (`--trust-store`; issue 41's trust-store drift). Without one, lab-root,
/// plus lab-root-2 from the rollover on (a store that gets the new root with the switch).
public enum TimelineTrustStore: String, Sendable, Codable, CaseIterable {
    /// lab-root only (ISRG Root X1's place): a store that never gets the new root.
    case x1
    /// lab-root-2 only (YR's place), from day 0: a store that has dropped the old root.
    case yr
    /// Both roots, from day 0.
    case both

    /// The entity names trusted at a renewal whose root is `renewalRoot` (nil store: the default).
    static func roots(_ store: TimelineTrustStore?, renewalRoot: String) -> [String] {
        switch store {
        case nil: return renewalRoot == "lab-root-2" ? ["lab-root", "lab-root-2"] : ["lab-root"]
        case .x1: return ["lab-root"]
        case .yr: return ["lab-root-2"]
        case .both: return ["lab-root", "lab-root-2"]
        }
    }
}

/// Why a timeline cannot run, naming the option or file and the fix.
public struct TimelineError: Error, Sendable, CustomStringConvertible {
    public var option: String
    public var problem: String
    public var fix: String
    public init(_ option: String, _ problem: String, fix: String) {
        self.option = option
        self.problem = problem
        self.fix = fix
    }
    public var description: String { "\(option): \(problem). Fix: \(fix)." }
}

/// Issues the real chain of every renewal a ``CAPolicy`` makes over a horizon, serves each from a fixture server
/// and runs the reference `correct` client with each pin set against it: which pins survive is measured, not
/// modelled. The chains come from a PKI of their own (a scratch folder) that shares the lab's keys — `K1`, the
/// backup `K2`, `lab-root`, `lab-intermediate-a` and `-b` — so the pins of any export of the lab PKI apply.
public enum Timeline {
    /// The standard lanes: the catalogue's pin profiles, plus the pool and the next root where the policy has them.
    /// `dayZeroIssuer` is the intermediate of the certificate the app was built against (the plan's first).
    public static func standardLanes(
        _ pki: LabPKI, policy: CAPolicy, dayZeroIssuer: String = "lab-intermediate-a"
    ) throws -> [TimelineLane] {
        func spki(_ name: String) throws -> String { try pki.identity(name).pins.spkiBase64 }
        var lanes = [
            TimelineLane(
                name: "leaf-cert", description: "the day-0 certificate's hash", kind: .certificateSHA256,
                pins: [try pki.identity("leaf-0").pins.certificateBase64]),
            TimelineLane(name: "leaf-spki", description: "the server key K1", pins: [try spki("leaf-0")]),
            TimelineLane(
                name: "leaf-spki+backup", description: "K1 and the backup key K2",
                pins: [try spki("leaf-0"), try spki("backup-key-holder")]),
            TimelineLane(
                name: "intermediate-spki", description: "\(dayZeroIssuer), the day-0 issuer",
                pins: [try spki(dayZeroIssuer)]),
        ]
        if policy.poolSize > 1 {
            lanes.append(
                TimelineLane(
                    name: "intermediate-pool", description: "every intermediate of the first root's pool",
                    pins: try policy.poolNames(root: 1).map(spki)))
        }
        lanes.append(TimelineLane(name: "root-spki", description: "lab-root", pins: [try spki("lab-root")]))
        if policy.hasRollover {
            lanes.append(
                TimelineLane(
                    name: "root-spki+next-root", description: "lab-root and its successor lab-root-2",
                    pins: [try spki("lab-root"), try spki("lab-root-2")]))
        }
        return lanes
    }

    /// Runs the timeline. `labKeys` is the lab PKI whose keys the chains reuse (nil: fresh keys, so only the
    /// standard lanes mean anything); `extraLanes` are the user's pin sets.
    public static func run(
        policy: CAPolicy, horizonDays: Int, start: Date = Date(), labKeys: LabPKI?, extraLanes: [TimelineLane] = [],
        engine engineName: String = "openssl", trustStore: TimelineTrustStore? = nil
    ) async throws -> TimelineReport {
        if let p = policy.problem(horizonDays: horizonDays) { throw TimelineError(p.option, p.problem, fix: p.fix) }
        let policy = policy.resolved(start: start, horizonDays: horizonDays)
        if let trustStore, trustStore != .x1, !policy.hasRollover {
            throw TimelineError(
                "--trust-store",
                "'\(trustStore.rawValue)' trusts lab-root-2, which this policy never issues within the horizon",
                fix: "use a policy with a root rollover (--preset letsencrypt, --rollover-day) or --trust-store x1")
        }
        guard let engine = Engines.engine(named: engineName) else {
            throw TimelineError(
                "--engine", "'\(engineName)' is not an engine", fix: "use \(Engines.names.joined(separator: " or "))")
        }
        let renewals = policy.plan(horizonDays: horizonDays, start: start)
        let clock = ContinuousClock()
        let t0 = clock.now
        let folder = try ScratchFolders.make("pinlab-timeline")
        defer { ScratchFolders.remove(folder) }
        let pki = try TimelinePKI.issue(policy: policy, renewals: renewals, in: folder, labKeys: labKeys)
        let issued = clock.now
        let lanes = try standardLanes(pki, policy: policy, dayZeroIssuer: renewals[0].intermediate) + extraLanes

        // One server, rotated to each renewal's chain; every lane connects to each.
        let first = try configuration(renewals[0], pki)
        let server = try await FixtureServer.start(engine: engine, configuration: first, label: "timeline")
        var results = lanes.map { LaneResult(lane: $0, steps: []) }
        let client = ReferenceClient.correct
        var seen = 0
        do {
            for renewal in renewals {
                if renewal.index > 0 { try server.rotate(to: try configuration(renewal, pki)) }
                // By default the platform ships the new root with the rollover (a trust-store update): trusted from
                // that day; --trust-store fixes the store for the whole run.
                let roots = try TimelineTrustStore.roots(trustStore, renewalRoot: renewal.root).map {
                    try pki.identity($0).certificateDER
                }
                for (i, lane) in lanes.enumerated() {
                    let hashes = lane.pins.compactMap { Data(base64Encoded: $0).map { Array($0) } }
                    let target = ClientTarget(
                        port: server.port, trustRootsDER: roots, pins: PinSet(kind: lane.kind, hashes: hashes),
                        scenario: "timeline", profile: PinProfile(rawValue: lane.name))
                    let outcome = await client.run(target)
                    let observations = await server.settle() ?? []
                    let mine = observations.count > seen ? observations.last : nil
                    seen = observations.count
                    // The server is the oracle: accepted means the request reached it.
                    let accepted = mine?.applicationDataReceived ?? false
                    results[i].steps.append(
                        LaneStep(
                            renewal: renewal.index, day: renewal.day, accepted: accepted,
                            detail: accepted
                                ? nil : (outcome.detail.isEmpty ? outcome.category?.rawValue : outcome.detail)))
                }
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        let done = clock.now
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        return TimelineReport(
            policy: policy, start: start, horizonDays: horizonDays, engine: engineName, renewals: renewals,
            lanes: results,
            issueSeconds: seconds(issued - t0), runSeconds: seconds(done - issued), trustStore: trustStore)
    }

    static func configuration(_ r: Renewal, _ pki: LabPKI) throws -> ServerTLSConfiguration {
        let leaf = try pki.identity("leaf-\(r.index)")
        var chain = [leaf.certificateDER, try pki.identity(r.intermediate).certificateDER]
        if r.crossSigned { chain.append(try pki.identity("lab-root-2-cross").certificateDER) }
        return .makeServerConfiguration(
            chainDER: chain, privateKeyPKCS8DER: leaf.privateKeyPKCS8DER, name: "timeline-\(r.index)")
    }
}
