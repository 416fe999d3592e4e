public import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
public import PinningLabIntercept
import PinningLabPKI  // Locked

/// What the live view shows at one moment: the hosts (`pinlab intercept`) or scenario servers (`pinlab serve
/// --control`) with their verdicts, and the latest connections. `GET /live/events` answers it as JSON; the page at
/// `GET /live` draws it.
public struct LiveSnapshot: Encodable, Sendable {
    /// One host or server and its verdict so far.
    public struct Group: Encodable, Sendable {
        /// `api.pinning.test` or `baseline-openssl-1`.
        public var name: String
        /// What it stands for: `mint, declared pinned (api.pinning.test)` or `scenario baseline on openssl`.
        public var detail: String
        public var connections: Int
        public var handshakesCompleted: Int
        /// Connections on which the client sent application data (its request).
        public var requestsSent: Int
        /// `refused`, `not-pinned`, `allowed`, … (intercept) or `as-expected`, `deviates`, `accepted`, `refused`,
        /// `waiting` (control).
        public var verdict: String
        /// `good`, `bad` or `neutral`: how the page colours it.
        public var tone: String
        public var message: String
        /// How the client refused (`sent the alert bad_certificate`, …).
        public var refusals: [String]
    }

    /// One finished connection.
    public struct Connection: Encodable, Sendable {
        public var id: String
        /// The group it belongs to (a host or server name); nil when it named no host.
        public var group: String?
        public var startedAt: Date
        public var peer: String
        /// The intercept policy or the identity served.
        public var detail: String
        /// The chain presented, as names where they are known.
        public var chain: [String]
        public var handshakeCompleted: Bool
        public var applicationData: Bool
        public var requestLine: String?
        public var closure: String
        public var refusal: String?
        public var error: String?
        public var milliseconds: Double?
    }

    /// `pinlab intercept on 127.0.0.1:8080` or `pinlab serve --control on 127.0.0.1:PORT`.
    public var source: String
    /// Grows whenever a connection starts or ends (or a server starts or stops): what `?since=` compares.
    public var version: Int
    public var connectionsAccepted: Int
    public var connectionsOpen: Int
    public var groups: [Group]
    /// The latest connections, oldest first (at most ``LiveFeed/maxConnections``).
    public var connections: [Connection]
    /// Counts the tables do not show: connections without a host, refused destinations and peers, dropped rows.
    public var notes: [String]
}

/// Where a live view's data comes from: a cheap `version` asked often while a request waits for a change, and the
/// `snapshot` made when it changed.
public struct LiveFeed: Sendable {
    /// Connections a snapshot lists (the latest).
    public static let maxConnections = 200

    public var version: @Sendable () async -> Int
    public var snapshot: @Sendable () async -> LiveSnapshot

    public init(version: @escaping @Sendable () async -> Int, snapshot: @escaping @Sendable () async -> LiveSnapshot) {
        self.version = version
        self.snapshot = snapshot
    }

    /// The live view of an interception session: one group per host with its verdict against the declared pins.
    public static func intercept(_ proxy: InterceptProxy) -> LiveFeed {
        // Accepted plus finished: grows by one when a connection starts and by one when it ends.
        let version: @Sendable () -> Int = { 2 * proxy.connectionsAccepted - proxy.connectionsOpen }
        let feedVersion: @Sendable () async -> Int = { version() }
        return LiveFeed(version: feedVersion) {
            let v = version()
            let open = proxy.connectionsOpen
            let report = proxy.report()
            let groups = report.hosts.map { h -> LiveSnapshot.Group in
                let tone: String
                switch h.status {
                case .refused, .allowed: tone = "good"
                case .notPinned, .unexpectedRefusal: tone = "bad"
                case .passedThrough: tone = "neutral"
                }
                let declared = h.declaredPinned ? "declared pinned (\(h.pinnedBy ?? h.host))" : "not declared pinned"
                return LiveSnapshot.Group(
                    name: h.host, detail: "\(h.policy), \(declared)", connections: h.connections,
                    handshakesCompleted: h.handshakesCompleted, requestsSent: h.requestsSent,
                    verdict: h.status.rawValue,
                    tone: tone, message: h.message, refusals: h.refusals)
            }
            let connections = report.connections.suffix(maxConnections).map { o in
                LiveSnapshot.Connection(
                    id: String(o.id), group: o.host, startedAt: o.startedAt, peer: o.peer,
                    detail: o.policy?.rawValue ?? "-", chain: chainWords(o), handshakeCompleted: o.handshakeCompleted,
                    applicationData: o.applicationDataReceived,
                    requestLine: o.applicationDataReceived ? o.requestLine : nil,
                    closure: o.closure, refusal: o.refusalDescription, error: o.error, milliseconds: o.totalMilliseconds
                )
            }
            var notes: [String] = []
            let s = report.summary
            if s.otherConnections > 0 { notes.append("\(s.otherConnections) connections named no host") }
            if s.destinationsRefused > 0 {
                notes.append("\(s.destinationsRefused) destinations refused (loopback or private)")
            }
            if s.peersRefused > 0 { notes.append("\(s.peersRefused) peers refused (not in --allow-peer)") }
            if report.connectionsDropped > 0 {
                notes.append("\(report.connectionsDropped) older connections let go (still counted)")
            }
            let pinned = report.pinned.isEmpty ? "none" : report.pinned.joined(separator: ", ")
            return LiveSnapshot(
                source: "pinlab intercept on \(report.proxy) (\(report.engine)); pinned: \(pinned)", version: v,
                connectionsAccepted: proxy.connectionsAccepted, connectionsOpen: open, groups: groups,
                connections: Array(connections), notes: notes)
        }
    }

    /// What the proxy presented under the connection's policy, in words.
    static func chainWords(_ o: InterceptObservation) -> [String] {
        let host = o.host ?? "the host"
        switch o.policy {
        case .mint?: return ["leaf for \(host) minted by the proxy root", "proxy root"]
        case .stuff?:
            return ["leaf for \(host) minted by the proxy root", "+ genuine chain (\(o.genuineChain ?? "lab"))"]
        case .collision?: return ["leaf for \(host)", "twin-intermediate-a (lab-intermediate-a's name)"]
        case .foreignHost?: return ["leaf for another host", "lab-intermediate-a (genuine)"]
        case .passthrough?: return ["the upstream's own (\(o.upstream ?? "not dialled"))"]
        case nil: return []
        }
    }
}

/// The live view's routes, for the control API and for the separate server of `pinlab intercept --live`: the page,
/// its script and style (no data, open like `GET /health`), and `GET /live/events` (the data, behind the token).
final class LiveRoutes: Sendable {
    let feed: LiveFeed
    private let stopping = Locked(false)
    /// `GET /live/events` requests begun (tests wait for a page's long poll with it).
    let eventRequests = Locked(0)
    /// The longest `wait=` of `GET /live/events`.
    static let maxWaitSeconds = 10

    init(feed: LiveFeed) { self.feed = feed }

    /// Ends the waits under way (they answer at once) before the HTTP server stops.
    func stop() { stopping.withLock { $0 = true } }

    /// Headers of every live answer: no framing, no foreign script, style or connection, no caching, no sniffing.
    static let pageHeaders = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    ]

    static func asset(_ text: String, _ type: String) -> ControlReply {
        var r = ControlReply.text(text, contentType: type)
        r.headers = pageHeaders
        return r
    }

    var routes: [ControlAPI.Route] {
        [
            ControlAPI.Route(method: "GET", path: "/live", open: true) { _ in
                Self.asset(LivePage.html, "text/html; charset=utf-8")
            },
            ControlAPI.Route(method: "GET", path: "/live/app.js", open: true) { _ in
                Self.asset(LivePage.script, "text/javascript; charset=utf-8")
            },
            ControlAPI.Route(method: "GET", path: "/live/app.css", open: true) { _ in
                Self.asset(LivePage.style, "text/css; charset=utf-8")
            },
            ControlAPI.Route(method: "GET", path: "/live/events") { [self] r throws(ControlError) in try await events(r)
            },
        ]
    }

    /// `GET /live/events?since=V&wait=S`: the snapshot once the feed's version differs from `since` (at once without
    /// `since`), or after `wait` seconds without a change.
    func events(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        eventRequests.withLock { $0 += 1 }
        let since = try r.integer("since", in: -1...Int(Int32.max), default: -1)
        let wait = try r.integer("wait", in: 0...Self.maxWaitSeconds, default: 0)
        if since >= 0 && wait > 0 {
            let end = ContinuousClock.now.advanced(by: .seconds(wait))
            while ContinuousClock.now < end, !stopping.withLock({ $0 }), await feed.version() == since {
                try? await Task.sleep(for: .milliseconds(25))
            }
        }
        var reply = ControlReply.json(await feed.snapshot())
        reply.headers = Self.pageHeaders
        return reply
    }
}

/// A live view on a loopback port of its own, for processes without an HTTP surface (`pinlab intercept --live`): the
/// control API's HTTP server and its gate — loopback peers only, `Host` naming the bound address (DNS rebinding),
/// no foreign `Origin`, the bearer token on the data — serving the live routes and `GET /health` only.
///
/// The page is opened as ``pageURL``: the token travels in the URL's fragment, which the browser never sends to a
/// server nor puts in a `Referer`; the page's script reads it and sends it as `Authorization: Bearer` to
/// `GET /live/events`.
public final class LiveViewServer: Sendable {
    public let host: String
    public let port: Int
    /// Required by `GET /live/events`: 32 random bytes, new at every start; nil when started without a token.
    public let token: String?
    private let http: SmallHTTPServer
    private let live: LiveRoutes

    /// `http://127.0.0.1:PORT/`.
    public var url: String { "http://\(ControlServer.urlHost(host)):\(port)/" }
    /// `http://127.0.0.1:PORT/live#token=TOKEN`: what the person opens.
    public var pageURL: String { url + "live" + (token.map { "#token=" + $0 } ?? "") }

    private init(host: String, port: Int, token: String?, http: SmallHTTPServer, live: LiveRoutes) {
        self.host = host
        self.port = port
        self.token = token
        self.http = http
        self.live = live
    }

    /// Starts serving `feed` on `address` (`127.0.0.1:0`, `[::1]:8081`, `localhost:0`). Loopback only: the page
    /// shows which hosts a device talks to.
    public static func start(address: String, feed: LiveFeed, requireToken: Bool = true) throws(ControlServerError)
        -> LiveViewServer
    {
        var o = ControlServer.Options()
        try o.setAddress(address)
        let host = o.host == "localhost" ? "127.0.0.1" : o.host
        guard Sockets.isLoopback(host) else {
            throw ControlServerError(
                "refusing to serve the live view on \(host): it lists the hosts a device talks to, so it listens on loopback (127.0.0.1 or ::1) only"
            )
        }
        let live = LiveRoutes(feed: feed)
        let health = ControlAPI.Route(method: "GET", path: "/health", open: true) { _ in .json(["status": "ok"]) }
        let token = requireToken ? ControlServer.makeToken() : nil
        let gate = Gate(
            boundHost: host, allowRemotePeers: false, allowedOrigins: [], token: token.map { Array($0.utf8) },
            routes: [health] + live.routes,
            tokenFix:
                "open the live view at the address pinlab printed (…/live#token=TOKEN): its page sends the token as Authorization: Bearer."
        )
        let http: SmallHTTPServer
        do {
            http = try SmallHTTPServer(
                host: host, port: o.port,
                limits: .init(
                    maxBodyBytes: ControlServer.maxBodyBytes, bodyFix: "send a small JSON object.",
                    stopGrace: .seconds(1), threadName: "pinlab.live"),
                handler: { request in gate.respond(to: request) },
                refusal: { r in
                    ControlServer.reply(.error(ControlError(r.status, field: r.field, r.reason, fix: r.fix)))
                })
        } catch {
            throw ControlServerError("the live view cannot listen on \(address): \(error.reason)")
        }
        gate.port = http.port
        do { try http.start() } catch {
            throw ControlServerError("the live view cannot accept connections: \(error.reason)")
        }
        return LiveViewServer(host: host, port: http.port, token: token, http: http, live: live)
    }

    /// `GET /live/events` requests begun so far.
    var eventRequestsServed: Int { live.eventRequests.withLock { $0 } }

    /// Ends the waiting requests, then stops the HTTP server.
    public func stop() async {
        live.stop()
        let http = self.http
        await onDedicatedThread(named: "pinlab.live.stop") { http.stop() }
    }
}

extension ControlAPI {
    /// The live view of the control API's scenario servers: one group per server (with the verdict of its batch
    /// cell, when a batch started it), and their latest connections with the chain each was served.
    static func liveFeed(
        registry: ServerRegistry, catalogue: Catalogue, index: IdentityIndex, source: @escaping @Sendable () -> String
    ) -> LiveFeed {
        @Sendable func version() async -> Int {
            let entries = await registry.all
            var v = entries.count
            for e in entries {
                for server in [e.server.running] + e.parties.values {
                    v += 2 * server.connectionsAccepted + server.observationCount
                }
            }
            // Stopping a server lowers the sum: count every start so the number still changes.
            let started = await registry.started
            return v + 1_000_000 * started
        }
        return LiveFeed(version: version) {
            let v = await version()
            let entries = await registry.all
            var groups: [LiveSnapshot.Group] = []
            var connections: [LiveSnapshot.Connection] = []
            var accepted = 0
            var open = 0
            // One group per server: the scenario's, and each party of a scenario of several connections.
            func add(_ server: FixtureServer, group: String, detail: String, judged cell: (Scenario, PinProfile)?) {
                let observations = server.observations()
                accepted += server.connectionsAccepted
                // not accepted − observations: those are capped at maxStoredObservations
                open += server.connectionsOpen
                let requests = observations.filter(\.applicationDataReceived).count
                var verdict = observations.isEmpty ? "waiting" : requests > 0 ? "accepted" : "refused"
                var tone = "neutral"
                var message =
                    observations.isEmpty
                    ? "no connection yet"
                    : requests > 0 ? "the client sent its request" : "the client refused (sent no request)"
                if let (s, profile) = cell, !observations.isEmpty {
                    let expected = s.expected(profile)
                    let ok = (expected == .accept) == (requests > 0)
                    verdict = ok ? "as-expected" : "deviates"
                    tone = ok ? "good" : "bad"
                    message = "expected \(expected), the client \(requests > 0 ? "accepted" : "refused")"
                }
                groups.append(
                    LiveSnapshot.Group(
                        name: group, detail: detail, connections: server.connectionsAccepted,
                        handshakesCompleted: observations.filter(\.handshakeCompleted).count, requestsSent: requests,
                        verdict: verdict, tone: tone, message: message,
                        refusals: Array(Set(observations.filter { !$0.applicationDataReceived }.map(Self.refusalWords)))
                            .sorted()))
                for o in observations.suffix(LiveFeed.maxConnections) {
                    connections.append(
                        LiveSnapshot.Connection(
                            id: "\(group)#\(o.id)", group: group, startedAt: o.startedAt, peer: o.peerAddress,
                            detail: o.identity ?? "-",
                            chain: (o.serverCertificates ?? []).map {
                                index.identity($0.der)?.name ?? ($0.subject ?? "certificate")
                            },
                            handshakeCompleted: o.handshakeCompleted, applicationData: o.applicationDataReceived,
                            requestLine: o.applicationDataReceived ? o.requestLine : nil, closure: o.closure.rawValue,
                            refusal: o.applicationDataReceived ? nil : refusalWords(o), error: o.error,
                            milliseconds: nil))
                }
            }
            for e in entries {
                let scenario = e.server.scenario
                // A batch cell of one connection is judged here; the steps of several connections are judged by the
                // batch's answers, not by a count of requests.
                var judged: (Scenario, PinProfile)?
                if let cell = e.cell, !scenario.isMultiStep, let s = catalogue[scenario.id] {
                    let parts = cell.split(separator: "/")
                    if parts.count == 3 { judged = (s, PinProfile(rawValue: String(parts[1]))) }
                }
                add(
                    e.server.running, group: e.id,
                    detail: "scenario \(scenario.id) on \(e.server.engine)" + (e.cell.map { ", cell \($0)" } ?? ""),
                    judged: judged)
                for (party, server) in e.parties.sorted(by: { $0.key < $1.key }) {
                    add(
                        server, group: "\(e.id)/\(party)",
                        detail: "party \(party) of scenario \(scenario.id) on \(e.server.engine)", judged: nil)
                }
            }
            connections.sort { $0.startedAt < $1.startedAt }
            return LiveSnapshot(
                source: source(), version: v, connectionsAccepted: accepted, connectionsOpen: open, groups: groups,
                connections: Array(connections.suffix(LiveFeed.maxConnections)), notes: [])
        }
    }

    /// How a client refused a fixture server's connection, in the words of the intercept report.
    static func refusalWords(_ o: Observation) -> String {
        if let a = o.alertReceived, !a.isCloseNotify { return "sent the alert \(a.name)" }
        if o.handshakeCompleted { return "completed the handshake and sent nothing" }
        return "closed during the handshake without an alert (\(o.closure.rawValue))"
    }
}
