package import Foundation

/// The temporary folders of this process's runs (trust files, client certificates and their private keys, a
/// client's output): each is made through ``make(_:)``, removed by ``remove(_:)`` when its run ends, and all that
/// are still there are removed by ``removeAll()``, which `pinlab` calls on SIGINT and SIGTERM before it exits, so
/// that an interrupted run leaves no key behind in `$TMPDIR`.
///
/// A process killed outright (SIGKILL, a crash, the OOM killer, a CI job's timeout) removes nothing. So each folder,
/// `PREFIX-PID-XXXXXXXX`, holds a lock file its process keeps locked (`flock`) for as long as the folder is in use,
/// and the first ``make(_:)`` in a process removes the folders of every pinlab prefix (`pinlab-…`, `pinninglab-…`:
/// an interrupted `pinlab timeline`'s are swept by the next `pinlab check`) whose lock it can take: their process
/// is gone. A lock, not the PID, decides: a PID may be reused, or belong to another PID namespace
/// sharing the folder, but a lock is held only by a process that is alive.
package enum ScratchFolders {
    /// Registered folders and the descriptor that holds each one's lock.
    private static let live = Locked<[String: Int32]>([:])
    private static let swept = Locked(false)
    /// The prefixes whose abandoned folders any pinlab process sweeps.
    static let sweptPrefixes = ["pinlab-", "pinninglab-"]
    static let lockName = ".owner"

    /// Creates a fresh folder `PREFIX-PID-XXXXXXXX` (mode 0700) in the temporary directory, locked as this
    /// process's, and registers it.
    package static func make(_ prefix: String) throws -> URL {
        let base = FileManager.default.temporaryDirectory
        if swept.withLock({ done in
            defer { done = true }
            return !done
        }) {
            removeAbandoned(in: base)
        }
        let name = "\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8))"
        // Made and locked under a name no sweep matches, then renamed: a sweep never sees it unlocked.
        let staging = base.appendingPathComponent(".\(name).new")
        let dir = base.appendingPathComponent(name)
        try FileManager.default.createDirectory(
            at: staging, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let fd = open(staging.appendingPathComponent(lockName).path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0, rename(staging.path, dir.path) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            try? FileManager.default.removeItem(at: staging)
            throw CocoaError(
                .fileWriteUnknown, userInfo: [NSFilePathErrorKey: dir.path, NSLocalizedDescriptionKey: reason])
        }
        live.withLock { $0[dir.path] = fd }
        return dir
    }

    /// Removes a folder made by ``make(_:)`` and forgets it.
    package static func remove(_ dir: URL) {
        let fd = live.withLock { $0.removeValue(forKey: dir.path) }
        try? FileManager.default.removeItem(at: dir)
        if let fd { close(fd) }
    }

    /// Removes every registered folder (for a signal handler: it takes no lock that a run could hold for long).
    package static func removeAll() {
        let paths = live.withLock { all -> [String: Int32] in
            defer { all = [:] }
            return all
        }
        for (p, _) in paths { discard(p) }
    }

    /// Removes a folder that threads of a run cut short may still be writing into (a timeline's PKI issues its keys
    /// concurrently): renamed first, so that no new file is made under its old path, then removed, again while files
    /// that were already open land in it. If it still cannot be removed, its new name is one the next pinlab sweeps
    /// (its lock goes with it).
    static func discard(_ path: String) {
        let url = URL(fileURLWithPath: path)
        let parts = url.lastPathComponent.split(separator: "-").suffix(2).joined(separator: "-")
        let renamed = url.deletingLastPathComponent().appendingPathComponent("pinlab-discarded-\(parts)").path
        let target = rename(path, renamed) == 0 ? renamed : path
        for _ in 0..<20 {
            if (try? FileManager.default.removeItem(atPath: target)) != nil
                || !FileManager.default.fileExists(atPath: target)
            {
                return
            }
            usleep(5_000)
        }
    }

    /// The folders still registered (for tests).
    package static var current: Set<String> { live.withLock { Set($0.keys) } }

    /// Removes the `PREFIX-PID-XXXXXXXX` folders in `base`, of any prefix in ``sweptPrefixes``, whose lock file can
    /// be locked: their process is gone. Folders without a lock file (an older pinlab's) and those of live processes
    /// stay.
    @discardableResult
    package static func removeAbandoned(in base: URL) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base.path) else { return [] }
        var removed: [String] = []
        for name in names where sweptPrefixes.contains(where: { name.hasPrefix($0) }) {
            let parts = name.split(separator: "-", omittingEmptySubsequences: false).suffix(2)
            guard parts.count == 2, !parts.first!.isEmpty, parts.first!.allSatisfy(\.isNumber), parts.last!.count == 8,
                name.count > parts.first!.count + 10
            else { continue }
            let dir = base.appendingPathComponent(name)
            // `$TMPDIR` may be shared (/tmp): only a real folder of this user's, never a link someone put there.
            var st = stat()
            guard lstat(dir.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid() else { continue }
            let fd = open(dir.appendingPathComponent(lockName).path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if (try? FileManager.default.removeItem(at: dir)) != nil { removed.append(name) }
        }
        return removed
    }
}
