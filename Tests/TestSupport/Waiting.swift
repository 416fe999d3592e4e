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
