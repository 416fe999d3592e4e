import Foundation
import PinningLabCore

/// Waits until `condition` holds, checking every 50 ms, for at most `limit`: a bound for a loaded machine (the suites
/// share two cores with each other), never a timing assertion — the caller checks `condition` itself afterwards.
/// (`for _ in 0..<N where await !condition()` is not this: `where` filters the iterations, so such a loop never stops
/// early and calls the condition N times.)
public func waitUntil(_ limit: Duration = .seconds(90), _ condition: () async -> Bool) async {
    let end = ContinuousClock.now.advanced(by: limit)
    while ContinuousClock.now < end, await !condition() {
        try? await Task.sleep(for: .milliseconds(50))
    }
}

/// Waits until `condition` holds, checking every 20 ms, for at most `limit`, and says whether it held (the caller
/// asserts that, with its own message). Unlike ``waitUntil(_:_:)`` it never asks `condition` again once it held.
@discardableResult
public func eventually(_ limit: Duration = TestTimeouts.startup, _ condition: () async -> Bool) async -> Bool {
    let end = ContinuousClock.now.advanced(by: limit)
    while true {
        // Returns as soon as it holds, without asking again: it may consume what it sees (a `waitpid`, a read).
        if await condition() { return true }
        guard ContinuousClock.now < end else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// ``eventually(_:_:)`` for a thread of its own (a listener's, a name resolver's): blocks the calling thread, checking
/// `condition` every 10 ms, for at most `limit`; returns whether it held.
@discardableResult
public func eventuallyBlocking(_ limit: Duration, _ condition: () -> Bool) -> Bool {
    let end = ContinuousClock.now.advanced(by: limit)
    while true {
        if condition() { return true }
        guard ContinuousClock.now < end else { return false }
        usleep(10_000)
    }
}

/// Blocks until `fd` is readable (data, EOF, or a connection to accept) or `end` passes: `poll(2)`, no spinning.
/// Returns whether it is readable.
public func waitReadable(_ fd: Int32, until end: ContinuousClock.Instant) -> Bool {
    while true {
        let left = ContinuousClock.now.duration(to: end)
        guard left > .zero else { return false }
        let ms = Int32(
            clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, ms)
        if n > 0 { return true }
        if n < 0 && errno != EINTR { return false }
    }
}

/// Runs `work` on a thread of its own, off the cooperative pool (which a full test run can keep busy for seconds),
/// and returns its result: for a wait and what must follow it at once, such as a connection made while a long poll
/// is pending.
public func onAThreadOfItsOwn<T: Sendable>(_ name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await onDedicatedThread(named: name, work)
}
