package import Foundation


/// The temporary folders of this process's runs (trust files, client certificates and their private keys, a
/// client's output): each is made through ``make(_:)``, removed by ``remove(_:)`` when its run ends, and all that
/// are still there are removed by ``removeAll()``, which `pinlab` calls on SIGINT and SIGTERM before it exits, so
/// that an interrupted run leaves no key behind in `$TMPDIR`.
package enum ScratchFolders {
    private static let live = Locked<Set<String>>([])

    /// Creates a fresh folder `PREFIX-XXXXXXXX` (mode 0700) in the temporary directory and registers it.
    package static func make(_ prefix: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        live.withLock { _ = $0.insert(dir.path) }
        return dir
    }

    /// Removes a folder made by ``make(_:)`` and forgets it.
    package static func remove(_ dir: URL) {
        live.withLock { _ = $0.remove(dir.path) }
        try? FileManager.default.removeItem(at: dir)
    }

    /// Removes every registered folder (for a signal handler: it takes no lock that a run could hold for long).
    package static func removeAll() {
        let paths = live.withLock { all -> Set<String> in
            defer { all = [] }
            return all
        }
        for p in paths { try? FileManager.default.removeItem(atPath: p) }
    }

    /// The folders still registered (for tests).
    package static var current: Set<String> { live.withLock { $0 } }
}
