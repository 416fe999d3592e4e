public import Foundation
import PinningLabBase
import PinningLabPKI
public import PinningLabReports

/// The verdict for one host the client talked to through the proxy.
public struct HostVerdict: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Declared pinned, intercepted, and no request was sent: the pinning held.
        case refused
        /// Declared pinned, intercepted, and the request was sent anyway.
        case notPinned = "not-pinned"
        /// Not declared pinned, intercepted, and the request was sent: as declared.
        case allowed
        /// Not declared pinned, intercepted, and no request was sent: the client pins more than declared, or it
        /// does not trust the proxy root (is it installed?).
        case unexpectedRefusal = "unexpected-refusal"
        /// Tunnelled to the upstream without interception: nothing to judge.
        case passedThrough = "passed-through"

        /// Whether this host deviates from the declaration (`pinlab intercept` then exits non-zero).
        public var isDeviation: Bool { self == .notPinned || self == .unexpectedRefusal }

        public var message: String {
            switch self {
            case .refused: return "refused interception: good"
            case .notPinned: return "sent its request to an intercepting proxy: NOT PINNED"
            case .allowed: return "not pinned, allowed through (as declared)"
            case .unexpectedRefusal:
                return
                    "refused interception although not declared pinned (pins more than declared, or the proxy root is not trusted)"
            case .passedThrough: return "passed through to the upstream, not intercepted: no verdict"
            }
        }
    }

    public var host: String
    /// Whether a `--pinned` pattern covers the host, and which one.
    public var declaredPinned: Bool
    public var pinnedBy: String?
    public var policy: InterceptPolicy
    public var connections: Int
    public var handshakesCompleted: Int
    /// Connections on which the client sent application data (its request) through the intercepted session.
    public var requestsSent: Int
    public var status: Status
    public var message: String
    /// The client's alerts, e.g. `bad_certificate`, and how connections ended.
    public var alerts: [String]
    public var closures: [String]
    public var requestLines: [String]
    /// How the client refused the intercepted connections it did not send a request on, e.g. `sent the alert
    /// bad_certificate`, `completed the handshake and sent nothing`, `closed during the handshake without an alert`.
    public var refusals: [String]
    /// Connections passed through to the upstream after the host refused (`--learn`).
    public var passedThroughAfterRefusal: Int

    /// Judges one host from its connections.
    public init(host: String, pinned: [HostPattern], observations: [InterceptObservation]) {
        var tally = HostTally()
        for o in observations { tally.add(o) }
        self.init(host: host, pinned: pinned, tally: tally)
    }

    /// Judges one host from what the session kept of its connections.
    public init(host: String, pinned: [HostPattern], tally: HostTally) {
        self.host = host
        let pattern = pinned.first { $0.matches(host) }
        declaredPinned = pattern != nil
        pinnedBy = pattern?.text
        policy = tally.policy ?? .mint
        connections = tally.connections
        handshakesCompleted = tally.handshakesCompleted
        requestsSent = tally.requestsSent
        alerts = tally.alerts.sorted()
        closures = tally.closures.sorted()
        requestLines = tally.requestLines.sorted()
        refusals = tally.refusals.sorted()
        passedThroughAfterRefusal = tally.passedThroughAfterRefusal
        if !tally.intercepted {
            status = .passedThrough
        } else if requestsSent > 0 {
            status = declaredPinned ? .notPinned : .allowed
        } else {
            status = declaredPinned ? .refused : .unexpectedRefusal
        }
        message = status.message
    }
}

/// What a session keeps of one host's connections as they finish: exact counts however long the session runs,
/// and at most ``maxDistinct`` distinct alerts, closures and request lines (a client cannot grow it without bound).
public struct HostTally: Sendable, Hashable {
    public static let maxDistinct = 64
    public var policy: InterceptPolicy?
    public var connections = 0
    public var handshakesCompleted = 0
    public var requestsSent = 0
    public var intercepted = false
    public var alerts: Set<String> = []
    public var closures: Set<String> = []
    public var requestLines: Set<String> = []
    public var refusals: Set<String> = []
    public var passedThroughAfterRefusal = 0

    public init() {}

    public mutating func add(_ o: InterceptObservation) {
        if policy == nil { policy = o.policy }
        connections += 1
        if o.handshakeCompleted { handshakesCompleted += 1 }
        if o.applicationDataReceived { requestsSent += 1 }
        if o.policy == .passthrough && intercepted { passedThroughAfterRefusal += 1 }
        if o.policy?.intercepts ?? false { intercepted = true }
        func keep(_ value: String?, in set: inout Set<String>) {
            if let value, set.count < Self.maxDistinct { set.insert(value) }
        }
        keep(o.alertReceived, in: &alerts)
        keep(o.closure, in: &closures)
        keep(o.applicationDataReceived ? o.requestLine : nil, in: &requestLines)
        keep(o.refusalDescription, in: &refusals)
    }
}

/// Everything a session has judged so far, kept as connections finish (``InterceptProxy`` holds one): a tally per
/// host in first-seen order, counts of connections that named no host, and the most recent connections themselves.
public struct SessionTally: Sendable {
    /// Hosts tracked one by one; connections to further hosts are only counted (``hostsNotTracked``).
    public static let maxHosts = 4096
    public private(set) var hosts: [String] = []
    public private(set) var byHost: [String: HostTally] = [:]
    public private(set) var hostsNotTracked = 0
    public private(set) var otherConnections = 0
    public private(set) var destinationsRefused = 0
    /// The latest connections, oldest first (at most `keepConnections`), and how many older ones were let go.
    public private(set) var recent: [InterceptObservation] = []
    public private(set) var connectionsDropped = 0
    public let keepConnections: Int

    public init(keepConnections: Int = 10_000) { self.keepConnections = max(1, keepConnections) }

    public init(_ observations: [InterceptObservation]) {
        self.init(keepConnections: max(1, observations.count))
        for o in observations { add(o) }
    }

    public mutating func add(_ o: InterceptObservation) {
        if let h = o.host {
            if byHost[h] != nil {
                byHost[h]!.add(o)
            } else if hosts.count < Self.maxHosts {
                hosts.append(h)
                var t = HostTally()
                t.add(o)
                byHost[h] = t
            } else {
                hostsNotTracked += 1
            }
        } else if o.closure == InterceptReport.destinationRefused {
            destinationsRefused += 1
        } else {
            otherConnections += 1
        }
        recent.append(o)
        // Trim in batches, so that a long session does not shift the array on every connection.
        if recent.count > keepConnections + max(keepConnections / 4, 16) {
            let extra = recent.count - keepConnections
            recent.removeFirst(extra)
            connectionsDropped += extra
        }
    }

    /// The latest connections, at most `keepConnections` of them.
    public var latest: [InterceptObservation] { Array(recent.suffix(keepConnections)) }
    /// Connections let go from the list (all still counted in the hosts' tallies).
    public var dropped: Int { connectionsDropped + max(0, recent.count - keepConnections) }
}

/// Counts of host verdicts.
public struct InterceptSummary: Sendable, Hashable, Codable {
    public var hosts: Int
    public var refused: Int
    public var notPinned: Int
    public var allowed: Int
    public var unexpectedRefusal: Int
    public var passedThrough: Int
    /// Connections that never named a host (no CONNECT, bad request).
    public var otherConnections: Int
    /// Connections whose destination the proxy refused to dial (loopback, private range, …: see their `error`).
    public var destinationsRefused: Int
    /// Connections closed unserved: their peer is not in `--allow-peer`.
    public var peersRefused: Int

    init(_ hosts: [HostVerdict], other: Int, destinationsRefused: Int = 0, peersRefused: Int = 0) {
        self.hosts = hosts.count
        refused = hosts.filter { $0.status == .refused }.count
        notPinned = hosts.filter { $0.status == .notPinned }.count
        allowed = hosts.filter { $0.status == .allowed }.count
        unexpectedRefusal = hosts.filter { $0.status == .unexpectedRefusal }.count
        passedThrough = hosts.filter { $0.status == .passedThrough }.count
        otherConnections = other
        self.destinationsRefused = destinationsRefused
        self.peersRefused = peersRefused
    }

    public var line: String {
        "\(hosts) hosts: \(refused) refused (good), \(notPinned) NOT PINNED, \(allowed) allowed (as declared), \(unexpectedRefusal) unexpected refusals, \(passedThrough) passed through"
    }
}

/// The result of an interception session: a verdict per host, and every connection as seen.
public struct InterceptReport: Sendable, Codable {
    public var tool: String = "pinlab"
    public var kind: String = "intercept"
    public var formatVersion: Int = 1
    /// `127.0.0.1:PORT`.
    public var proxy: String
    public var engine: String
    public var pinned: [String]
    public var policies: PolicyTable
    public var startedAt: Date
    public var durationSeconds: Double
    public var summary: InterceptSummary
    public var deviates: Bool
    public var hosts: [HostVerdict]
    /// The session's latest connections (a long session keeps the last 10,000; ``connectionsDropped`` says how many
    /// older ones are counted in `hosts` but not listed).
    public var connections: [InterceptObservation]
    public var connectionsDropped: Int = 0
    /// Addresses of peers closed unserved (not in `--allow-peer`), the first hundred.
    public var refusedPeers: [String]

    public init(
        proxy: String, engine: String, pinned: [HostPattern], policies: PolicyTable, startedAt: Date,
        durationSeconds: Double, observations: [InterceptObservation], peersRefused: Int = 0,
        refusedPeers: [String] = []
    ) {
        self.init(
            proxy: proxy, engine: engine, pinned: pinned, policies: policies, startedAt: startedAt,
            durationSeconds: durationSeconds, tally: SessionTally(observations), peersRefused: peersRefused,
            refusedPeers: refusedPeers)
    }

    public init(
        proxy: String, engine: String, pinned: [HostPattern], policies: PolicyTable, startedAt: Date,
        durationSeconds: Double, tally: SessionTally, peersRefused: Int = 0, refusedPeers: [String] = []
    ) {
        self.proxy = proxy
        self.engine = engine
        self.pinned = pinned.map(\.text)
        self.policies = policies
        self.startedAt = startedAt
        self.durationSeconds = durationSeconds
        hosts = tally.hosts.map { HostVerdict(host: $0, pinned: pinned, tally: tally.byHost[$0]!) }
        summary = InterceptSummary(
            hosts, other: tally.otherConnections + tally.hostsNotTracked,
            destinationsRefused: tally.destinationsRefused, peersRefused: peersRefused)
        deviates = hosts.contains { $0.status.isDeviation }
        connections = tally.latest
        connectionsDropped = tally.dropped
        self.refusedPeers = refusedPeers
    }

    /// The closure of a connection whose destination was refused.
    static let destinationRefused = "destination-refused"
    /// The closure of a connection whose ClientHello named a server name that is not a host name (RFC 6066): the
    /// proxy answered with a fatal alert and made no certificate; the name is the connection's `serverName`.
    static let serverNameRefused = "server-name-refused"

    /// The listed connections refused for their server name (``serverNameRefused``).
    public var serverNamesRefused: [InterceptObservation] {
        connections.filter { $0.closure == Self.serverNameRefused }
    }

    /// Up to five of the refused server names, distinct, as sent (each output escapes them its own way).
    var serverNameExamples: [String] {
        var seen: Set<String> = []
        return serverNamesRefused.compactMap(\.serverName).filter { seen.insert($0).inserted }.prefix(5)
            .map { $0.count > 80 ? String($0.prefix(80)) + "…" : $0 }
    }

    public func verdict(for host: String) -> HostVerdict? { hosts.first { $0.host == host } }

    /// One line: `NOT PINNED — 3 hosts: …`.
    public var summaryLine: String {
        (deviates ? "DEVIATES from the declared pins" : "as declared") + " — " + summary.line
    }

    /// Renders the report in one of `pinlab check`'s formats.
    public func render(_ format: ReportFormat, color: Bool = false) throws -> String {
        switch format {
        case .text: return renderText(color: color)
        case .json: return try JSONOutput.string(self) + "\n"
        case .junit: return renderJUnit()
        case .markdown: return renderMarkdown()
        case .html: return renderHTML()
        }
    }

    func mark(_ s: HostVerdict.Status) -> String {
        switch s {
        case .refused, .allowed: return "ok  "
        case .notPinned, .unexpectedRefusal: return "FAIL"
        case .passedThrough: return "--  "
        }
    }

    /// The text report. What came from the wire (host names, server names, authorities, peers) is shown through
    /// `TextEscaping.terminal` (PinningLab): no control character reaches the terminal.
    public func renderText(color: Bool = false) -> String {
        let t = TextEscaping.terminal
        func paint(_ s: String, _ status: HostVerdict.Status) -> String {
            guard color else { return s }
            let code = status.isDeviation ? "31;1" : status == .passedThrough ? "2" : "32"
            return "\u{1B}[\(code)m\(s)\u{1B}[0m"
        }
        var out =
            "pinlab intercept on \(t(proxy)) (\(t(engine))) — pinned: \(pinned.isEmpty ? "(none declared)" : t(pinned.joined(separator: ", ")))\n"
        let shownHosts = hosts.map { t($0.host) }
        let width = max(4, shownHosts.map(\.count).max() ?? 4)
        for (h, shownHost) in zip(hosts, shownHosts) {
            let scope = h.pinnedBy.map { "pinned by \(t($0))" } ?? "not pinned"
            let detail =
                "\(h.policy), \(h.connections) conn, \(h.requestsSent) sent"
                + (h.refusals.isEmpty ? "" : ", \(t(h.refusals.joined(separator: "; ")))")
                + (h.passedThroughAfterRefusal > 0
                    ? ", \(h.passedThroughAfterRefusal) passed through after (--learn)" : "")
            out +=
                paint("\(mark(h.status)) ", h.status) + shownHost.padding(toLength: width, withPad: " ", startingAt: 0)
                + "  \(scope + String(repeating: " ", count: max(0, 26 - scope.count))) \(paint(h.message, h.status))  [\(detail)]\n"
        }
        let badNames = serverNamesRefused.count
        if hosts.isEmpty && summary.destinationsRefused == 0 && badNames == 0 {
            out += "(no client connected through the proxy)\n"
        }
        if badNames > 0 {
            out +=
                "\(badNames) connection(s) named a server name that is not a host name (RFC 6066) and were refused, no "
                + "certificate made: \(serverNameExamples.map { "'\(t($0))'" }.joined(separator: ", "))\n"
        }
        let other = max(0, summary.otherConnections - badNames)
        if other > 0 { out += "\(other) connection(s) named no host (not CONNECT, or closed first)\n" }
        if summary.destinationsRefused > 0 {
            let examples = connections.filter { $0.closure == Self.destinationRefused }.compactMap(\.authority)
            out +=
                "\(summary.destinationsRefused) connection(s) asked for a destination on this machine or a local network and were refused (\(t(Array(Set(examples)).sorted().prefix(5).joined(separator: ", ")))): name a destination with --upstream PATTERN=HOST:PORT to allow it\n"
        }
        if summary.peersRefused > 0 {
            out +=
                "\(summary.peersRefused) connection(s) from peers outside --allow-peer were closed unserved (\(t(refusedPeers.prefix(5).joined(separator: ", "))))\n"
        }
        out += summaryLine + "\n"
        return out
    }

    public func renderJUnit() -> String {
        let cases = hosts.map { h in
            let detail =
                "\(h.message); pinned by: \(h.pinnedBy ?? "nothing"); connections: \(h.connections); requests sent: \(h.requestsSent); alerts: \(h.alerts.joined(separator: ", ")); closures: \(h.closures.joined(separator: ", "))"
            let outcome: JUnitDocument.TestCase.Outcome =
                h.status.isDeviation
                ? .failure(type: h.status.rawValue, message: h.message)
                : h.status == .passedThrough ? .skipped(message: h.message) : .passed
            return JUnitDocument.TestCase(
                classname: "intercept.\(h.policy.rawValue)", name: h.host, seconds: 0,
                outcome: outcome, detail: detail, systemOut: detail)
        }
        return JUnitDocument(
            name: "pinlab intercept", seconds: durationSeconds,
            suites: [
                JUnitDocument.Suite(
                    name: "intercept \(proxy)", seconds: durationSeconds, timestamp: startedAt, cases: cases)
            ]
        ).render()
    }

    /// The Markdown report; what came from the wire goes through `TextEscaping.markdown`/`markdownCode`.
    public func renderMarkdown() -> String {
        let md = TextEscaping.markdown
        let code = TextEscaping.markdownCode
        var m =
            "# pinlab intercept\n\n\(summaryLine)\n\n| host | declared | policy | connections | requests sent | how it refused | verdict |\n|---|---|---|---|---|---|---|\n"
        for h in hosts {
            m +=
                "| \(code(h.host)) | \(h.pinnedBy.map { "pinned (\(code($0)))" } ?? "not pinned") | \(h.policy) | \(h.connections) | \(h.requestsSent) | \(md(h.refusals.joined(separator: "; "))) | \(h.status.isDeviation ? "**\(h.message)**" : h.message) |\n"
        }
        if !serverNamesRefused.isEmpty {
            m +=
                "\n\(serverNamesRefused.count) connection(s) named a server name that is not a host name (RFC 6066) and were "
                + "refused, no certificate made: \(serverNameExamples.map(code).joined(separator: ", "))\n"
        }
        return m
    }

    public func renderHTML() -> String {
        var h = HTMLPage.head(
            title: "pinlab intercept: \(proxy)",
            style: """
                .summary{padding:10px 14px;border-radius:8px;margin:12px 0;font-weight:600} .none{background:#eef1f6;color:#475467}
                table{border-collapse:collapse;margin:8px 0} th,td{border:1px solid #d7dbe3;padding:4px 8px;text-align:left}
                th{background:#eef1f6}
                """)
        h += """
            <h1>pinlab intercept</h1>
            <p>Proxy <code>\(xml(proxy))</code> (\(xml(engine))), declared pinned: <code>\(xml(pinned.isEmpty ? "(none)" : pinned.joined(separator: ", ")))</code></p>
            <div class="summary \(deviates ? "bad" : "ok")">\(xml(summaryLine))</div>
            <table><tr><th>host</th><th>declared</th><th>policy</th><th>connections</th><th>handshakes</th><th>requests sent</th><th>how it refused</th><th>verdict</th></tr>

            """
        for v in hosts {
            let cls = v.status.isDeviation ? "bad" : v.status == .passedThrough ? "none" : "ok"
            h +=
                "<tr><td><code>\(xml(v.host))</code></td><td>\(xml(v.pinnedBy.map { "pinned by \($0)" } ?? "not pinned"))</td><td>\(v.policy)</td>"
            h +=
                "<td>\(v.connections)</td><td>\(v.handshakesCompleted)</td><td>\(v.requestsSent)</td><td>\(xml(v.refusals.joined(separator: "; ")))</td>"
            h += "<td class=\"\(cls)\">\(xml(v.message))</td></tr>\n"
        }
        h += "</table>\n"
        if !serverNamesRefused.isEmpty {
            h +=
                "<p>\(serverNamesRefused.count) connection(s) named a server name that is not a host name (RFC 6066) and were "
                + "refused, no certificate made: \(serverNameExamples.map { "<code>\(xml(TextEscaping.terminal($0)))</code>" }.joined(separator: ", "))</p>\n"
        }
        h += HTMLPage.foot
        return h
    }

    /// The JSON Schema (draft 2020-12) of the JSON report (`Resources/schemas/intercept-report.schema.json`).
    public static let jsonSchema = bundledSchema("intercept-report.schema.json")
}
