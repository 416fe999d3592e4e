import Foundation

/// Engine contexts are immutable and shareable: servers started with the same engine and configuration (a test
/// suite starting the same scenario again, a rotation back to an earlier chain) reuse one instead of parsing
/// certificates and keys again. Bounded; the least recently used entry goes first. A configuration with session
/// resumption is never shared: its context holds the server's session cache and ticket key, which belong to one
/// server (one party) and die with its generation.
final class ContextCache: @unchecked Sendable {  // `entries` and `clock` are only touched under `lock`
    static let shared = ContextCache(capacity: 64)
    struct Key: Hashable {
        var engine: String
        var configuration: ServerTLSConfiguration
    }
    private let lock = NSLock()
    private var entries: [Key: (context: any TLSServerContext, used: UInt64)] = [:]
    private var clock: UInt64 = 0
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func context(engine: any TLSEngine, configuration: ServerTLSConfiguration) throws(TLSEngineError)
        -> any TLSServerContext
    {
        if configuration.resumption.isEnabled { return try engine.makeContext(configuration) }
        let key = Key(engine: engine.name, configuration: configuration)
        if let hit: any TLSServerContext = lock.withLock({
            clock += 1
            guard let e = entries[key] else { return nil }
            entries[key]!.used = clock
            return e.context
        }) {
            return hit
        }
        let context = try engine.makeContext(configuration)
        lock.withLock {
            clock += 1
            entries[key] = (context, clock)
            if entries.count > capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
                entries[oldest] = nil
            }
        }
        return context
    }
}
