import Foundation
import PinningLabPKI  // Locked

/// A worker of a ``WorkerPool``: runs its loop on its own thread until its listener is stopping; `wakeUp` interrupts
/// its wait.
package protocol PooledWorker: AnyObject {
    var wakeUp: WakePipe { get }
    func run()
}

/// The worker threads of one listener (a fixture server, the interception proxy): started together, then woken,
/// joined and their wake-up pipes closed together. Used only by its listener's start and shutdown, which the
/// listener serialises; the lists are behind a lock all the same, so the pool is `Sendable` without a promise.
package final class WorkerPool: Sendable {
    private struct Members {
        var workers: [any PooledWorker] = []
        var threads: [WorkerThread] = []
    }
    private let members = Locked(Members())

    package init() {}

    var workers: [any PooledWorker] { members.withLock { $0.workers } }

    /// Starts `count` workers made by `make`, each on a thread `name(n)` (at most 15 bytes are kept). On a failure
    /// the workers already started keep running: the listener's shutdown stops them.
    package func start(
        count: Int, name: (Int) -> String, make: (Int) throws(TLSEngineError) -> any PooledWorker
    ) throws(TLSEngineError) {
        for i in 0..<count {
            let worker = try make(i)
            members.withLock { $0.workers.append(worker) }
            let thread = try WorkerThread(name: name(i)) { worker.run() }
            members.withLock { $0.threads.append(thread) }
        }
    }

    /// Wakes every worker (the listener has marked itself stopping, so each loop ends), joins their threads, closes
    /// their pipes and drops them: each worker holds its listener's core, so this breaks the cycle and a stopped
    /// listener frees its state.
    package func stop() {
        let taken = members.withLock { m in
            defer { m = Members() }
            return m
        }
        for w in taken.workers { w.wakeUp.wake() }
        for t in taken.threads { t.join() }
        for w in taken.workers { w.wakeUp.closeEnds() }
    }

    /// The wake-up pipes' descriptors, for tests that count what a server owns.
    package var pipeDescriptors: [Int32] { workers.flatMap(\.wakeUp.descriptors) }
}

/// Runs blocking `work` (joining threads, a blocking handshake, waiting for a child process) on a new thread named
/// `name` (at most 15 bytes are kept) and awaits its result, so that no thread of Swift's cooperative pool is held
/// while it blocks. Work that throws returns a `Result` and the caller `get()`s it.
package func onDedicatedThread<T: Sendable>(named name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        startThread(named: name) { done.resume(returning: work()) }
    }
}

/// Starts `work` on a new thread named `name` (at most 15 bytes are kept), never on Swift's cooperative pool, and
/// returns at once: the one way this package runs something off the pool without awaiting it.
package func startThread(named name: String, stackSize: Int? = nil, _ work: @escaping @Sendable () -> Void) {
    let t = Thread {
        Sockets.nameCurrentThread(name)
        work()
    }
    if let stackSize { t.stackSize = stackSize }
    t.start()
}
