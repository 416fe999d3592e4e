public import Foundation
public import PinningLab
import FlyingFox
import FlyingSocks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The control API of `pinlab serve --control`: HTTP+JSON on loopback that lists scenarios, starts, stops and
/// rotates scenario servers, returns what they observed, and hands out trust anchors, pins and client identities.
/// The routes and their JSON are described by `openapi.yaml` (also served at `GET /openapi.yaml`).
///
/// ```swift
/// let control = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled())
/// print(control.url)            // http://127.0.0.1:PORT/
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

        public init(
            host: String = "127.0.0.1", port: Int = 0, allowRemoteBind: Bool = false, allowRemotePeers: Bool = false,
            maxServers: Int = 32, serverOptions: FixtureServer.Options = .init()
        ) {
            self.host = host
            self.port = port
            self.allowRemoteBind = allowRemoteBind
            self.allowRemotePeers = allowRemotePeers
            self.maxServers = maxServers
            self.serverOptions = serverOptions
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
                    throw ControlServerError("'\(text)' is not HOST:PORT, e.g. 127.0.0.1:0 (0: an ephemeral port) or [::1]:8080")
                }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard let port = Int(portText), (0...65535).contains(port) else {
                throw ControlServerError("the port '\(portText)' of '\(text)' is not in 0...65535 (0: an ephemeral port)")
            }
            let h = String(host)
            guard h == "localhost" || Self.isIPv4(h) || Self.isIPv6(h) else {
                throw ControlServerError("the host '\(h)' of '\(text)' is not an IP address; use 127.0.0.1, ::1 or localhost")
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

    private let http: HTTPServer
    private let api: ControlAPI
    private let task: Task<Void, Never>

    private init(host: String, port: Int, workDirectory: URL, http: HTTPServer, api: ControlAPI, task: Task<Void, Never>) {
        self.host = host
        self.port = port
        self.workDirectory = workDirectory
        self.http = http
        self.api = api
        self.task = task
    }

    /// The route table as OpenAPI would write it: `GET /servers/{id}`, … (what openapi.yaml must describe).
    static func routeTable(_ api: ControlAPI) -> [String] { api.routes.map { "\($0.method) \($0.path)" } }

    /// Starts the control API. Refuses a non-loopback `options.host` unless `options.allowRemoteBind`.
    /// Scenario servers' files go to a fresh folder under `pki.directory/control/`.
    public static func start(pki: LabPKI, catalogue: Catalogue, options: Options = .init()) async throws -> ControlServer {
        let host = options.host == "localhost" ? "127.0.0.1" : options.host
        if !Sockets.isLoopback(host) {
            guard options.allowRemoteBind else {
                throw ControlServerError(
                    "refusing to listen on \(host): the control API starts servers and hands out keys, so it listens on loopback (127.0.0.1 or ::1) unless remote access is allowed explicitly (pinlab serve --control-allow-remote)")
            }
            FileHandle.standardError.write(Data(
                "warning: the pinlab control API listens on \(host), reachable from other hosts; it hands out the lab's test keys\n".utf8))
        }
        guard (0...65535).contains(options.port) else { throw ControlServerError("the port \(options.port) is not in 0...65535") }
        guard options.maxServers >= 1 else { throw ControlServerError("maxServers must be at least 1") }
        guard let document = openAPIDocument() else {
            throw ControlServerError("openapi.yaml is missing from the PinningLabControl resources; rebuild the package")
        }
        let work = pki.directory.appendingPathComponent("control", isDirectory: true)
            .appendingPathComponent("\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        // Client identities' PKCS#12 files are made now, on a thread of their own (they take the PKI folder's
        // lock), so that starting a mutual-TLS scenario later never waits for a lock on the cooperative pool.
        let clients = Set(catalogue.scenarios.compactMap(\.client.present))
        try await OffPool.run {
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            for name in clients.sorted() { _ = try pki.pkcs12File(for: name) }
        }
        let registry = ServerRegistry(
            runner: CheckRunner(pki: pki, catalogue: catalogue), workDirectory: work, options: options.serverOptions,
            maxServers: options.maxServers)
        let api = ControlAPI(pki: pki, catalogue: catalogue, registry: registry, openAPIDocument: document)

        let address: any SocketAddress
        do {
            address = host.contains(":")
                ? try sockaddr_in6.inet6(ip6: host, port: UInt16(options.port))
                : try sockaddr_in.inet(ip4: host, port: UInt16(options.port))
        } catch {
            throw ControlServerError("'\(host)' is not an address to listen on: \(error)")
        }
        let http = HTTPServer(address: address, timeout: 30, logger: .disabled)
        let allowRemotePeers = options.allowRemotePeers
        for route in api.routes {
            let flyingFoxPath = route.path.split(separator: "/")
                .map { $0.hasPrefix("{") ? ":" + $0.dropFirst().dropLast() : String($0) }.joined(separator: "/")
            await http.appendRoute(HTTPRoute(method: HTTPMethod(route.method), path: "/" + flyingFoxPath)) { request in
                await Self.respond(to: request, route: route, allowRemotePeers: allowRemotePeers)
            }
        }
        let routes = api.routes
        // FlyingFox matches a route's methods from a set: the fallback takes every method of the IANA registry,
        // so that an unsupported one gets a JSON 405 (or 404) rather than FlyingFox's empty 404.
        await http.appendRoute(HTTPRoute(methods: Self.registeredMethods.map { HTTPMethod($0) }, path: "*")) { request in
            Self.fallback(request, routes: routes, allowRemotePeers: allowRemotePeers)
        }
        // run() returns only when the server stops; a bind failure ends it at once, and is reported at once.
        let runError = RunError()
        let task = Task<Void, Never> {
            do { try await http.run() } catch { runError.set(error) }
        }
        var listening = false
        for _ in 0..<1000 where !listening {  // 10 s at most
            if let error = runError.get() {
                await registry.stopAll()
                try? FileManager.default.removeItem(at: work)
                throw ControlServerError("the control API cannot listen on \(host):\(options.port): \(error)")
            }
            listening = await http.isListening
            if !listening { try? await Task.sleep(for: .milliseconds(10)) }
        }
        guard listening else {
            task.cancel()
            await registry.stopAll()
            try? FileManager.default.removeItem(at: work)
            throw ControlServerError("the control API did not start listening on \(host):\(options.port) within 10 s")
        }
        let port: UInt16
        switch await http.listeningAddress {
        case .ip4(_, let p), .ip6(_, let p): port = p
        default:
            await http.stop()
            task.cancel()
            throw ControlServerError("the control API's listening address is unknown")
        }
        return ControlServer(host: host, port: Int(port), workDirectory: work, http: http, api: api, task: task)
    }

    /// Stops the HTTP server, then every scenario server started through it, and removes their files.
    public func stop() async {
        await http.stop(timeout: 1)
        task.cancel()
        await api.registry.stopAll()
        try? FileManager.default.removeItem(at: workDirectory)
    }

    /// The OpenAPI document bundled with this module.
    public static func openAPIDocument() -> String? {
        Bundle.module.url(forResource: "openapi", withExtension: "yaml").flatMap { try? String(contentsOf: $0, encoding: .utf8) }
    }

    /// The method and path of every route, in OpenAPI form (`GET /servers/{id}`).
    public var routes: [String] { Self.routeTable(api) }

    // MARK: - HTTP

    /// Whether a peer may use the API: loopback peers always, others only with `allowRemotePeers`.
    static func peerAllowed(_ address: HTTPRequest.Address?, allowRemotePeers: Bool) -> Bool {
        if allowRemotePeers { return true }
        switch address {
        case .ip4(let ip, _), .ip6(let ip, _): return isLoopbackPeer(ip)
        case .unix, .none: return false
        }
    }

    /// `127.x.y.z`, `::1`, and IPv4 loopback mapped into IPv6 (`::ffff:127.0.0.1`).
    static func isLoopbackPeer(_ ip: String) -> Bool {
        let lower = ip.lowercased()
        return Sockets.isLoopback(lower.hasPrefix("::ffff:") ? String(lower.dropFirst(7)) : lower) && lower != "localhost"
    }

    static let maxBodyBytes = 64 * 1024

    /// The IANA HTTP method registry (RFC 9110, WebDAV, the QUERY draft…).
    static let registeredMethods = [
        "ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "CONNECT", "COPY", "DELETE", "GET", "HEAD", "LABEL",
        "LINK", "LOCK", "MERGE", "MKACTIVITY", "MKCALENDAR", "MKCOL", "MKREDIRECTREF", "MKWORKSPACE", "MOVE", "OPTIONS",
        "ORDERPATCH", "PATCH", "POST", "PRI", "PROPFIND", "PROPPATCH", "PUT", "QUERY", "REBIND", "REPORT", "SEARCH",
        "TRACE", "UNBIND", "UNCHECKOUT", "UNLINK", "UNLOCK", "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL",
    ]

    static func respond(to request: HTTPRequest, route: ControlAPI.Route, allowRemotePeers: Bool) async -> HTTPResponse {
        guard peerAllowed(request.remoteAddress, allowRemotePeers: allowRemotePeers) else { return forbidden(request) }
        var r = ControlRequest()
        for p in request.routeParameters { r.parameters[p.name] = p.value }
        for q in request.query where r.query[q.name] == nil { r.query[q.name] = q.value }
        if let length = request.bodySequence.count, length > maxBodyBytes {
            return reply(.error(ControlError(413, field: "body", "the body has \(length) bytes; at most \(maxBodyBytes) are read.",
                                             fix: "send a small JSON object.")))
        }
        do {
            var body = Data()
            for try await chunk in request.bodySequence {
                body.append(chunk)
                if body.count > maxBodyBytes {
                    return reply(.error(ControlError(413, field: "body", "the body exceeds \(maxBodyBytes) bytes.",
                                                     fix: "send a small JSON object.")))
                }
            }
            r.body = body
        } catch {
            return reply(.error(.badRequest("body", "the body could not be read: \(error)", fix: "send a complete body.")))
        }
        do throws(ControlError) {
            return reply(try await route.handle(r))
        } catch {
            return reply(.error(error))
        }
    }

    /// No route matched: 405 when the path exists under another method, else 404; JSON either way.
    static func fallback(_ request: HTTPRequest, routes: [ControlAPI.Route], allowRemotePeers: Bool) -> HTTPResponse {
        guard peerAllowed(request.remoteAddress, allowRemotePeers: allowRemotePeers) else { return forbidden(request) }
        let segments = request.path.split(separator: "/")
        let methods = routes.filter { route in
            let pattern = route.path.split(separator: "/")
            return pattern.count == segments.count
                && zip(pattern, segments).allSatisfy { $0.hasPrefix("{") || $0.lowercased() == $1.lowercased() }
        }.map(\.method)
        if !methods.isEmpty {
            var r = reply(.error(ControlError(405, field: nil, "\(request.method.rawValue) is not allowed on \(request.path).",
                                              fix: "use \(methods.joined(separator: " or ")).")))
            r.headers[HTTPHeader("Allow")] = methods.joined(separator: ", ")
            return r
        }
        return reply(.error(.notFound(nil, "there is no route \(request.path).", fix: "GET /openapi.yaml describes every route.")))
    }

    static func forbidden(_ request: HTTPRequest) -> HTTPResponse {
        reply(.error(ControlError(403, field: nil, "the control API answers loopback peers only.",
                                  fix: "connect from this machine, or start it with --control-allow-remote.")))
    }

    static func reply(_ r: ControlReply) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers[.contentType] = r.contentType
        for (k, v) in r.headers { headers[HTTPHeader(k)] = v }
        return HTTPResponse(statusCode: HTTPStatusCode(r.status, phrase: phrase(r.status)), headers: headers, body: r.body)
    }

    static func phrase(_ status: Int) -> String {
        [200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
         409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Content", 500: "Internal Server Error",
         503: "Service Unavailable"][status] ?? "Status"
    }
}

/// Why the control API cannot start (a bad address, a refused bind).
public struct ControlServerError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
    public var errorDescription: String? { reason }
}

/// The error that ended the HTTP server's run loop, if any (set once by its task, read by `start`).
private final class RunError: @unchecked Sendable {  // `error` is only touched under `lock`
    private let lock = NSLock()
    private var error: (any Error)?
    func set(_ e: any Error) { lock.withLock { error = e } }
    func get() -> (any Error)? { lock.withLock { error } }
}
