public import Foundation
public import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The control API of `pinlab serve --control`: HTTP+JSON on loopback that lists scenarios, starts, stops and
/// rotates scenario servers, returns what they observed, and hands out trust anchors, pins and client identities.
/// The routes and their JSON are described by `openapi.yaml` (also served at `GET /openapi.yaml`).
///
/// What a web page in the developer's browser can send is refused, in this order: a peer off loopback (403), a
/// `Host` that does not name the bound address and port (403: DNS rebinding), an `Origin` not allowed (403: a
/// cross-site request), a body that is not `application/json` (415), and — on every route but `GET /health` — a
/// request without `Authorization: Bearer` ``token`` (401).
///
/// ```swift
/// let control = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled())
/// print(control.url)            // http://127.0.0.1:PORT/
/// print(control.token!)         // send as Authorization: Bearer TOKEN
/// await control.stop()          // stops the HTTP server and every scenario server it started
/// ```
public final class ControlServer: Sendable {
    public struct Options: Sendable {
        /// Where the control API listens: an IP address (`127.0.0.1`, `::1`, …) or `localhost`.
        public var host: String
        /// 0 picks an ephemeral port.
        public var port: Int
        /// Allow listening on a non-loopback address (otherwise `start` refuses).
        public var allowRemoteBind: Bool
        /// Answer peers that are not on loopback (otherwise they get 403).
        public var allowRemotePeers: Bool
        /// Scenario servers running at once; `POST /servers` beyond this gets 409.
        public var maxServers: Int
        /// How the scenario servers are started (their bind address, timeouts, an observation callback).
        public var serverOptions: FixtureServer.Options
        /// Web origins (`http://localhost:3000`) whose requests are answered (with CORS headers); a request with any
        /// other `Origin` gets 403.
        public var allowedOrigins: [String]
        /// Require `Authorization: Bearer` ``ControlServer/token`` on every route but `GET /health`. Turning it off
        /// is refused off loopback.
        public var requireToken: Bool

        public init(
            host: String = "127.0.0.1", port: Int = 0, allowRemoteBind: Bool = false, allowRemotePeers: Bool = false,
            maxServers: Int = 32, serverOptions: FixtureServer.Options = .init(), allowedOrigins: [String] = [],
            requireToken: Bool = true
        ) {
            self.host = host
            self.port = port
            self.allowRemoteBind = allowRemoteBind
            self.allowRemotePeers = allowRemotePeers
            self.maxServers = maxServers
            self.serverOptions = serverOptions
            self.allowedOrigins = allowedOrigins
            self.requireToken = requireToken
        }

        /// `origin` in the form browsers send (`http://localhost:3000`, lower-case, no path), or an error that says
        /// what is wrong with it.
        public static func normalizedOrigin(_ origin: String) throws(ControlServerError) -> String {
            let lower = origin.lowercased()
            let text = lower.hasSuffix("/") ? String(lower.dropLast()) : lower
            guard let scheme = text.range(of: "://"), ["http", "https"].contains(text[..<scheme.lowerBound]),
                !text[scheme.upperBound...].isEmpty,
                !text[scheme.upperBound...].contains(where: { "/?#@ ".contains($0) })
            else {
                throw ControlServerError(
                    "'\(origin)' is not a web origin: write scheme://host[:port] with no path, e.g. http://localhost:3000"
                )
            }
            return text
        }

        /// Parses `HOST:PORT` (`127.0.0.1:0`, `[::1]:8080`, `localhost:0`) into `host` and `port`.
        public mutating func setAddress(_ text: String) throws(ControlServerError) {
            let host: Substring
            let portText: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                    throw ControlServerError("'\(text)' is not HOST:PORT; write an IPv6 address as [::1]:PORT")
                }
                host = text[text.index(after: text.startIndex)..<close]
                portText = text[text.index(close, offsetBy: 2)...]
            } else {
                guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                    throw ControlServerError(
                        "'\(text)' is not HOST:PORT, e.g. 127.0.0.1:0 (0: an ephemeral port) or [::1]:8080")
                }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard let port = Int(portText), (0...65535).contains(port) else {
                throw ControlServerError(
                    "the port '\(portText)' of '\(text)' is not in 0...65535 (0: an ephemeral port)")
            }
            let h = String(host)
            guard h == "localhost" || Self.isIPv4(h) || Self.isIPv6(h) else {
                throw ControlServerError(
                    "the host '\(h)' of '\(text)' is not an IP address; use 127.0.0.1, ::1 or localhost")
            }
            self.host = h
            self.port = port
        }

        /// Whether `host` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
        public var hostIsLoopback: Bool { Sockets.isLoopback(host) }

        static func isIPv4(_ s: String) -> Bool {
            var a = in_addr()
            return inet_pton(AF_INET, s, &a) == 1
        }

        static func isIPv6(_ s: String) -> Bool {
            var a = in6_addr()
            return inet_pton(AF_INET6, s, &a) == 1
        }
    }

    /// The address it listens on (`127.0.0.1`) and its port.
    public let host: String
    public let port: Int
    /// `http://127.0.0.1:PORT/`.
    public var url: String { host.contains(":") ? "http://[\(host)]:\(port)/" : "http://\(host):\(port)/" }
    /// Where scenario servers write their trust and client-certificate files; removed by `stop()`.
    public let workDirectory: URL
    /// The secret every request but `GET /health` must carry as `Authorization: Bearer TOKEN`: 32 random bytes
    /// (base64url), new at every start. Nil when started with `requireToken: false`.
    public let token: String?

    private let http: SmallHTTPServer
    private let api: ControlAPI

    private init(host: String, port: Int, workDirectory: URL, token: String?, http: SmallHTTPServer, api: ControlAPI) {
        self.host = host
        self.port = port
        self.workDirectory = workDirectory
        self.token = token
        self.http = http
        self.api = api
    }

    /// The route table as OpenAPI would write it: `GET /servers/{id}`, … (what openapi.yaml must describe).
    static func routeTable(_ api: ControlAPI) -> [String] { api.routes.map { "\($0.method) \($0.path)" } }

    /// Starts the control API. Refuses a non-loopback `options.host` unless `options.allowRemoteBind`, and
    /// `requireToken: false` off loopback. Scenario servers' files go to a fresh folder under
    /// `pki.directory/control/`; folders there of processes that no longer run are removed first.
    public static func start(pki: LabPKI, catalogue: Catalogue, options: Options = .init()) async throws
        -> ControlServer
    {
        let host = options.host == "localhost" ? "127.0.0.1" : options.host
        if !Sockets.isLoopback(host) {
            guard options.allowRemoteBind else {
                throw ControlServerError(
                    "refusing to listen on \(host): the control API starts servers and hands out keys, so it listens on loopback (127.0.0.1 or ::1) unless remote access is allowed explicitly (pinlab serve --control-allow-remote)"
                )
            }
            guard options.requireToken else {
                throw ControlServerError(
                    "refusing to serve the control API on \(host) without a token: off loopback the bearer token is required (drop --control-no-token)"
                )
            }
            FileHandle.standardError.write(
                Data(
                    "warning: the pinlab control API listens on \(host), reachable from other hosts; it hands out the lab's test keys\n"
                        .utf8))
        }
        guard (0...65535).contains(options.port) else {
            throw ControlServerError("the port \(options.port) is not in 0...65535")
        }
        guard options.maxServers >= 1 else { throw ControlServerError("maxServers must be at least 1") }
        guard Options.isIPv4(host) || Options.isIPv6(host) else {
            throw ControlServerError("'\(host)' is not an address to listen on: use 127.0.0.1, ::1 or localhost")
        }
        var origins: Set<String> = []
        for o in options.allowedOrigins { origins.insert(try Options.normalizedOrigin(o)) }
        guard let document = openAPIDocument() else {
            throw ControlServerError(
                "openapi.yaml is missing from the PinningLabControl resources; rebuild the package")
        }
        let controlFolder = pki.directory.appendingPathComponent("control", isDirectory: true)
        let work =
            controlFolder
            .appendingPathComponent(
                "\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        // Client identities' PKCS#12 files are made now, on a thread of their own (they take the PKI folder's
        // lock), so that starting a mutual-TLS scenario later never waits for a lock on the cooperative pool.
        let clients = Set(catalogue.scenarios.compactMap(\.client.present))
        try await onDedicatedThread(named: "pinlab.ctl.block") {
            Result {
                _ = sweepStaleFolders(in: controlFolder)
                try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
                for name in clients.sorted() { _ = try pki.pkcs12File(for: name) }
            }
        }.get()
        let registry = ServerRegistry(
            runner: CheckRunner(pki: pki, catalogue: catalogue), workDirectory: work, options: options.serverOptions,
            maxServers: options.maxServers)
        let api = ControlAPI(pki: pki, catalogue: catalogue, registry: registry, openAPIDocument: document)
        let token = options.requireToken ? makeToken() : nil
        let gate = Gate(
            boundHost: host, allowRemotePeers: options.allowRemotePeers, allowedOrigins: origins,
            token: token.map { Array($0.utf8) }, routes: api.routes)
        let http: SmallHTTPServer
        do {
            http = try SmallHTTPServer(
                host: host, port: options.port,
                limits: .init(
                    maxBodyBytes: maxBodyBytes, bodyFix: "send a small JSON object.", stopGrace: .seconds(1),
                    threadName: "pinlab.ctl"),
                handler: { request in gate.respond(to: request) },
                refusal: { r in reply(.error(ControlError(r.status, field: r.field, r.reason, fix: r.fix))) })
        } catch {
            await registry.stopAll()
            try? FileManager.default.removeItem(at: work)
            throw ControlServerError("the control API cannot listen on \(host):\(options.port): \(error.reason)")
        }
        gate.port = http.port
        api.liveSource.withLock { $0 = "pinlab serve --control on http://\(urlHost(host)):\(http.port)/" }
        do {
            try http.start()
        } catch {
            await registry.stopAll()
            try? FileManager.default.removeItem(at: work)
            throw ControlServerError("the control API cannot accept connections: \(error.reason)")
        }
        return ControlServer(host: host, port: http.port, workDirectory: work, token: token, http: http, api: api)
    }

    /// Stops the HTTP server, then every scenario server started through it, and removes their files.
    public func stop() async {
        api.live.stop()
        let http = self.http
        await onDedicatedThread(named: "pinlab.ctl.stop") { http.stop() }
        await api.registry.stopAll()
        try? FileManager.default.removeItem(at: workDirectory)
    }

    /// The OpenAPI document bundled with this module (or its copy embedded in the code, for a copied binary).
    public static func openAPIDocument() -> String? {
        EmbeddedResources.text("openapi.yaml")
    }

    /// `http://127.0.0.1:PORT/live#token=TOKEN`: the live view of the scenario servers, to open in a browser (the
    /// fragment never leaves the browser; the page sends the token as `Authorization: Bearer`).
    public var livePageURL: String { url + "live" + (token.map { "#token=" + $0 } ?? "") }

    /// The method and path of every route, in OpenAPI form (`GET /servers/{id}`).
    public var routes: [String] { Self.routeTable(api) }

    /// 32 bytes of the system's random number generator, base64url without padding (43 characters).
    static func makeToken() -> String {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                of: "=", with: "")
    }

    /// Removes the folders `PID-xxxxxxxx` under `folder` whose process no longer exists (`kill(pid, 0)` fails with
    /// ESRCH): what a control API ended by SIGKILL left. Folders of live processes are kept. Returns what it removed.
    @discardableResult
    static func sweepStaleFolders(in folder: URL) -> [URL] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var removed: [URL] = []
        for name in names {
            guard let dash = name.firstIndex(of: "-"), let pid = Int32(name[..<dash]), pid > 0 else { continue }
            guard pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let url = folder.appendingPathComponent(name, isDirectory: true)
            if (try? FileManager.default.removeItem(at: url)) != nil { removed.append(url) }
        }
        return removed
    }

    // MARK: - HTTP

    /// `127.x.y.z`, `::1`, and IPv4 loopback mapped into IPv6 (`::ffff:127.0.0.1`).
    static func isLoopbackPeer(_ ip: String) -> Bool {
        let lower = ip.lowercased()
        return Sockets.isLoopback(lower.hasPrefix("::ffff:") ? String(lower.dropFirst(7)) : lower)
            && lower != "localhost"
    }

    static let maxBodyBytes = 64 * 1024

    static func reply(_ r: ControlReply) -> SmallHTTPServer.Response {
        SmallHTTPServer.Response(
            status: r.status, headers: [("Content-Type", r.contentType)] + r.headers.sorted { $0.key < $1.key },
            body: r.body)
    }
}

/// What every request passes before a handler sees it, in this order: the peer, `Host`, `Origin`, the media type of
/// a body, the bearer token; then the route, or the JSON 404/405 of the fallback.
final class Gate: Sendable {
    let boundHost: String
    let allowRemotePeers: Bool
    let allowedOrigins: Set<String>
    let token: [UInt8]?
    let routes: [ControlAPI.Route]
    private let boundPort = Locked(0)
    /// The server's port: set once, before the server's first request is answered.
    var port: Int {
        get { boundPort.withLock { $0 } }
        set { boundPort.withLock { $0 = newValue } }
    }

    /// What a 401 tells the caller to do.
    let tokenFix: String

    init(
        boundHost: String, allowRemotePeers: Bool, allowedOrigins: Set<String>, token: [UInt8]?,
        routes: [ControlAPI.Route],
        tokenFix: String =
            "send Authorization: Bearer TOKEN with the token pinlab serve --control printed (also in its manifest under control.token)."
    ) {
        self.tokenFix = tokenFix
        self.boundHost = boundHost
        self.allowRemotePeers = allowRemotePeers
        self.allowedOrigins = allowedOrigins
        self.token = token
        self.routes = routes
    }

    func respond(to request: SmallHTTPServer.Request) -> SmallHTTPServer.Response {
        var origin: String?
        if let o = request.head.values("origin").first {
            origin = (try? ControlServer.Options.normalizedOrigin(o)) ?? o.lowercased()
        }
        var response = answer(request, origin: origin)
        if let origin, allowedOrigins.contains(origin) {
            response.headers += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
        }
        return response
    }

    private func refuse(_ status: Int, _ field: String?, _ error: String, fix: String) -> SmallHTTPServer.Response {
        ControlServer.reply(.error(ControlError(status, field: field, error, fix: fix)))
    }

    private func answer(_ request: SmallHTTPServer.Request, origin: String?) -> SmallHTTPServer.Response {
        let head = request.head
        guard allowRemotePeers || ControlServer.isLoopbackPeer(request.peer) else {
            return refuse(
                403, nil, "the control API answers loopback peers only.",
                fix: "connect from this machine, or start it with --control-allow-remote.")
        }
        let hosts = head.values("host")
        guard hosts.count == 1, hostAllowed(hosts[0]) else {
            let named = hosts.isEmpty ? "no Host header" : "Host '\(hosts.joined(separator: ", ").prefix(200))'"
            return refuse(
                403, "Host",
                "\(named) not served; DNS rebinding protection: the control API answers only requests addressed to \(allowedHostExamples).",
                fix: "call it as \(ControlServer.urlHost(boundHost)):\(port), as printed by pinlab serve --control.")
        }
        if let origin {
            guard allowedOrigins.contains(origin) else {
                return refuse(
                    403, "Origin",
                    "requests from the web origin '\(origin.prefix(200))' are refused: a web page may not drive the control API.",
                    fix:
                        "call it from a test or a tool (which sends no Origin), or allow the origin with --control-allow-origin \(origin.prefix(200))."
                )
            }
            if head.method == "OPTIONS", !head.values("access-control-request-method").isEmpty {
                return SmallHTTPServer.Response(
                    status: 204,
                    headers: [
                        ("Access-Control-Allow-Methods", "GET, POST, DELETE"),
                        ("Access-Control-Allow-Headers", "Authorization, Content-Type"),
                        ("Access-Control-Max-Age", "600"),
                    ], body: Data())
            }
        }
        // A body is read only by a route's handler: a request that no route takes gets its 404 or 405 below.
        let matched = route(for: head)
        let hasBody = !request.body.isEmpty || (head.values("content-length").first.flatMap { Int($0) } ?? 0) > 0
        if matched != nil, hasBody || ["POST", "PUT", "PATCH"].contains(head.method) {
            let type = head.values("content-type").first ?? ""
            let media =
                type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard media == "application/json" else {
                return refuse(
                    415, "Content-Type",
                    type.isEmpty
                        ? "a \(head.method) needs Content-Type: application/json; none was sent."
                        : "'\(type.prefix(100))' is not application/json.",
                    fix: "send the body as JSON with Content-Type: application/json.")
            }
        }
        let isOpen = head.method == "GET" && matched?.route.open == true
        if let token, !isOpen {
            let given = head.values("authorization")
            guard given.count == 1, Self.bearer(given[0]).map({ Self.constantTimeEqual($0, token) }) == true else {
                var r = refuse(
                    401, "Authorization",
                    given.isEmpty
                        ? "the request has no bearer token."
                        : "the bearer token is not this control API's.",
                    fix: tokenFix)
                r.headers.append(("WWW-Authenticate", "Bearer realm=\"pinlab-control\""))
                return r
            }
        }
        guard let (route, parameters) = matched else { return ControlServer.reply(fallback(head)) }
        var r = ControlRequest()
        r.parameters = parameters
        for q in head.query where r.query[q.name] == nil { r.query[q.name] = q.value }
        r.body = request.body
        return ControlServer.reply(Self.runHandler(route, r))
    }

    /// The token of `Bearer TOKEN` (the scheme in any case).
    static func bearer(_ value: String) -> [UInt8]? {
        let bytes = Array(value.utf8)
        guard bytes.count > 7, String(decoding: bytes[0..<7], as: UTF8.self).lowercased() == "bearer " else {
            return nil
        }
        return Array(bytes[7...].drop { $0 == 0x20 })
    }

    /// Compares in time that depends on the lengths only, never on where the bytes differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    private var allowedHostExamples: String {
        Sockets.isLoopback(boundHost)
            ? "127.0.0.1:\(port), localhost:\(port) or [::1]:\(port)" : "\(ControlServer.urlHost(boundHost)):\(port)"
    }

    /// Whether a `Host` value names this server: its loopback names (and the Android emulator's alias of the host's
    /// loopback, 10.0.2.2) with the port when bound to loopback; the bound address with the port otherwise, or
    /// any IP address with the port when bound to all addresses. A name (which DNS may rebind) never passes.
    func hostAllowed(_ value: String) -> Bool {
        let lower = value.lowercased()
        let suffix = ":\(port)"
        guard lower.hasSuffix(suffix) else { return false }
        var name = String(lower.dropLast(suffix.count))
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == boundHost.lowercased() { return true }
        if Sockets.isLoopback(boundHost) { return ["127.0.0.1", "localhost", "::1", "10.0.2.2"].contains(name) }
        if boundHost == "0.0.0.0" || boundHost == "::" {
            return name == "localhost" || ControlServer.Options.isIPv4(name) || ControlServer.Options.isIPv6(name)
        }
        return false
    }

    /// The route and its path parameters.
    func route(for head: HTTPRequestHead) -> (route: ControlAPI.Route, parameters: [String: String])? {
        for route in routes where route.method == head.method {
            let pattern = route.path.split(separator: "/")
            guard pattern.count == head.segments.count else { continue }
            var parameters: [String: String] = [:]
            var ok = true
            for (p, s) in zip(pattern, head.segments) {
                if p.hasPrefix("{") {
                    guard !s.isEmpty else {
                        ok = false
                        break
                    }
                    parameters[String(p.dropFirst().dropLast())] = s
                } else if p.lowercased() != s.lowercased() {
                    ok = false
                    break
                }
            }
            if ok { return (route, parameters) }
        }
        return nil
    }

    /// No route matched: 405 when the path exists under another method, else 404; JSON either way.
    func fallback(_ head: HTTPRequestHead) -> ControlReply {
        let methods = routes.filter { route in
            let pattern = route.path.split(separator: "/")
            return pattern.count == head.segments.count
                && zip(pattern, head.segments).allSatisfy { $0.hasPrefix("{") || $0.lowercased() == $1.lowercased() }
        }.map(\.method)
        if !methods.isEmpty {
            var r = ControlReply.error(
                ControlError(
                    405, field: nil, "\(head.method) is not allowed on \(head.path).",
                    fix: "use \(methods.joined(separator: " or "))."))
            r.headers["Allow"] = methods.joined(separator: ", ")
            return r
        }
        return .error(
            .notFound(nil, "there is no route \(head.path).", fix: "GET /openapi.yaml describes every route."))
    }

    /// Runs an async handler from a connection's thread (never a thread of the cooperative pool) and waits for it.
    /// The handler's task prefers ``HandlerExecutor``'s threads: when the process's cooperative pool is busy (two
    /// threads on two cores, held by a long computation in the embedding program — or by tests that build a PKI
    /// while hundreds of others start), the control API still answers; it went silent for 56 s once.
    static func runHandler(_ route: ControlAPI.Route, _ request: ControlRequest) -> ControlReply {
        let box = Locked<ControlReply?>(nil)
        let done = DispatchSemaphore(value: 0)
        let work: @Sendable () async -> Void = {
            let reply: ControlReply
            do throws(ControlError) {
                reply = try await route.handle(request)
            } catch {
                reply = .error(error)
            }
            box.withLock { $0 = reply }
            done.signal()
        }
        if #available(macOS 15.0, *) {
            Task(executorPreference: HandlerExecutor.shared) { await work() }
        } else {
            Task { await work() }
        }
        done.wait()
        return box.withLock { $0 } ?? .error(ControlError(500, field: nil, "the handler gave no answer."))
    }
}

extension ControlServer {
    /// An address as it goes into a URL's authority: `[::1]`, `127.0.0.1`.
    static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

/// Why the control API cannot start (a bad address, a refused bind).
public struct ControlServerError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
    public var errorDescription: String? { reason }
}

/// The threads the control API's handlers run on (``ControlServer/runHandler(_:_:)``): a concurrent dispatch queue,
/// whose threads are not Swift's cooperative pool and are added when the running ones block, so a handler runs even
/// while every cooperative thread is held. The actors a handler calls (the server registry) run their work here too
/// (a task's executor preference is kept by default actors).
@available(macOS 15.0, *)
final class HandlerExecutor: TaskExecutor {
    static let shared = HandlerExecutor()
    private let queue = DispatchQueue(label: "pinlab.ctl.handlers", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
