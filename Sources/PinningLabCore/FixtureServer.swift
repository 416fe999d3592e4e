import Foundation

/// A local TLS server that serves one configuration through one engine, answers each HTTP/1.1 request with a
/// small JSON document and closes, and records an `Observation` per connection.
///
/// I/O model: a small fixed pool of worker threads (default 2), each running a `poll` loop over the shared
/// non-blocking listening socket and its own non-blocking connections. No connection can block a worker: a
/// stalled, silent or hostile client only holds a slot until its handshake or idle timeout.
///
/// ```swift
/// let server = try await FixtureServer.start(engine: OpenSSLEngine(), configuration: config, label: "baseline")
/// // … run a client against server.url …
/// let seen = await server.settle()          // every connection made so far, fully recorded
/// await server.stop()
/// ```
public final class FixtureServer: Sendable {
    public struct Options: Sendable {
        /// Where the server listens, its timeouts and its limits.
        public var listener: ListenerSettings
        /// Observations kept in memory; the oldest are dropped beyond this (their count is still known).
        public var maxStoredObservations: Int
        /// Called on a worker thread once per finished connection (e.g. to stream `--log` lines). Keep it short.
        public var onObservation: (@Sendable (Observation) -> Void)?
        /// How workers wait: epoll on Linux unless `.poll` is asked for (the loop other systems use), here or by
        /// the environment variable `PINLAB_EVENT_LOOP=poll` (for measuring one against the other, or as a way
        /// back should epoll misbehave somewhere).
        package var eventLoop = EventLoop.fromEnvironment
        package enum EventLoop: Sendable {
            case automatic, poll
            static let fromEnvironment: EventLoop =
                ProcessInfo.processInfo.environment["PINLAB_EVENT_LOOP"] == "poll" ? .poll : .automatic
        }

        /// The listener's settings are those of ``ListenerSettings`` (same defaults).
        public init(
            bindAddress: String = "127.0.0.1", allowNonLoopback: Bool = false, port: Int = 0,
            handshakeTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(10),
            maxConnections: Int = 512, workerThreads: Int = 2, maxStoredObservations: Int = 10_000,
            onObservation: (@Sendable (Observation) -> Void)? = nil
        ) {
            listener = ListenerSettings(
                bindAddress: bindAddress, allowNonLoopback: allowNonLoopback, port: port,
                handshakeTimeout: handshakeTimeout, idleTimeout: idleTimeout, maxConnections: maxConnections,
                workerThreads: workerThreads)
            self.maxStoredObservations = maxStoredObservations
            self.onObservation = onObservation
        }
    }

    /// The address the server listens on, e.g. `127.0.0.1`.
    public let host: String
    public let port: Int
    /// The engine's name (`openssl`, `gnutls`).
    public let engineName: String
    public let label: String
    let core: ServerCore

    /// `https://localhost:PORT/`.
    public var url: String { "https://localhost:\(port)/" }
    /// `https://127.0.0.1:PORT/` or `https://[::1]:PORT/`.
    public var addressURL: String { host.contains(":") ? "https://[\(host)]:\(port)/" : "https://\(host):\(port)/" }

    private init(host: String, port: Int, engineName: String, label: String, core: ServerCore) {
        self.host = host
        self.port = port
        self.engineName = engineName
        self.label = label
        self.core = core
    }

    /// Starts a server. Throws `TLSEngineError` with code `.unsupported` when the engine cannot serve the
    /// configuration exactly, `.invalidConfiguration` for a malformed one, `.io` when the socket cannot be bound.
    public static func start(
        engine: any TLSEngine, configuration: ServerTLSConfiguration, options: Options = .init(), label: String = ""
    ) async throws(TLSEngineError) -> FixtureServer {
        try startSync(engine: engine, configuration: configuration, options: options, label: label)
    }

    /// The same as `start`, without `async` (it never suspends: binding and starting threads take about a
    /// millisecond).
    public static func startSync(
        engine: any TLSEngine, configuration: ServerTLSConfiguration, options: Options = .init(), label: String = ""
    ) throws(TLSEngineError) -> FixtureServer {
        _ = Sockets.ignoreSIGPIPE
        try configuration.validate()
        do { try options.listener.check() } catch {
            throw TLSEngineError(.invalidConfiguration, "\(error.setting): \(error.reason); \(error.fix)")
        }
        let context = try ContextCache.shared.context(engine: engine, configuration: configuration)
        let (fd, port) = try options.listener.bind(who: "pinninglab fixture server '\(label)'")
        let core = ServerCore(
            listenFD: fd, engineName: engine.name, label: label, options: options, context: context,
            configuration: configuration, engine: engine)
        do {
            try core.startWorkers(port: port)
        } catch {
            core.shutdown()
            throw error
        }
        return FixtureServer(host: options.listener.host, port: port, engineName: engine.name, label: label, core: core)
    }

    /// A server dropped without `stop()` shuts down on a thread of its own: joining the workers blocks, and the last
    /// reference may be dropped on one of Swift's few cooperative threads (or on a thread the join would wait for).
    deinit {
        guard !core.listener.isStopping else { return }
        let core = self.core
        startThread(named: "pinninglab.drop") { core.shutdown() }
    }

    /// Observations of the connections finished so far, oldest first (at most `maxStoredObservations`).
    public func observations() -> [Observation] {
        core.withLock { Array($0.observations.suffix(core.options.maxStoredObservations)) }
    }

    /// Observations with `id > afterID`.
    public func observations(after afterID: Int) -> [Observation] {
        core.withLock { $0.observations.filter { $0.id > afterID } }
    }

    /// The HTTP/2 streams answered so far (at most `maxStoredObservations`), oldest first, each recorded the moment
    /// its request arrived — also on a connection that is still open (a client that keeps a connection for the
    /// next request). `sequence` numbers them from 1 per server.
    public func http2Streams(after sequence: Int = 0) -> [ObservedHTTP2Stream] {
        core.withLock { $0.streams.filter { $0.sequence > sequence } }
    }

    /// How many connections have been accepted so far (the id of the latest one).
    public var connectionsAccepted: Int { core.withLock { $0.accepted } }
    /// Connections accepted and not yet finished.
    public var connectionsOpen: Int { core.withLock { $0.inFlight } }
    /// How many ``observations()`` there are now, without copying them.
    public var observationCount: Int {
        core.withLock { min($0.observations.count, core.options.maxStoredObservations) }
    }

    /// Waits until at least `count` connections have finished (or the server stopped, or `timeout`), and
    /// returns all observations.
    public func waitForObservations(count: Int, timeout: Duration = .seconds(10)) async -> [Observation] {
        _ = await core.wait(.count(count), timeout: timeout)
        return observations()
    }

    /// Waits until every connection that reached the server so far — accepted, or still in the listen queue —
    /// has finished and been recorded, then returns all observations. A runner calls this after its client has
    /// exited to get the observation(s) of that client's connection(s). Returns `nil` on timeout.
    @discardableResult
    public func settle(timeout: Duration = .seconds(10)) async -> [Observation]? {
        guard await core.wait(.idle, timeout: timeout) else { return nil }
        return observations()
    }

    /// The configuration currently served and its generation (0, then 1 after the first rotation…).
    public var configuration: (ServerTLSConfiguration, generation: Int) {
        core.withLock { ($0.configuration, $0.generation) }
    }

    /// Live rotation: connections accepted from now on are served `configuration`; open ones finish with the
    /// old one. Throws (and keeps the old configuration) when the engine cannot serve the new one.
    public func rotate(to configuration: ServerTLSConfiguration) throws(TLSEngineError) {
        let context = try servable(configuration)
        core.withLock {
            $0.context = context
            $0.configuration = configuration
            $0.generation += 1
        }
    }

    /// Scheduled rotation: the connection numbered `connection` (1 for the first this server accepts, 2…) and every
    /// later one are served `configuration`; the connections before it keep what they were served. The switch
    /// happens as that connection is accepted, under the server's lock, so a client that opens its connections back
    /// to back (a batch harness, one process making every step) meets the new certificate on exactly that one, with
    /// no moment to miss. Several may be scheduled; a number already accepted takes effect with the next
    /// connection. Throws (and schedules nothing) when the engine cannot serve `configuration`.
    public func rotate(to configuration: ServerTLSConfiguration, fromConnection connection: Int) throws(TLSEngineError)
    {
        let context = try servable(configuration)
        core.withLock { s in
            s.scheduled.append(.init(from: max(1, connection), context: context, configuration: configuration))
            s.scheduled.sort { $0.from < $1.from }
        }
    }

    /// The engine's context for `configuration`, checked first: what both rotations install.
    private func servable(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext {
        try configuration.validate()
        return try core.makeContext(configuration)
    }

    /// The listening socket and the workers' wake-up pipes (for leak checks in tests).
    var ownDescriptors: [Int32] { [core.listener.listenFD] + core.pipeDescriptors }

    /// Stops accepting, closes every open connection (recorded as `server-stopped`), joins the worker threads
    /// and closes the listening socket. Idempotent. Joining threads blocks, so it happens on a thread of its own:
    /// awaiting `stop()` never occupies a thread of Swift's cooperative pool.
    public func stop() async {
        let core = self.core
        await onDedicatedThread(named: "pinninglab.stop") { core.shutdown() }
    }

    /// The same as `stop`, blocking the calling thread until the workers are joined (for synchronous code).
    public func stopSync() { core.shutdown() }
}

extension FixtureServer {
    /// Starts a server, runs `body`, and stops the server even if `body` throws.
    public static func withServer<T>(
        engine: any TLSEngine, configuration: ServerTLSConfiguration, options: Options = .init(), label: String = "",
        _ body: (FixtureServer) async throws -> T
    ) async throws -> T {
        let server = try await start(engine: engine, configuration: configuration, options: options, label: label)
        return try await stopping(server, stop: { await $0.stop() }, body)
    }
}
