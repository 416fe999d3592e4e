// PinningLab: the facade — Lab, the catalogue, the runner, reports.
@_exported public import PinningLabPKI
@_exported public import PinningLabCore
public import Foundation
import PinningLabOpenSSL

/// The entry point of PinningLab: the lab PKI, the scenario catalogue, servers and checks.
public enum Lab {
    /// The built-in lab PKI spec (`pki/lab.yaml`, bundled with the package).
    public static var builtInSpecURL: URL {
        Bundle.module.url(forResource: "lab", withExtension: "yaml", subdirectory: "pki")
            ?? Bundle.module.resourceURL!.appendingPathComponent("pki/lab.yaml")
    }

    /// The built-in lab PKI spec, parsed and validated.
    public static func builtInSpec() throws -> PKISpec {
        try PKISpec.load(contentsOf: builtInSpecURL)
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
    /// when missing, stale or changed. `directory` defaults to a per-user cache (`$PINNINGLAB_DIR` overrides).
    /// Concurrent callers, in this process or others, take turns on a lock.
    public static func pki(directory: URL? = nil, seed: String? = nil, spec: PKISpec? = nil) throws -> LabPKI {
        let options = libraryPKIOptions(directory: directory, seed: seed)
        let key = PKICache.Key(directory: options.directory.standardizedFileURL.path, seed: seed,
                               spec: spec?.fingerprint)
        return try PKICache.shared.get(key) {
            try LabPKI.open(spec: spec ?? builtInSpec(), options: options)
        }
    }

    /// Opens a PKI folder with full control of the options.
    public static func pki(spec: PKISpec, options: PKIOptions) throws -> LabPKI {
        try LabPKI.open(spec: spec, options: options)
    }
}

/// Opening the same PKI twice in one process returns the first result while it is fresh, so that suites of many
/// tests pay for it once.
final class PKICache: Sendable {
    struct Key: Hashable { var directory: String; var seed: String?; var spec: String? }
    static let shared = PKICache()
    private let lock = NSLock()
    // Guarded by `lock`.
    nonisolated(unsafe) private var entries: [Key: (pki: LabPKI, cachedAt: Date)] = [:]

    func get(_ key: Key, make: () throws -> LabPKI) throws -> LabPKI {
        lock.lock()
        defer { lock.unlock() }
        if let e = entries[key], Date().timeIntervalSince(e.cachedAt) < 600 { return e.pki }
        let p = try make()
        entries[key] = (p, Date())
        return p
    }
}
