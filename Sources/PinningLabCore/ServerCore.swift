import Foundation

/// The shared state of a server: every mutable field is in `listener`'s state, guarded by its lock.
final class ServerCore: Sendable {
    struct State: ListenerState {
        var context: any TLSServerContext
        var configuration: ServerTLSConfiguration
        var generation = 0
        /// Rotations that take effect by connection number (``FixtureServer/rotate(to:fromConnection:)``), in order.
        var scheduled: [ScheduledRotation] = []
        var observations: [Observation] = []
        /// HTTP/2 streams, recorded as they arrive (`recordStream`).
        var streams: [ObservedHTTP2Stream] = []
        var streamsRecorded = 0
        var recorded = 0
        var accepted = 0
        var inFlight = 0
        var stopping = false
        var stopped = false
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        /// The name of the thread that ran `shutdown` (tests check that `stop()` keeps it off the pool).
        var shutdownThread: String?
    }

    /// A configuration served from the connection numbered `from` (1, 2, …) on.
    struct ScheduledRotation {
        var from: Int
        var context: any TLSServerContext
        var configuration: ServerTLSConfiguration
    }

    enum Predicate {
        case count(Int)
        case idle
    }

    struct Waiter {
        var predicate: Predicate
        var continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
    }

    let listener: ListenerCore<State>
    let engineName: String
    let label: String
    let options: Options
    private let engine: any TLSEngine

    typealias Options = FixtureServer.Options

    init(
        listenFD: Int32, engineName: String, label: String, options: Options, context: any TLSServerContext,
        configuration: ServerTLSConfiguration, engine: any TLSEngine
    ) {
        self.engineName = engineName
        self.label = label
        self.options = options
        self.engine = engine
        listener = ListenerCore(
            listenFD: listenFD, settings: options.listener, state: State(context: context, configuration: configuration)
        )
    }

    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T { try listener.withLock(body) }

    func makeContext(_ c: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext {
        try ContextCache.shared.context(engine: engine, configuration: c)
    }

    /// Starts the workers; threads are named `pl<port>-<n>`.
    func startWorkers(port: Int) throws(TLSEngineError) {
        try listener.workers.start(
            count: options.listener.workerThreads, name: { "pl\(port)-\($0)" },
            make: { i throws(TLSEngineError) in try Worker(core: self, index: i) })
    }

    // MARK: accepting and recording (called by workers)

    var pipeDescriptors: [Int32] { listener.workers.pipeDescriptors }
    var workersForTesting: [AnyObject] { listener.workers.workers }
    var shutdownThreadName: String? { withLock { $0.shutdownThread } }

    /// Accepts one pending connection with the chain and context it is served (see `ListenerCore.acceptOne`).
    func acceptOne() -> Accepted? {
        listener.acceptOne { s, fd, peer in
            // A scheduled rotation takes effect as the connection it names is accepted, before it is served.
            while let next = s.scheduled.first, s.accepted >= next.from {
                s.context = next.context
                s.configuration = next.configuration
                s.generation += 1
                s.scheduled.removeFirst()
            }
            return Accepted(
                fd: fd, peer: peer, id: s.accepted, context: s.context, generation: s.generation,
                identities: s.configuration.identities)
        }
    }

    /// A connection just accepted, with what it is served.
    struct Accepted {
        var fd: Int32
        var peer: String
        var id: Int
        var context: any TLSServerContext
        var generation: Int
        var identities: [ServerIdentity]
    }

    /// An HTTP/2 request that reached the server, recorded at once (its connection may stay open).
    func recordStream(connection: Int, serverName: String?, stream: HTTP2Stream) {
        withLock { s in
            s.streamsRecorded += 1
            s.streams.append(
                ObservedHTTP2Stream(
                    sequence: s.streamsRecorded, connection: connection, serverName: serverName, stream: stream))
            let limit = options.maxStoredObservations
            if s.streams.count > limit + max(limit / 4, 16) { s.streams.removeFirst(s.streams.count - limit) }
        }
    }

    func record(_ observation: Observation) {
        var ready: [CheckedContinuation<Bool, Never>] = []
        var timers: [Task<Void, Never>] = []
        withLock { s in
            s.inFlight -= 1
            s.recorded += 1
            s.observations.append(observation)
            // Trim in batches so that a long-running server does not move the whole array on every connection.
            let limit = options.maxStoredObservations
            if s.observations.count > limit + max(limit / 4, 16) {
                s.observations.removeFirst(s.observations.count - limit)
            }
            collectReady(&s, &ready, &timers)
        }
        for t in timers { t.cancel() }
        for c in ready { c.resume(returning: true) }
        options.onObservation?(observation)
    }

    private func satisfied(_ p: Predicate, _ s: State) -> Bool {
        if s.stopped { return true }
        switch p {
        case .count(let n): return s.recorded >= n
        case .idle: return s.inFlight == 0 && !Sockets.hasPendingConnection(listener.listenFD)
        }
    }

    private func collectReady(
        _ s: inout State, _ ready: inout [CheckedContinuation<Bool, Never>], _ timers: inout [Task<Void, Never>]
    ) {
        for (id, w) in s.waiters where satisfied(w.predicate, s) {
            ready.append(w.continuation)
            if let t = w.timer { timers.append(t) }
            s.waiters[id] = nil
        }
    }

    func wait(_ predicate: Predicate, timeout: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let registered = withLock { s -> Int? in
                if satisfied(predicate, s) { return nil }
                let id = s.nextWaiter
                s.nextWaiter += 1
                s.waiters[id] = Waiter(predicate: predicate, continuation: continuation, timer: nil)
                return id
            }
            guard let id = registered else {
                continuation.resume(returning: true)
                return
            }
            let timer = Task { [self] in
                try? await Task.sleep(for: timeout)
                if Task.isCancelled { return }
                let waiter: Waiter? = withLock { s in
                    defer { s.waiters[id] = nil }
                    return s.waiters[id]
                }
                waiter?.continuation.resume(returning: false)
            }
            let orphan = withLock { s -> Bool in
                if s.waiters[id] != nil {
                    s.waiters[id]!.timer = timer
                    return false
                }
                return true
            }
            if orphan { timer.cancel() }
        }
    }

    // MARK: shutdown

    func shutdown() {
        guard listener.beginStopping({ $0.shutdownThread = Sockets.currentThreadName() }) else { return }
        // Each worker holds this core; the pool drops them, so a stopped server frees its observations, its engine
        // context and its buffers (issue 8: ~12 KiB per stopped server before).
        listener.workers.stop()
        var ready: [CheckedContinuation<Bool, Never>] = []
        var timers: [Task<Void, Never>] = []
        withLock { s in
            s.stopped = true
            collectReady(&s, &ready, &timers)
        }
        // Closed only once `stopped` is set (under the lock): `satisfied` never polls a closed (or reused) descriptor.
        close(listener.listenFD)
        for t in timers { t.cancel() }
        for c in ready { c.resume(returning: true) }
    }
}
