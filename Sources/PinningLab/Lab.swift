// PinningLab: the facade — Lab, the catalogue, the runner, reports.
public import Foundation
import PinningLabCore
import PinningLabOpenSSL

/// The entry point of PinningLab: the lab PKI, the scenario catalogue, servers and checks.
public enum Lab {
    /// The built-in lab PKI spec (`pki/lab.yaml`, bundled with the package).
    public static var builtInSpecURL: URL { BuiltInLab.specURL }

    /// The built-in lab PKI spec, parsed and validated.
    public static func builtInSpec() throws -> PKISpec {
        try BuiltInLab.spec()
    }

    /// Options for a PKI folder with PKCS#12 output (built with OpenSSL) switched on.
    public static func pkiOptions(directory: URL? = nil, seed: String? = nil) -> PKIOptions {
        var o = PKIOptions(directory: directory ?? LabPKI.defaultDirectory, seed: seed)
        o.pkcs12Encoder = OpenSSLPKCS12()
        return o
    }

    /// Like ``pkiOptions(directory:seed:)`` for library use: keys and the state file are written with the
    /// certificates; each identity's files when asked for (``LabPKI/materialize(_:)``,
    /// ``LabPKI/pkcs12File(for:)``), which keeps a refresh to a few milliseconds.
    public static func libraryPKIOptions(directory: URL? = nil, seed: String? = nil) -> PKIOptions {
        var o = pkiOptions(directory: directory, seed: seed)
        o.pkcs12Roles = []
        o.writeIdentityFiles = false
        return o
    }

    /// Opens the lab PKI: keys are created once and kept (mode 0600), certificates are issued fresh from the spec
    /// when missing, stale or changed. `directory` defaults to a per-user cache (`$PINLAB_DIR` overrides).
    /// Concurrent callers, in this process or others, take turns on a lock. This call blocks while it waits for the
    /// lock or makes keys: from async code use ``openPKI(directory:seed:spec:)``, which does that on a thread of its
    /// own.
    public static func pki(directory: URL? = nil, seed: String? = nil, spec: PKISpec? = nil) throws -> LabPKI {
        let (key, open) = opener(directory: directory, seed: seed, spec: spec)
        return try PKICache.shared.get(key, make: open)
    }

    /// Opens the lab PKI like ``pki(directory:seed:spec:)``, without blocking a thread of Swift's cooperative pool:
    /// the lock wait and any key generation run on a dedicated thread, and concurrent callers for the same folder
    /// share one opening.
    public static func openPKI(directory: URL? = nil, seed: String? = nil, spec: PKISpec? = nil) async throws -> LabPKI
    {
        let (key, open) = opener(directory: directory, seed: seed, spec: spec)
        return try await PKICache.shared.get(key, make: open)
    }

    private static func opener(directory: URL?, seed: String?, spec: PKISpec?) -> (
        PKICache.Key, @Sendable () throws -> LabPKI
    ) {
        let options = libraryPKIOptions(directory: directory, seed: seed)
        let key = PKICache.Key(
            directory: options.directory.standardizedFileURL.path, seed: seed,
            spec: spec?.fingerprint)
        return (key, { try LabPKI.open(spec: spec ?? builtInSpec(), options: options) })
    }

    /// Opens a PKI folder with full control of the options.
    public static func pki(spec: PKISpec, options: PKIOptions) throws -> LabPKI {
        try LabPKI.open(spec: spec, options: options)
    }
}

/// Opening the same PKI twice in one process returns the first result while it is fresh, so that suites of many
/// tests pay for it once. The lock guards the table only: an opening runs outside it, and callers that arrive while
/// one is under way wait for that one.
final class PKICache: Sendable {
    struct Key: Hashable {
        var directory: String
        var seed: String?
        var spec: String?
    }
    static let shared = PKICache()
    static let freshFor: TimeInterval = 600

    private enum Entry {
        case ready(LabPKI, cachedAt: Date)
        /// An opening under way, with the async callers waiting for it (synchronous callers wait on `lock`).
        case opening([CheckedContinuation<LabPKI, any Error>])
    }
    private let lock = NSCondition()
    // Guarded by `lock`.
    nonisolated(unsafe) private var entries: [Key: Entry] = [:]

    /// Returns the cached PKI, waits for an opening under way, or claims the opening (`nil`).
    private func lookup(_ key: Key, waiter: CheckedContinuation<LabPKI, any Error>?) -> (pki: LabPKI?, claimed: Bool) {
        switch entries[key] {
        case .ready(let p, let at) where Date().timeIntervalSince(at) < Self.freshFor:
            return (p, false)
        case .opening(var waiters):
            if let w = waiter {
                waiters.append(w)
                entries[key] = .opening(waiters)
            }
            return (nil, false)
        default:
            entries[key] = .opening(waiter.map { [$0] } ?? [])
            return (nil, true)
        }
    }

    private func finish(_ key: Key, _ result: Result<LabPKI, any Error>) {
        lock.lock()
        let waiters: [CheckedContinuation<LabPKI, any Error>]
        if case .opening(let w) = entries[key] { waiters = w } else { waiters = [] }
        switch result {
        case .success(let p): entries[key] = .ready(p, cachedAt: Date())
        case .failure: entries[key] = nil
        }
        lock.broadcast()
        lock.unlock()
        for w in waiters { w.resume(with: result) }
    }

    private func cached(_ key: Key) -> LabPKI? {
        lock.lock()
        defer { lock.unlock() }
        if case .ready(let p, let at) = entries[key], Date().timeIntervalSince(at) < Self.freshFor { return p }
        return nil
    }

    func get(_ key: Key, make: () throws -> LabPKI) throws -> LabPKI {
        lock.lock()
        while true {
            let (p, claimed) = lookup(key, waiter: nil)
            if let p {
                lock.unlock()
                return p
            }
            if claimed { break }
            lock.wait()  // another caller is opening it
        }
        lock.unlock()
        let result = Result { try make() }
        finish(key, result)
        return try result.get()
    }

    func get(_ key: Key, make: @escaping @Sendable () throws -> LabPKI) async throws -> LabPKI {
        if let p = cached(key) { return p }
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<LabPKI, any Error>) in
            lock.lock()
            let (p, claimed) = lookup(key, waiter: c)
            lock.unlock()
            if let p {
                c.resume(returning: p)
                return
            }
            guard claimed else { return }  // resumed by the opening under way
            startThread(named: "pinlab.pki-open") { [self] in finish(key, Result { try make() }) }
        }
    }
}
