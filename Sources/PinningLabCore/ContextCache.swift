import Foundation
import PinningLabBase
import PinningLabPKI  // Locked

/// Engine contexts are immutable and shareable: servers started with the same engine and configuration (a test
/// suite starting the same scenario again, a rotation back to an earlier chain) reuse one instead of parsing
/// certificates and keys again. Bounded; the least recently used entry goes first. A configuration with session
/// resumption is never shared: its context holds the server's session cache and ticket key, which belong to one
/// server (one party) and die with its generation.
final class ContextCache: Sendable {
    static let shared = ContextCache(capacity: 64)
    struct Key: Hashable {
        var engine: String
        var configuration: ServerTLSConfiguration
    }
    private struct Entries {
        var contexts: [Key: (context: any TLSServerContext, used: UInt64)] = [:]
        var clock: UInt64 = 0
    }
    private let entries = Locked(Entries())
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func context(engine: any TLSEngine, configuration: ServerTLSConfiguration) throws(TLSEngineError)
        -> any TLSServerContext
    {
        if configuration.resumption.isEnabled { return try engine.makeContext(configuration) }
        let key = Key(engine: engine.name, configuration: configuration)
        if let hit: any TLSServerContext = entries.withLock({ e in
            e.clock += 1
            guard let hit = e.contexts[key] else { return nil }
            e.contexts[key]!.used = e.clock
            return hit.context
        }) {
            return hit
        }
        let context = try engine.makeContext(configuration)
        entries.withLock { e in
            e.clock += 1
            e.contexts[key] = (context, e.clock)
            if e.contexts.count > capacity, let oldest = e.contexts.min(by: { $0.value.used < $1.value.used })?.key {
                e.contexts[oldest] = nil
            }
        }
        return context
    }
}
