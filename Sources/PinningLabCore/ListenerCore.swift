import Foundation
import PinningLabBase
import PinningLabPKI  // Locked

/// What every listener counts under its lock, next to its own fields.
package protocol ListenerState {
    /// Connections accepted so far (the last one's id).
    var accepted: Int { get set }
    /// Connections accepted and not yet recorded as finished.
    var inFlight: Int { get set }
    var stopping: Bool { get set }
}

/// The part of a listener's core that a fixture server (`ServerCore`) and the interception proxy (`ProxyCore`)
/// share: the listening socket and its timeouts, the worker threads, and the state guarded by one lock, counted on
/// accept and marked on stop. Each core holds one and adds what it records and how it stops.
package final class ListenerCore<State: ListenerState>: Sendable {
    package let listenFD: Int32
    /// The handshake and idle timeouts in nanoseconds of `Sockets.now()`.
    package let handshakeTimeout: UInt64
    package let idleTimeout: UInt64
    package let workers = WorkerPool()
    private let maxConnections: Int
    private let state: Locked<State>

    /// Takes over `listenFD`: the owning core's shutdown closes it.
    package init(listenFD: Int32, settings: ListenerSettings, state: State) {
        self.listenFD = listenFD
        handshakeTimeout = Sockets.nanoseconds(settings.handshakeTimeout)
        idleTimeout = Sockets.nanoseconds(settings.idleTimeout)
        maxConnections = settings.maxConnections
        self.state = Locked(state)
    }

    package func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T { try state.withLock(body) }

    package var isStopping: Bool { withLock { $0.stopping } }

    /// Whether a worker may accept: below the connection cap and not stopping.
    package func mayAccept() -> Bool { withLock { !$0.stopping && $0.inFlight < maxConnections } }

    /// Accepts one pending connection when below the cap and not stopping, counting it accepted and in flight in the
    /// same critical section (so a settle never sees a connection that is neither queued nor counted); `admit` reads
    /// what else the connection needs from that state. Nil when nothing was accepted.
    package func acceptOne<T>(_ admit: (inout State, _ fd: Int32, _ peer: String) -> T) -> T? {
        withLock { s in
            guard !s.stopping, s.inFlight < maxConnections, let (fd, peer) = Sockets.accept(listenFD) else {
                return nil
            }
            s.accepted += 1
            s.inFlight += 1
            return admit(&s, fd, peer)
        }
    }

    /// Marks the listener stopping (with whatever else `note` records); true for the first caller only, which then
    /// stops the workers and closes the socket.
    package func beginStopping(_ note: (inout State) -> Void = { _ in }) -> Bool {
        withLock { s in
            if s.stopping { return false }
            s.stopping = true
            note(&s)
            return true
        }
    }
}
