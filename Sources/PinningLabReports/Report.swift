public import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
public import PinningLabPKI

/// The output formats of `pinlab check`.
public enum ReportFormat: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    case text, json, junit, markdown, html
    public var description: String { rawValue }
    /// The usual file extension.
    public var fileExtension: String {
        switch self {
        case .text: return "txt"
        case .json: return "json"
        case .junit: return "xml"
        case .markdown: return "md"
        case .html: return "html"
        }
    }
}

/// One certificate of a scenario's chain as reports draw it: who it is, which key it holds, and which pins of
/// the client built for the scenario match it.
public struct ChainLink: Sendable, Hashable, Codable {
    public var name: String
    public var role: String
    public var subject: String
    public var issuer: String
    public var keyName: String
    public var keyType: String
    public var spkiSHA256: String
    public var certificateSHA256: String
    /// Whether the certificate was sent by the server (false: it is in the client's trust store only).
    public var onTheWire: Bool
    /// The pin profiles one of whose pins matches this certificate (its key, or its bytes for `leaf-cert`).
    public var matchedBy: [PinProfile]
    public init(
        name: String, role: String, subject: String, issuer: String, keyName: String, keyType: String,
        spkiSHA256: String, certificateSHA256: String, onTheWire: Bool, matchedBy: [PinProfile]
    ) {
        self.name = name
        self.role = role
        self.subject = subject
        self.issuer = issuer
        self.keyName = keyName
        self.keyType = keyType
        self.spkiSHA256 = spkiSHA256
        self.certificateSHA256 = certificateSHA256
        self.onTheWire = onTheWire
        self.matchedBy = matchedBy
    }
}

/// What reports show about one scenario besides its cells.
public struct ScenarioSheet: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var teaching: String
    public var trust: String
    public var pinned: String
    public var clientAuth: String
    public var presents: String?
    public var expected: [String: Expectation]
    /// The certificates on the wire in order, then the trust-store roots that are not on the wire.
    public var chain: [ChainLink]
    /// The pins of each profile, base64.
    public var pins: [String: [String]]
    /// Why a platform's TLS policy decides some cells, and what each listed platform expects
    /// (`ats: X X X X X X; openssl-default: A A A A A A — <reason>`); absent when no platform does.
    public var policy: String?
    /// Per profile, why correct verifiers legitimately differ there; absent when they do not.
    public var varies: [String: String]?
    /// The OWASP MASTG tests the scenario's cells are evidence for, and their MASWE weaknesses (`MASTG.ids`).
    public var mastg: [String]?

    public init(scenario s: Scenario, pki: LabPKI?) {
        id = s.id
        title = s.title
        teaching = s.teaching
        trust = s.client.trust.rawValue
        if !s.mastg.isEmpty { mastg = MASTG.ids(forTests: s.mastg) }
        pinned = s.client.pinned
        clientAuth = s.server.clientAuth.rawValue
        presents = s.client.present
        var e: [String: Expectation] = [:]
        for p in PinProfile.all { e[p.rawValue] = s.expected(p) }
        expected = e
        if let p = s.policy {
            let rows = p.expectations.sorted { $0.key < $1.key }.map { platform, row in
                "\(platform): "
                    + PinProfile.all.map { (row[$0] ?? s.expected($0)) == .accept ? "A" : "X" }.joined(separator: " ")
            }
            policy = rows.joined(separator: "; ") + " — " + p.reason
        }
        if !s.variance.isEmpty {
            varies = Dictionary(uniqueKeysWithValues: s.variance.map { ($0.key.rawValue, $0.value) })
        }
        chain = []
        pins = [:]
        guard let pki else { return }
        var entriesByProfile: [PinProfile: [PinEntry]] = [:]
        for p in PinProfile.all {
            let entries = (try? s.pinEntries(for: p, in: pki)) ?? []
            entriesByProfile[p] = entries
            pins[p.rawValue] = entries.map(\.base64)
        }
        func link(_ id: Identity, onTheWire: Bool) -> ChainLink {
            let matched = PinProfile.all.filter { p in
                (entriesByProfile[p] ?? []).contains { e in
                    e.kind == .certificateSHA256
                        ? e.sha256 == id.pins.certificateSHA256 : e.sha256 == id.pins.spkiSHA256
                }
            }
            return ChainLink(
                name: id.name, role: id.role.rawValue, subject: id.subject, issuer: id.issuer,
                keyName: id.keyName, keyType: id.keyType.displayName, spkiSHA256: id.pins.spkiBase64,
                certificateSHA256: id.pins.certificateBase64, onTheWire: onTheWire, matchedBy: matched)
        }
        for name in s.server.chain { if let id = pki[name] { chain.append(link(id, onTheWire: true)) } }
        for root in s.client.trust.roots where !s.server.chain.contains(root) {
            if let id = pki[root] { chain.append(link(id, onTheWire: false)) }
        }
    }
}

/// The result of running one client through a catalogue: every cell's verdict, plus what reports need to draw.
public struct CheckReport: Sendable, Codable {
    public var tool: String = "pinlab"
    public var formatVersion: Int = 1
    /// The client under test (`correct`, `curl`, or the command template).
    public var client: String
    public var engines: [String]
    public var profiles: [PinProfile]
    public var startedAt: Date
    public var durationSeconds: Double
    public var summary: VerdictSummary
    public var verdicts: [Verdict]
    public var scenarios: [ScenarioSheet]
    /// The platform TLS policy the cells were judged by (`--platform`); absent: the catalogue's `expect`.
    public var platform: PlatformPolicy?
    /// What the client declared it checks (`--client-checks`, ``PinningClient/checks``); absent: nothing.
    public var clientChecks: ClientChecks?
    /// The comparison with a baseline (`--baseline`), when the run had one.
    public var baseline: BaselineComparison?
    /// The part of the run this report holds (`--shard K/N`, written `"K/N"`); absent for a whole run.
    /// `pinlab report merge` refuses shards of one run unless all N are given.
    public var shard: CellShard?
    /// How the run's shards were cut: `estimated` (each cell's cost from its connections) or `weights fnv1a64:…`
    /// (the cell costs of an earlier run, `--shard-weights`, named by a hash of them). Every piece of one run must
    /// have the same cut, or cells are missed or judged twice; `pinlab report merge` refuses a mix.
    public var shardCut: String?

    public init(
        client: String, engines: [String], profiles: [PinProfile] = PinProfile.all, startedAt: Date = Date(),
        durationSeconds: Double = 0, verdicts: [Verdict], scenarios: [ScenarioSheet]
    ) {
        self.client = client
        self.engines = engines
        self.profiles = profiles
        self.startedAt = startedAt
        self.durationSeconds = durationSeconds
        self.verdicts = Self.withMASTG(verdicts, scenarios)
        self.scenarios = scenarios
        self.summary = VerdictSummary(verdicts)
    }

    /// Each run cell (not skipped, unsupported or errored) gets its scenario's MASTG and MASWE ids.
    static func withMASTG(_ verdicts: [Verdict], _ scenarios: [ScenarioSheet]) -> [Verdict] {
        let ids = Dictionary(scenarios.compactMap { s in s.mastg.map { (s.id, $0) } }, uniquingKeysWith: { a, _ in a })
        guard !ids.isEmpty else { return verdicts }
        let notRun: Set<Verdict.Status> = [.skipped, .unsupported, .error]
        return verdicts.map { v in
            var v = v
            if v.mastg == nil, !notRun.contains(v.status), let m = ids[v.scenario] { v.mastg = m }
            return v
        }
    }

    /// The failing cells that show a MASTG test's flaw — the client accepted what the scenario says a correct client
    /// refuses — grouped by test id in list order.
    public var mastgFailures: [(test: String, cells: [Verdict])] {
        let failing = verdicts.filter { $0.status == .fail && $0.observed == .accepted && $0.expected == .refuse }
        return MASTG.entries.map(\.id).filter { $0.hasPrefix("MASTG-TEST-") }.compactMap { id in
            let cells = failing.filter { $0.mastg?.contains(id) == true }
            return cells.isEmpty ? nil : (id, cells)
        }
    }

    /// The command that runs one cell again: `pinlab check --scenarios ID --profiles P --engine E --client NAME`, or
    /// `… -- TEMPLATE` for a command template.
    public func reproduceCommand(_ v: Verdict) -> String {
        let client =
            self.client.contains(" ") || self.client.contains("{") ? "-- " + self.client : "--client " + self.client
        return "pinlab check --scenarios \(v.scenario) --profiles \(v.profile.rawValue) --engine \(v.engine) \(client)"
    }

    /// Whether any cell deviates (fail, disagree or error): `pinlab check` exits non-zero.
    public var deviates: Bool { summary.deviates }

    public func verdict(_ scenario: String, _ profile: PinProfile, _ engine: String) -> Verdict? {
        verdicts.first { $0.scenario == scenario && $0.profile == profile && $0.engine == engine }
    }

    public var deviations: [Verdict] { verdicts.filter { $0.status.isDeviation } }

    /// Renders the report. `color` applies to the text format only.
    public func render(_ format: ReportFormat, color: Bool = false) throws -> String {
        switch format {
        case .text: return TextReport.render(self, color: color)
        case .json: return try jsonString()
        case .junit: return JUnitReport.render(self)
        case .markdown: return MarkdownReport.render(self)
        case .html: return HTMLReport.render(self)
        }
    }

    /// The terminal matrix, listing at most `maxDeviations` deviations (all when `nil`).
    public func renderText(color: Bool = false, maxDeviations: Int? = nil) -> String {
        TextReport.render(self, color: color, maxDeviations: maxDeviations)
    }

    public func jsonString() throws -> String {
        try JSONOutput.string(self) + "\n"
    }

    /// One line: `correct — openssl, gnutls — 420 cells: 420 pass, … — 1.23 s`.
    public var summaryLine: String {
        let verdictWord =
            baseline.map {
                $0.changed ? "CHANGED against its baseline" : (deviates ? "deviates as in its baseline" : "conforms")
            }
            ?? (deviates ? "DEVIATES" : "conforms")
        return
            "\(client): \(verdictWord) — \(summary.line) — \(engines.joined(separator: ", ")) — \(String(format: "%.2f", durationSeconds)) s"
    }
}
