import Foundation
import PinningLabCore
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One worker thread of the interception proxy: a `poll` loop (`PollSet`) over a wake-up pipe, the shared listening socket
/// and the connections it accepted (two descriptors each: the client and, for a tunnel, the upstream). The pipe is
/// also how a name look-up (on a `LookupPool` thread) says it is done: its connection is then due at once.
// `connections` is touched only by the worker's own thread
final class ProxyWorker: PooledWorker, @unchecked Sendable {
    private let core: ProxyCore
    /// Woken by the server's stop; closed by it once this worker's thread has ended.
    let wakeUp: WakePipe
    private var connections: [ProxyConnection] = []

    init(core: ProxyCore) throws(TLSEngineError) {
        self.core = core
        wakeUp = try WakePipe()
    }

    func run() {
        var pollSet = PollSet()
        pollSet.run(&connections, core: core.listener, wake: wakeUp) { c, set in
            set.add(c.fd, c.clientEvents)
            set.add(c.upstreamFD, c.upstreamEvents)
            return c.lookupDone ? 0 : min(c.deadline, c.retryAt)
        } serve: { c, ready, now in
            if ready || c.retryAt <= now || c.lookupDone { c.advance() } else { c.timedOut() }
            return c.isFinished
        } accept: { list in
            for _ in 0..<32 {  // a bounded batch, so that a burst cannot starve the open connections
                guard let admission = core.acceptOne() else { break }
                // closed: not an allowed peer
                guard case .serve(let fd, let peer, let id) = admission else { continue }
                let c = ProxyConnection(core: core, fd: fd, peer: peer, id: id, wake: wakeUp)
                c.advance()
                if !c.isFinished { list.append(c) }
            }
        }
        for c in connections { c.finish("proxy-stopped", error: nil) }
        connections.removeAll()
    }
}
