public import Foundation
public import PinningLabCore
import PinningLabEngines
public import PinningLabPKI
import PinningLabReferenceClients

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
/// It is no relay: a destination taken from the client (the `CONNECT` authority) that is, or resolves to, a
/// loopback, link-local, unspecified, private-range, multicast or broadcast address is refused (`403` with the
/// reason) unless an `upstreams` route names it; name look-ups run on a few threads of their own with a bounded
/// time, never on a worker. Off loopback it serves only peers in ``Configuration/allowedPeers``.
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
        /// The peers served besides this machine's own (loopback) ones: required when the listener is off
        /// loopback (`--allow-peer`, e.g. the phone's `192.168.1.23/32`); empty on loopback, where every peer is
        /// local.
        public var allowedPeers: [AddressRange]
        /// How long a passthrough name look-up may take (then `502`).
        package var lookupTimeout: Duration = .seconds(5)
        /// Look-up threads, and look-ups queued or running at once (more get `503`).
        package var lookupThreads = 4
        package var maxPendingLookups = 64
        /// Resolves upstream names (tests make one slow); nil: the system's `getaddrinfo`.
        package var resolver: NameResolver?
        /// `--learn`: once a host refused an intercepted connection (no request sent), its later connections are
        /// passed through to the upstream, so the app keeps working and reveals its other hosts (mitmproxy's
        /// conservative strategy). The host's verdict stays the one its intercepted connections earned.
        public var learn = false
        /// How many finished connections the session lists (``InterceptReport/connections``); older ones are let
        /// go and stay counted in their host's verdict, so memory stays bounded however long `pinlab intercept` runs.
        public var keepConnections = 10_000

        /// The proxy's listener defaults to 127.0.0.1, a free port, a 30 s idle timeout and 2,048 connections.
        public static let defaultListener = ListenerSettings(idleTimeout: .seconds(30), maxConnections: 2048)

        public init(
            listener: ListenerSettings = Configuration.defaultListener, pinned: [HostPattern] = [],
            policies: PolicyTable = PolicyTable(), upstreams: [UpstreamRoute] = [], genuineChainDER: [[UInt8]] = [],
            genuineChainFromUpstream: Bool = false, engine: String = "openssl", allowedPeers: [AddressRange] = []
        ) {
            self.listener = listener
            self.pinned = pinned
            self.policies = policies
            self.upstreams = upstreams
            self.genuineChainDER = genuineChainDER
            self.genuineChainFromUpstream = genuineChainFromUpstream
            self.engine = engine
            self.allowedPeers = allowedPeers
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
            throw InterceptError(
                error.setting == "bindAddress" ? "--listen" : error.setting, error.reason, fix: error.fix)
        }
        if !Sockets.isLoopback(c.listener.bindAddress) && c.allowedPeers.isEmpty {
            throw InterceptError(
                "--allow-peer",
                "refusing to listen on \(c.listener.bindAddress), off loopback, without an allow-list: anyone "
                    + "who can reach this machine could use the proxy",
                fix: "add --allow-peer 192.168.1.23/32 (the phone's address; repeatable, CIDR, IPv6 too)")
        }
        guard let engine = Engines.engine(named: c.engine) else {
            throw InterceptError(
                "--engine", "'\(c.engine)' is not an engine", fix: "use \(Engines.names.joined(separator: " or "))")
        }
        func identity(_ name: String) throws -> Identity {
            guard let id = pki[name] else {
                throw InterceptError(
                    "pki", "the lab PKI has no '\(name)'",
                    fix: "use the built-in pki/lab.yaml or add '\(name)' to your spec")
            }
            return id
        }
        let proxyRoot = try c.proxyRoot ?? identity("proxy-root")
        let twin = try identity("twin-intermediate-a")
        let genuineIssuer = try identity("lab-intermediate-a")
        let genuine: [[UInt8]]
        if c.genuineChainDER.isEmpty {
            genuine = try ["leaf-v1", "lab-intermediate-a", "lab-root"].map { try identity($0).certificateDER }
        } else {
            genuine = c.genuineChainDER
        }
        let minters = ProxyCore.Minters(
            proxy: try LeafMinter(issuer: proxyRoot), twin: try LeafMinter(issuer: twin),
            twinChain: [twin.certificateDER],
            genuine: genuine, genuineIssuer: try LeafMinter(issuer: genuineIssuer),
            genuineIssuerChain: [genuineIssuer.certificateDER])
        let listening: (fd: Int32, port: Int)
        do {
            listening = try c.listener.bind(who: "pinlab intercept")
        } catch {
            throw InterceptError(
                "--listen", "cannot listen on \(c.listener.bindAddress):\(c.listener.port): \(error.reason)",
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

    /// Connections closed unserved because their peer is not in ``Configuration/allowedPeers``, and the first
    /// hundred such peers' addresses.
    public var peersRefused: (count: Int, addresses: [String]) {
        core.withLock { ($0.peersRefused, $0.refusedPeerAddresses) }
    }

    /// The connections finished so far, oldest first: the latest ``Configuration/keepConnections`` of them.
    public func observations() -> [InterceptObservation] { core.withLock { $0.tally.latest } }

    /// The listening descriptor's number (for tests of what happens after it is closed).
    package var listeningDescriptorForTesting: Int32 { core.listener.listenFD }

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
            if connectionsOpen == 0 && !hasPendingConnection { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Whether a connection waits in the listen queue. Asked under the lock and only while the proxy is not stopping:
    /// `shutdown` marks stopping under the lock before it closes the descriptor, so a stopped proxy never polls a
    /// closed descriptor — or one the process has since reused for something else.
    private var hasPendingConnection: Bool {
        let fd = core.listener.listenFD
        return core.withLock { s in !s.stopping && Sockets.hasPendingConnection(fd) }
    }

    /// The verdict per host against the declared pins.
    public func report(startedAt: Date? = nil, durationSeconds: Double = 0) -> InterceptReport {
        let refused = peersRefused
        return InterceptReport(
            proxy: address, engine: configuration.engine, pinned: configuration.pinned,
            policies: configuration.policies,
            startedAt: startedAt ?? core.startedAt, durationSeconds: durationSeconds, tally: core.withLock { $0.tally },
            peersRefused: refused.count, refusedPeers: refused.addresses)
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
    /// Where a passthrough tunnel went (set once it is dialled; a refused destination has none).
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
    /// How it ended: `response-sent`, `alert`, `eof-before-handshake`, `tunnel-closed`, `not-connect`,
    /// `destination-refused` (the client named a loopback or private destination: `error` says which), …
    public var closure: String
    public var error: String?
    /// Where the appended genuine chain came from (`stuff`): `lab`, `file`, `upstream 127.0.0.1:8443`, or why the
    /// upstream's could not be fetched.
    public var genuineChain: String?
    public var totalMilliseconds: Double

    /// The client refused this intercepted connection: TLS was terminated by the proxy, and no request was sent
    /// (an alert, a close during or after the handshake, a timeout) — not a proxy error or a refused destination.
    public var refusedInterception: Bool {
        guard policy?.intercepts ?? false, !applicationDataReceived, host != nil else { return false }
        return ![
            "proxy-error", "not-tls", "upstream-timeout", "upstream-unreachable", InterceptReport.destinationRefused,
        ].contains(closure)
    }

    /// How the client refused, in words: `sent the alert bad_certificate`, `closed during the handshake without an
    /// alert`, `completed the handshake and sent nothing`; nil when it did not refuse.
    public var refusalDescription: String? {
        guard refusedInterception else { return nil }
        // close_notify is how a client ends a connection cleanly (curl after a pin mismatch): not an error alert.
        if alertReceived == "close_notify" {
            return handshakeCompleted
                ? "completed the handshake, then closed cleanly (close_notify) without a request"
                : "closed cleanly (close_notify) during the handshake, without an error alert"
        }
        if let alertReceived { return "sent the alert \(alertReceived)" }
        if handshakeCompleted { return "completed the handshake and sent nothing" }
        return "closed during the handshake without an alert"
    }
}

// MARK: - Core

final class ProxyCore: Sendable {  // its mutable state is `listener`'s, under that lock; workers own their connections
    struct Minters {
        var proxy: LeafMinter
        var twin: LeafMinter
        var twinChain: [[UInt8]]
        var genuine: [[UInt8]]
        /// `foreign-host`: the genuine issuing CA's minter and chain.
        var genuineIssuer: LeafMinter
        var genuineIssuerChain: [[UInt8]]
    }
    struct State: ListenerState {
        /// Per-host verdict material and the latest connections (bounded).
        var tally: SessionTally
        var accepted = 0
        var inFlight = 0
        var stopping = false
        var lastActivity = Date()
        var contexts: [String: any TLSServerContext] = [:]
        /// Chains fetched from upstreams (`genuineChainFromUpstream`), with where they came from; a host being
        /// fetched has no entry yet and is in `fetching`.
        var fetched: [String: (chain: [[UInt8]], source: String)] = [:]
        var fetching: Set<String> = []
        /// Connections closed unserved: their peer is not in `allowedPeers`; the first hundred peers' addresses.
        var peersRefused = 0
        var refusedPeerAddresses: [String] = []
        /// `--learn`: hosts that refused an intercepted connection, passed through from then on.
        var learned: Set<String> = []
    }

    let listener: ListenerCore<State>
    let configuration: InterceptProxy.Configuration
    let engine: any TLSEngine
    let minters: Minters
    let startedAt = Date()
    /// Where name look-ups and genuine-chain fetches run.
    let lookups: LookupPool
    let resolver: NameResolver

    init(listenFD: Int32, configuration: InterceptProxy.Configuration, engine: any TLSEngine, minters: Minters) {
        self.configuration = configuration
        self.engine = engine
        self.minters = minters
        lookups = LookupPool(maxThreads: configuration.lookupThreads, maxPending: configuration.maxPendingLookups)
        resolver = configuration.resolver ?? SystemResolver.resolve
        listener = ListenerCore(
            listenFD: listenFD, settings: configuration.listener,
            state: State(tally: SessionTally(keepConnections: configuration.keepConnections)))
    }

    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T { try listener.withLock(body) }

    func startWorkers(port: Int) throws(TLSEngineError) {
        try listener.workers.start(
            count: configuration.listener.workerThreads, name: { "pli\(port)-\($0)" },
            make: { _ throws(TLSEngineError) in try ProxyWorker(core: self) })
    }

    enum Admission {
        case serve(fd: Int32, peer: String, id: Int)
        /// A peer outside `allowedPeers`: closed at once, counted, not served.
        case refused
    }

    func acceptOne() -> Admission? {
        let admitted = listener.acceptOne { s, fd, peer -> (Admission, newPeer: String?) in
            guard configuration.admits(peer: peer) else {
                s.accepted -= 1  // not a connection of the session: counted apart
                s.inFlight -= 1
                s.peersRefused += 1
                close(fd)
                let address = Authority.split(peer)?.host ?? peer
                guard !s.refusedPeerAddresses.contains(address), s.refusedPeerAddresses.count < 100 else {
                    return (.refused, nil)
                }
                s.refusedPeerAddresses.append(address)
                return (.refused, address)
            }
            s.lastActivity = Date()
            return (.serve(fd: fd, peer: peer, id: s.accepted), nil)
        }
        if let address = admitted?.newPeer {
            FileHandle.standardError.write(
                Data(
                    "pinlab intercept: closed a connection from \(address) unserved: not in --allow-peer (add --allow-peer \(address)\(address.contains(":") ? "/128" : "/32") if it is your device)\n"
                        .utf8))
        }
        return admitted?.0
    }

    func record(_ o: InterceptObservation) {
        let learn = configuration.learn
        withLock {
            $0.inFlight -= 1
            $0.tally.add(o)
            $0.lastActivity = Date()
            if learn, let host = o.host, o.refusedInterception, $0.learned.count < SessionTally.maxHosts {
                $0.learned.insert(host)
            }
        }
    }

    /// The policy for `host`: passthrough once it refused under `--learn`, else the configured one.
    func policy(for host: String) -> InterceptPolicy {
        if configuration.learn, withLock({ $0.learned.contains(host) }) { return .passthrough }
        return configuration.policies.policy(for: host)
    }

    /// The chain presented for `host` under an intercepting `policy`.
    func chain(host: String, policy: InterceptPolicy) throws -> [[UInt8]] {
        switch policy {
        case .mint: return [try minters.proxy.mint(host: host)]
        case .stuff: return [try minters.proxy.mint(host: host)] + genuine(for: host).chain
        case .collision: return [try minters.twin.mint(host: host)] + minters.twinChain
        case .foreignHost:
            return [try minters.genuineIssuer.mint(host: InterceptPolicy.foreignName(for: host))]
                + minters.genuineIssuerChain
        case .passthrough: return []
        }
    }

    /// The genuine chain appended for `host` and where it came from.
    func genuine(for host: String) -> (chain: [[UInt8]], source: String) {
        if configuration.genuineChainFromUpstream, let f = withLock({ $0.fetched[host] }) { return f }
        return (minters.genuine, configuration.genuineChainDER.isEmpty ? "lab" : "file")
    }

    /// Whether `host`'s genuine chain is ready; starts fetching it (on a look-up thread) when not. The fetch is a
    /// dial like a tunnel's: a destination taken from the client is vetted the same way (``Configuration``'s
    /// `refusal`), against every address its name resolves to, and the vetted address is the one dialled.
    func genuineReady(host: String, authorityHost: String, authorityPort: Int) -> Bool {
        guard configuration.genuineChainFromUpstream else { return true }
        let start = withLock { s -> Bool in
            if s.fetched[host] != nil || s.fetching.contains(host) { return false }
            s.fetching.insert(host)
            return true
        }
        if start {
            let target = configuration.upstream(host: host, authorityHost: authorityHost, authorityPort: authorityPort)
            let configuration = self.configuration
            let fallback = minters.genuine
            let fallbackName = configuration.genuineChainDER.isEmpty ? "lab" : "file"
            let resolver = self.resolver
            // The job holds the core weakly: a look-up thread may outlive the proxy.
            let submitted = lookups.submit { [weak self] in
                let result: (chain: [[UInt8]], source: String)
                let addresses: NameResolution =
                    AddressRange.bytes(target.host) != nil ? .success([target.host]) : resolver(target.host)
                switch addresses {
                case .failure(let failure):
                    result = (
                        fallback,
                        "the upstream's chain could not be fetched (cannot resolve \(target.host): \(failure.reason)); appended the \(fallbackName)'s"
                    )
                case .success(let list):
                    if let why = configuration.refusal(target, addresses: list) {
                        result = (
                            fallback, "the upstream's chain was not fetched: \(why); appended the \(fallbackName)'s"
                        )
                    } else {
                        do {
                            let chain = try PresentedChain.fetch(ip: list[0], port: target.port, serverName: host)
                            result = (chain, "upstream \(target.text)")
                        } catch {
                            result = (
                                fallback,
                                "the upstream's chain could not be fetched (\(error)); appended the \(fallbackName)'s"
                            )
                        }
                    }
                }
                self?.withLock {
                    $0.fetched[host] = result
                    $0.fetching.remove(host)
                }
            }
            if !submitted {
                withLock {
                    $0.fetched[host] = (
                        fallback,
                        "the upstream's chain was not fetched: \(lookups.maxPending) look-ups are pending; appended the \(fallbackName)'s"
                    )
                    $0.fetching.remove(host)
                }
            }
        }
        return withLock { $0.fetched[host] != nil }
    }

    /// The engine context for `host` under `policy`: minted on first use, then cached (like mitmproxy).
    func context(host: String, policy: InterceptPolicy) throws -> any TLSServerContext {
        let key = "\(policy.rawValue)|\(host)"
        if let hit = withLock({ $0.contexts[key] }) { return hit }
        let chain = try chain(host: host, policy: policy)
        let key8: [UInt8]
        switch policy {
        case .collision: key8 = minters.twin.leafKeyPKCS8DER
        case .foreignHost: key8 = minters.genuineIssuer.leafKeyPKCS8DER
        case .mint, .stuff, .passthrough: key8 = minters.proxy.leafKeyPKCS8DER
        }
        let configuration = ServerTLSConfiguration.makeServerConfiguration(
            chainDER: chain, privateKeyPKCS8DER: key8, name: "\(policy.rawValue):\(host)")
        let context = try engine.makeContext(configuration)
        withLock {
            if $0.contexts.count >= 10_000 { $0.contexts.removeAll() }
            $0.contexts[key] = context
        }
        return context
    }

    func shutdown() {
        guard listener.beginStopping() else { return }
        lookups.stop()
        listener.workers.stop()
        close(listener.listenFD)
    }
}
