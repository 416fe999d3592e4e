public import Foundation
import PinningLabCore
import PinningLabOpenSSL
public import PinningLabPKI

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP `CONNECT` proxy that plays an interception proxy (Charles, mitmproxy, Burp) for every host a client
/// asks for, and records per connection whether the client sent its request through the intercepted tunnel.
///
/// For each `CONNECT host:port` it answers `200`, reads the client's ClientHello (the SNI names the host when the
/// authority is an IP address), and by the host's ``InterceptPolicy`` either terminates TLS with a chain of its
/// own — a leaf minted for the host by `proxy-root` (`mint`), the same plus the genuine chain (`stuff`), a leaf
/// from the name-collision `twin-intermediate-a` (`collision`) — or opens a plain TCP tunnel to the upstream
/// (`passthrough`). An intercepted request is answered by the proxy itself (a small JSON document) and never
/// forwarded: the point is whether it was sent, not what came back.
///
/// I/O: worker threads of its own, each a `poll` loop over its non-blocking connections, like the fixture
/// servers; nothing blocks Swift's cooperative pool (``stop()`` joins the workers on a dedicated thread).
///
/// ```swift
/// let proxy = try InterceptProxy.start(pki: pki, configuration: .init(pinned: [try HostPattern(parsing: "api.pinning.test")]))
/// // … point a client at 127.0.0.1:\(proxy.port) …
/// await proxy.settle()
/// let report = proxy.report()
/// await proxy.stop()
/// ```
public final class InterceptProxy: Sendable {
    public struct Configuration: Sendable {
        /// Where the proxy listens, its timeouts (the handshake's includes the CONNECT; the idle one applies to
        /// passthrough tunnels too) and its limits (a tunnel counts as one connection).
        public var listener: ListenerSettings
        /// The hosts the client is declared to pin (`api.x.test`, `*.x.test`, `**.x.test`).
        public var pinned: [HostPattern]
        public var policies: PolicyTable
        /// Where passthrough tunnels (and genuine-chain fetches) go; without a matching route, the CONNECT
        /// authority itself.
        public var upstreams: [UpstreamRoute]
        /// The genuine chain the `stuff` policy appends (DER); empty: the lab's `leaf-v1`, `lab-intermediate-a`,
        /// `lab-root` (what the chain-stuffing scenario appends).
        public var genuineChainDER: [[UInt8]]
        /// `stuff` appends the chain the upstream itself presents (fetched once per host from the matching
        /// `upstreams` route, else the CONNECT authority), instead of `genuineChainDER`; when the fetch fails, the
        /// connection's observation says so and `genuineChainDER` (or the lab's chain) is appended.
        public var genuineChainFromUpstream: Bool
        /// `openssl` (default) or `gnutls`: the engine that terminates TLS.
        public var engine: String
        /// The root that mints leaves for `mint` and `stuff`; nil: the PKI's `proxy-root` (unconstrained). The
        /// scoped proxy root (``LabPKI/scopedProxyRoot(now:)``) limits interception to the hosts of its scope.
        public var proxyRoot: Identity? = nil

        /// The proxy's listener defaults to 127.0.0.1, a free port, a 30 s idle timeout and 2,048 connections.
        public static let defaultListener = ListenerSettings(idleTimeout: .seconds(30), maxConnections: 2048)

        public init(
            listener: ListenerSettings = Configuration.defaultListener, pinned: [HostPattern] = [],
            policies: PolicyTable = PolicyTable(), upstreams: [UpstreamRoute] = [], genuineChainDER: [[UInt8]] = [],
            genuineChainFromUpstream: Bool = false, engine: String = "openssl"
        ) {
            self.listener = listener
            self.pinned = pinned
            self.policies = policies
            self.upstreams = upstreams
            self.genuineChainDER = genuineChainDER
            self.genuineChainFromUpstream = genuineChainFromUpstream
            self.engine = engine
        }
    }

    /// The address the proxy listens on, e.g. `127.0.0.1`.
    public let host: String
    public let port: Int
    public let configuration: Configuration
    let core: ProxyCore

    /// `127.0.0.1:PORT` (what `curl -x` and Java's `https.proxyHost`/`https.proxyPort` take).
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private init(host: String, port: Int, configuration: Configuration, core: ProxyCore) {
        self.host = host
        self.port = port
        self.configuration = configuration
        self.core = core
    }

    deinit { core.shutdown() }

    /// Starts the proxy. Throws ``InterceptError`` for a bad configuration (naming the field) and when the
    /// socket cannot be bound.
    public static func start(pki: LabPKI, configuration: Configuration) throws -> InterceptProxy {
        _ = Sockets.ignoreSIGPIPE
        let c = configuration
        do { try c.listener.check() } catch {
            throw InterceptError(error.setting == "bindAddress" ? "--listen" : error.setting, error.reason, fix: error.fix)
        }
        let engine: any TLSEngine
        switch c.engine.lowercased() {
        case "openssl": engine = Engines.openssl
        case "gnutls": engine = Engines.gnutls
        default: throw InterceptError("--engine", "'\(c.engine)' is not an engine", fix: "use openssl or gnutls")
        }
        func identity(_ name: String) throws -> Identity {
            guard let id = pki[name] else {
                throw InterceptError("pki", "the lab PKI has no '\(name)'", fix: "use the built-in pki/lab.yaml or add '\(name)' to your spec")
            }
            return id
        }
        let proxyRoot = try c.proxyRoot ?? identity("proxy-root")
        let twin = try identity("twin-intermediate-a")
        let genuine: [[UInt8]]
        if c.genuineChainDER.isEmpty {
            genuine = try ["leaf-v1", "lab-intermediate-a", "lab-root"].map { try identity($0).certificateDER }
        } else {
            genuine = c.genuineChainDER
        }
        let minters = ProxyCore.Minters(
            proxy: try LeafMinter(issuer: proxyRoot), twin: try LeafMinter(issuer: twin), twinChain: [twin.certificateDER],
            genuine: genuine)
        let listening: (fd: Int32, port: Int)
        do {
            listening = try c.listener.bind(who: "pinlab intercept")
        } catch {
            throw InterceptError("--listen", "cannot listen on \(c.listener.bindAddress):\(c.listener.port): \(error.reason)",
                                 fix: "pick another port (0 picks a free one)")
        }
        let core = ProxyCore(listenFD: listening.fd, configuration: c, engine: engine, minters: minters)
        do {
            try core.startWorkers(port: listening.port)
        } catch {
            core.shutdown()
            throw InterceptError("workers", "cannot start the proxy's threads: \(error)")
        }
        return InterceptProxy(host: c.listener.host, port: listening.port, configuration: c, core: core)
    }

    /// Every connection finished so far, oldest first.
    public func observations() -> [InterceptObservation] { core.withLock { $0.observations } }

    /// Connections accepted and not yet finished.
    public var connectionsOpen: Int { core.withLock { $0.inFlight } }
    public var connectionsAccepted: Int { core.withLock { $0.accepted } }
    /// When a connection last started or finished (the proxy's start before any).
    public var lastActivity: Date { core.withLock { $0.lastActivity } }

    /// Waits until every connection that reached the proxy so far has finished (or `timeout`); `false` on timeout.
    @discardableResult
    public func settle(timeout: Duration = .seconds(15)) async -> Bool {
        let end = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < end {
            if connectionsOpen == 0 && !Sockets.hasPendingConnection(core.listener.listenFD) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// The verdict per host against the declared pins.
    public func report(startedAt: Date? = nil, durationSeconds: Double = 0) -> InterceptReport {
        InterceptReport(
            proxy: address, engine: configuration.engine, pinned: configuration.pinned, policies: configuration.policies,
            startedAt: startedAt ?? core.startedAt, durationSeconds: durationSeconds, observations: observations())
    }

    /// The certificate chain (DER) the proxy presents for `host` under `policy`, minting it if needed.
    public func chain(for host: String, policy: InterceptPolicy) throws -> [[UInt8]] {
        try core.chain(host: HostPattern.normalize(host), policy: policy)
    }

    /// Stops accepting, closes every open connection, joins the workers on a dedicated thread. Idempotent.
    public func stop() async {
        let core = self.core
        await onDedicatedThread(named: "pinlab.istop") { core.shutdown() }
    }

    /// The same as ``stop()``, blocking the calling thread (for synchronous code, never the cooperative pool).
    public func stopSync() { core.shutdown() }
}

/// What the proxy saw on one connection.
public struct InterceptObservation: Sendable, Hashable, Codable {
    public var id: Int
    public var startedAt: Date
    public var peer: String
    /// The CONNECT target as the client sent it, e.g. `api.pinning.test:443`.
    public var authority: String?
    /// The host judged: the SNI when the client sent one, else the CONNECT authority's host.
    public var host: String?
    public var serverName: String?
    public var policy: InterceptPolicy?
    /// Where a passthrough tunnel went.
    public var upstream: String?
    public var handshakeCompleted: Bool
    /// The client sent application data (its HTTP request) inside the intercepted TLS session.
    public var applicationDataReceived: Bool
    public var bytesFromClient: Int
    public var bytesFromUpstream: Int
    public var requestLine: String?
    /// The alert the client sent, e.g. `bad_certificate`, `unknown_ca`.
    public var alertReceived: String?
    public var tlsVersion: String?
    /// How it ended: `response-sent`, `alert`, `eof-before-handshake`, `tunnel-closed`, `not-connect`, …
    public var closure: String
    public var error: String?
    /// Where the appended genuine chain came from (`stuff`): `lab`, `file`, `upstream 127.0.0.1:8443`, or why the
    /// upstream's could not be fetched.
    public var genuineChain: String?
    public var totalMilliseconds: Double
}

// MARK: - Core

final class ProxyCore: @unchecked Sendable {  // its mutable state is `listener`'s, under that lock; workers own their connections
    struct Minters {
        var proxy: LeafMinter
        var twin: LeafMinter
        var twinChain: [[UInt8]]
        var genuine: [[UInt8]]
    }
    struct State: ListenerState {
        var observations: [InterceptObservation] = []
        var accepted = 0
        var inFlight = 0
        var stopping = false
        var lastActivity = Date()
        var contexts: [String: any TLSServerContext] = [:]
        /// Chains fetched from upstreams (`genuineChainFromUpstream`), with where they came from; a host being
        /// fetched has no entry yet and is in `fetching`.
        var fetched: [String: (chain: [[UInt8]], source: String)] = [:]
        var fetching: Set<String> = []
    }

    let listener: ListenerCore<State>
    let configuration: InterceptProxy.Configuration
    let engine: any TLSEngine
    let minters: Minters
    let startedAt = Date()

    init(listenFD: Int32, configuration: InterceptProxy.Configuration, engine: any TLSEngine, minters: Minters) {
        self.configuration = configuration
        self.engine = engine
        self.minters = minters
        listener = ListenerCore(listenFD: listenFD, settings: configuration.listener, state: State())
    }

    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T { try listener.withLock(body) }

    func startWorkers(port: Int) throws(TLSEngineError) {
        try listener.workers.start(count: configuration.listener.workerThreads, name: { "pli\(port)-\($0)" }) { _ throws(TLSEngineError) in
            try ProxyWorker(core: self)
        }
    }

    func acceptOne() -> (fd: Int32, peer: String, id: Int)? {
        listener.acceptOne { s, fd, peer in
            s.lastActivity = Date()
            return (fd, peer, s.accepted)
        }
    }

    func record(_ o: InterceptObservation) {
        withLock {
            $0.inFlight -= 1
            $0.observations.append(o)
            $0.lastActivity = Date()
        }
    }

    /// The chain presented for `host` under an intercepting `policy`.
    func chain(host: String, policy: InterceptPolicy) throws -> [[UInt8]] {
        switch policy {
        case .mint: return [try minters.proxy.mint(host: host)]
        case .stuff: return [try minters.proxy.mint(host: host)] + genuine(for: host).chain
        case .collision: return [try minters.twin.mint(host: host)] + minters.twinChain
        case .passthrough: return []
        }
    }

    /// The genuine chain appended for `host` and where it came from.
    func genuine(for host: String) -> (chain: [[UInt8]], source: String) {
        if configuration.genuineChainFromUpstream, let f = withLock({ $0.fetched[host] }) { return f }
        return (minters.genuine, configuration.genuineChainDER.isEmpty ? "lab" : "file")
    }

    /// Whether `host`'s genuine chain is ready; starts fetching it (on a thread of its own) when not.
    func genuineReady(host: String, authorityHost: String, authorityPort: Int) -> Bool {
        guard configuration.genuineChainFromUpstream else { return true }
        let start = withLock { s -> Bool in
            if s.fetched[host] != nil || s.fetching.contains(host) { return false }
            s.fetching.insert(host)
            return true
        }
        if start {
            let (upHost, upPort) = upstream(host: host, authorityHost: authorityHost, authorityPort: authorityPort)
            let fallback = minters.genuine
            let t = Thread { [self] in
                Sockets.nameCurrentThread("pli-fetch")
                let result: (chain: [[UInt8]], source: String)
                do {
                    let ip = try Self.numericAddress(upHost)
                    let chain = try PresentedChain.fetch(ip: ip, port: upPort, serverName: host)
                    result = (chain, "upstream \(upHost):\(upPort)")
                } catch {
                    result = (fallback, "the upstream's chain could not be fetched (\(error)); appended the \(configuration.genuineChainDER.isEmpty ? "lab" : "file")'s")
                }
                withLock {
                    $0.fetched[host] = result
                    $0.fetching.remove(host)
                }
            }
            t.start()
        }
        return withLock { $0.fetched[host] != nil }
    }

    /// A numeric address for `host` (resolved when it is a name).
    static func numericAddress(_ host: String) throws -> String {
        if parseIP(host) != nil { return host }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let a = list else {
            throw InterceptError("--upstream", "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(a.pointee.ai_addr, a.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else {
            throw InterceptError("--upstream", "cannot resolve \(host)")
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The engine context for `host` under `policy`: minted on first use, then cached (like mitmproxy).
    func context(host: String, policy: InterceptPolicy) throws -> any TLSServerContext {
        let key = "\(policy.rawValue)|\(host)"
        if let hit = withLock({ $0.contexts[key] }) { return hit }
        let chain = try chain(host: host, policy: policy)
        let key8 = policy == .collision ? minters.twin.leafKeyPKCS8DER : minters.proxy.leafKeyPKCS8DER
        let configuration = ServerTLSConfiguration.makeServerConfiguration(
            chainDER: chain, privateKeyPKCS8DER: key8, name: "\(policy.rawValue):\(host)")
        let context = try engine.makeContext(configuration)
        withLock {
            if $0.contexts.count >= 10_000 { $0.contexts.removeAll() }
            $0.contexts[key] = context
        }
        return context
    }

    /// The upstream for a host: the first matching route, else the authority itself.
    func upstream(host: String, authorityHost: String, authorityPort: Int) -> (String, Int) {
        for r in configuration.upstreams where r.pattern?.matches(host) ?? true { return (r.host, r.port) }
        return (authorityHost, authorityPort)
    }

    func shutdown() {
        guard listener.beginStopping() else { return }
        listener.workers.stop()
        close(listener.listenFD)
    }
}
