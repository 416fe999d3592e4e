import Foundation
import PinningLabBase
import PinningLabPKI

/// Runs `work` and returns its result, or `nil` once `limit` has passed — whether or not `work` cooperates with
/// cancellation. A task group cannot do this: it waits for every child, so a client that ignores cancellation (a
/// blocking call, a continuation never resumed) held the whole run. Here `work` runs in a task of its own, which is
/// cancelled and left behind at the deadline; its late result is dropped.
package func raceAgainstDeadline<T: Sendable>(_ limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T?
{
    let waiter = Locked<CheckedContinuation<T?, Never>?>(nil)
    let tasks = Locked<[Task<Void, Never>]>([])
    /// Resumes the caller once; later calls do nothing.
    @Sendable func finish(_ value: T?) {
        guard
            let c = waiter.withLock({ w -> CheckedContinuation<T?, Never>? in
                defer { w = nil }
                return w
            })
        else { return }
        c.resume(returning: value)
        for t in tasks.withLock({ $0 }) { t.cancel() }
    }
    return await withCheckedContinuation { (c: CheckedContinuation<T?, Never>) in
        waiter.withLock { $0 = c }
        let worker = Task { finish(await work()) }
        let timer = Task {
            try? await Task.sleep(for: limit)
            finish(nil)
        }
        tasks.withLock { $0 = [worker, timer] }
        // Either may have finished before the tasks were recorded: cancel what is left over.
        if waiter.withLock({ $0 == nil }) {
            worker.cancel()
            timer.cancel()
        }
    }
}
