import Foundation
import PinningLabBase
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

/// Runs blocking `work` (joining threads, a blocking handshake, waiting for a child process) on a thread of its own
/// named `name` (at most 15 bytes are kept) and awaits its result, so that no thread of Swift's cooperative pool is
/// held while it blocks. Work that throws returns a `Result` and the caller `get()`s it.
package func onDedicatedThread<T: Sendable>(named name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        startThread(named: name) { done.resume(returning: work()) }
    }
}

/// Starts `work` on a thread of its own named `name` (at most 15 bytes are kept), never on Swift's cooperative
/// pool, and returns at once: the one way this package runs something off the pool without awaiting it. The
/// thread is one that finished earlier work and waits for more (``BlockingThreads``), or a new one; with
/// `stackSize` always a new one.
package func startThread(named name: String, stackSize: Int? = nil, _ work: @escaping @Sendable () -> Void) {
    let named: @Sendable () -> Void = {
        Sockets.nameCurrentThread(name)
        work()
    }
    if let stackSize {
        let t = Thread(block: named)
        t.stackSize = stackSize
        t.start()
    } else {
        BlockingThreads.shared.run(named)
    }
}

/// Threads for blocking work, kept for the next piece of work when they finish one: starting a thread (clone,
/// stack, thread-local state, a malloc arena) cost more than a cell's own work in `pinlab check` (one client run, one
/// server stop per cell). Each piece of work still has a thread to itself for as long as it runs: a thread takes
/// new work only once it is idle, and a new thread starts whenever none is. At most `maximumIdle` wait, each for at
/// most `idleTime`, then they end; a waiting thread is named `pinlab.idle`.
final class BlockingThreads: Sendable {
    static let shared = BlockingThreads(maximumIdle: 8, idleTime: .seconds(2))

    /// One idle thread: woken with its next piece of work.
    private final class Waiting: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let work = Locked<(@Sendable () -> Void)?>(nil)
    }
    private let idle = Locked<[Waiting]>([])
    private let maximumIdle: Int
    private let idleTime: Duration

    init(maximumIdle: Int, idleTime: Duration) {
        self.maximumIdle = maximumIdle
        self.idleTime = idleTime
    }

    /// Runs `work` on an idle thread, or on a new one when none is idle.
    func run(_ work: @escaping @Sendable () -> Void) {
        if let waiting = idle.withLock({ $0.popLast() }) {
            waiting.work.withLock { $0 = work }
            waiting.wake.signal()
            return
        }
        Thread { [self] in serve(work) }.start()
    }

    /// How many threads wait for work now.
    var idleCount: Int { idle.withLock { $0.count } }

    private func serve(_ first: @escaping @Sendable () -> Void) {
        var next: (@Sendable () -> Void)? = first
        while let work = next {
            work()
            next = nil
            Sockets.nameCurrentThread("pinlab.idle")
            let me = Waiting()
            guard
                idle.withLock({ all -> Bool in
                    guard all.count < maximumIdle else { return false }
                    all.append(me)
                    return true
                })
            else { return }
            let seconds = Double(idleTime.components.seconds) + Double(idleTime.components.attoseconds) / 1e18
            if me.wake.wait(timeout: .now() + seconds) == .timedOut {
                // Leave the list, unless `run` took this thread meanwhile: then its work is on the way.
                let taken = idle.withLock { all -> Bool in
                    guard let i = all.firstIndex(where: { $0 === me }) else { return true }
                    all.remove(at: i)
                    return false
                }
                guard taken else { return }
                me.wake.wait()
            }
            next = me.work.withLock { w in
                defer { w = nil }
                return w
            }
        }
    }
}
