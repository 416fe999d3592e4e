package import Foundation

/// The C library's read(2) and write(2), named apart from Swift methods called `read`/`write`.
#if canImport(Glibc)
    package let systemRead = Glibc.read
    package let systemWrite = Glibc.write
#else
    package let systemRead = Darwin.read
    package let systemWrite = Darwin.write
#endif

/// File operations of the PKI directory: atomic writes with a mode, an exclusive lock, permission checks.
package enum Storage {
    /// Creates `url` (and parents) if missing; sets `mode` on the last component when it creates it. Returns
    /// whether it created `url`: a folder made just now is this process's own, one that was there is not known to
    /// be (``requireOwnPrivate(_:what:)`` checks it).
    @discardableResult
    static func makeDirectory(_ url: URL, mode: mode_t) throws -> Bool {
        if mkdir(url.path, mode) == 0 {
            chmod(url.path, mode)  // exactly `mode`, whatever the umask
            return true
        }
        let err = errno
        if err == EEXIST {
            var st = stat()
            guard stat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
                throw PKIError(
                    .writeFailed, "\(url.path) exists and is not a folder", file: url.path,
                    fix: "remove it or choose another --dir")
            }
            return false
        }
        do {
            guard err == ENOENT else { throw POSIXError(POSIXErrorCode(rawValue: err) ?? .EIO) }
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true,
                attributes: [.posixPermissions: NSNumber(value: mode)])
            return true
        } catch {
            throw PKIError(
                .writeFailed, "cannot create the folder: \(error.localizedDescription)", file: url.path,
                fix: "check the permissions of its parent, or choose another --dir")
        }
    }

    /// What a PKI folder's own `.gitignore` says: everything in it, keys included, stays out of git, so a
    /// `git add -A` in the repository that holds `.pinninglab/` never stages a private key.
    static let gitignore = """
        # Written by PinningLab: this folder holds the lab PKI's private keys. Never commit it.
        *

        """

    /// Writes `directory/.gitignore` (``gitignore``) unless one is there.
    static func ignoreInGit(_ directory: URL) throws {
        let url = directory.appendingPathComponent(".gitignore")
        guard !exists(url) else { return }
        try writeAtomically(gitignore, to: url, mode: 0o644)
    }

    /// Writes `text` to `url` with `mode` from the first byte (a temporary file created with that mode, then
    /// renamed over `url`): a private key is never readable by others, not even for a moment.
    package static func writePrivately(_ text: String, to url: URL, mode: Int) throws {
        try writeAtomically(Array(text.utf8), to: url, mode: mode_t(mode))
    }

    /// Writes `bytes` to a temporary file in the same folder, then renames it over `url`: readers see the old
    /// file or the new one, never half of one. The temporary file is created by this call alone (`O_EXCL`, a
    /// random name, no link followed) with `mode` from its first byte, so nobody else can have opened it or planted
    /// it — the file a private key or a token goes into is this process's own; a link at `url` is replaced, never
    /// followed. The one writer of the files the command line and the PKI hand out (manifests, exports).
    ///
    /// A character device or a FIFO at `url` (`--output /dev/null`, `/dev/stdout`, a named pipe) is written into,
    /// never replaced: renaming over it would turn `/dev/null` into a regular file for everyone (as root).
    package static func writeAtomically(_ bytes: some Collection<UInt8>, to url: URL, mode: mode_t) throws {
        var st = stat()
        if lstat(url.path, &st) == 0 {
            let type = st.st_mode & S_IFMT
            if type == S_IFCHR || type == S_IFIFO {
                try writeInPlace(bytes, to: url)
                return
            }
            if type == S_IFSOCK || type == S_IFBLK {
                throw PKIError(
                    .writeFailed, "cannot write the file: it is a \(type == S_IFSOCK ? "socket" : "block device")",
                    file: url.path, fix: "name a regular file, a FIFO or a character device such as /dev/stdout")
            }
        }
        let tmp = url.deletingLastPathComponent()
            .appendingPathComponent(".tmp-\(url.lastPathComponent)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        func failure(_ what: String, _ err: Int32, fix: String) -> PKIError {
            unlink(tmp.path)
            return PKIError(.writeFailed, "cannot \(what): \(String(cString: strerror(err)))", file: url.path, fix: fix)
        }
        let fd = open(tmp.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            var isDir: ObjCBool = false
            let folder = url.deletingLastPathComponent().path
            let fix =
                FileManager.default.fileExists(atPath: folder, isDirectory: &isDir) && isDir.boolValue
                ? "check that the folder \(folder) is writable"
                : "the folder \(folder) does not exist: create it (mkdir -p \(folder)) or choose another path"
            throw PKIError(.writeFailed, "cannot write the file: \(reason)", file: url.path, fix: fix)
        }
        // A private file gets exactly `mode` (the umask only ever takes bits away), checked; others keep the umask's.
        if mode & 0o077 == 0, fchmod(fd, mode) != 0 {
            let err = errno
            close(fd)
            throw failure("set the file's mode", err, fix: "check the folder's file system")
        }
        guard writeAll(fd, bytes) else {
            let err = errno
            close(fd)
            throw failure("write the file", err, fix: "check free disk space and that the folder is writable")
        }
        close(fd)
        guard rename(tmp.path, url.path) == 0 else {
            let err = errno
            throw failure(
                "write the file", err,
                fix: isDirectory(url)
                    ? "it is a folder: name a file in it" : "check free disk space and permissions")
        }
    }

    /// Writes `bytes` into the character device or FIFO at `url` (opened without creating or following anything).
    private static func writeInPlace(_ bytes: some Collection<UInt8>, to url: URL) throws {
        // Opened without blocking: a FIFO nobody reads would otherwise hang the run here (ENXIO instead).
        let fd = open(url.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let err = errno
            throw PKIError(
                .writeFailed,
                err == ENXIO
                    ? "cannot write the FIFO: nothing is reading it"
                    : "cannot write the file: \(String(cString: strerror(err)))",
                file: url.path,
                fix: err == ENXIO
                    ? "start its reader first (e.g. cat FIFO &), or name a file"
                    : "check that it can be opened for writing")
        }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        guard writeAll(fd, bytes) else {
            throw PKIError(
                .writeFailed, "cannot write the file: \(String(cString: strerror(errno)))", file: url.path,
                fix: "check that its reader is still there")
        }
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) && isDir.boolValue
    }

    /// Removes the temporary files ``writeAtomically(_:to:mode:)`` left in `folder` when its process died between
    /// creating one and renaming it (a SIGKILL, a power cut): `.tmp-NAME-PID-RANDOM` whose PID no longer exists.
    /// They can hold a private key (mode 0600) that nothing would ever use or remove. Called under the folder's
    /// lock, which every writer of such a file holds; files of a live process are left alone all the same (a PID
    /// of another PID namespace reads as gone, so the lock is what makes this safe). Returns the names removed.
    @discardableResult
    static func removeStaleTemporaryFiles(in folder: URL) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(".tmp-") {
            let parts = name.split(separator: "-")
            guard parts.count >= 4, UInt64(parts[parts.count - 1]) != nil,
                let pid = pid_t(parts[parts.count - 2]), pid > 0
            else { continue }
            if pid != getpid() && kill(pid, 0) == -1 && errno == ESRCH
                && unlink(folder.appendingPathComponent(name).path) == 0
            {
                removed.append(name)
            }
        }
        return removed
    }

    /// Writes in place (overwrite, then cut to length). Only for files rewritten under the directory lock whose consistency the state
    /// file vouches for.
    static func write(_ bytes: some Collection<UInt8>, to url: URL, mode: mode_t = 0o644) throws {
        // Overwrite, then cut to length: truncating to zero or renaming over an existing file makes ext4 flush it
        // to disk on close (auto_da_alloc), and unlink + create costs a new inode each time.
        let fd = open(url.path, O_WRONLY | O_CREAT | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw PKIError(
                .writeFailed, "cannot write the file: \(String(cString: strerror(errno)))", file: url.path,
                fix: "check that the folder is writable")
        }
        defer { close(fd) }
        if mode & 0o077 == 0 { fchmod(fd, mode) }
        guard writeAll(fd, bytes), ftruncate(fd, off_t(bytes.count)) == 0 else {
            throw PKIError(
                .writeFailed, "cannot write the file: \(String(cString: strerror(errno)))", file: url.path,
                fix: "check free disk space")
        }
    }

    /// Writes every byte to `fd`, retrying after signals; false on an error (`errno` says which).
    private static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        Array(bytes).withUnsafeBytes { p -> Bool in
            var off = 0
            while off < p.count {
                let n = systemWrite(fd, p.baseAddress! + off, p.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                off += n
            }
            return true
        }
    }

    static func write(_ text: String, to url: URL, mode: mode_t = 0o644) throws {
        try write(Array(text.utf8), to: url, mode: mode)
    }

    package static func writeAtomically(_ text: String, to url: URL, mode: mode_t = 0o644) throws {
        try writeAtomically(Array(text.utf8), to: url, mode: mode)
    }

    /// Reads a file, or nil if it does not exist. Other failures throw with the path.
    static func readFile(_ url: URL) throws -> [UInt8]? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw PKIError(
                .keyFileUnreadable, "cannot read the file: \(String(cString: strerror(errno)))",
                file: url.path, fix: "check its permissions (it should belong to you, mode 0600)")
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buf.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw PKIError(
                    .keyFileUnreadable, "cannot read the file: \(String(cString: strerror(errno)))", file: url.path)
            }
            if n == 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return out
    }

    /// Why `path` could not be read as a file, in words for a message: "it is a directory", "it is a FIFO, not a
    /// regular file", "no such file", "permission denied" — rather than Foundation's "you don't have permission" for
    /// a FIFO or "error 256" for a folder. `fallback` when the path looks readable (the content was at fault).
    package static func whyUnreadable(_ path: String, fallback: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return String(cString: strerror(errno)).lowercased() }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: return "it is a directory, not a file"
        case S_IFIFO: return "it is a FIFO, not a regular file"
        case S_IFCHR, S_IFBLK: return "it is a device, not a regular file"
        case S_IFSOCK: return "it is a socket, not a regular file"
        default: return access(path, R_OK) == 0 ? fallback : "permission denied"
        }
    }

    /// The permission bits of a file, or nil if it does not exist.
    static func mode(_ url: URL) -> mode_t? {
        // lstat, as FileManager's attributes were read (a link's own mode), without their owner-name look-ups.
        var st = stat()
        guard lstat(url.path, &st) == 0 else { return nil }
        return st.st_mode & 0o7777
    }

    static func exists(_ url: URL) -> Bool { access(url.path, F_OK) == 0 }

    /// Creates the private folder `url` (``makeDirectory(_:mode:)``), or checks that the one already there is this
    /// user's and nobody else's to write (``requireOwnPrivate(_:what:)``).
    static func makeOwnDirectory(_ url: URL, mode: mode_t, what: String) throws {
        if !(try makeDirectory(url, mode: mode)) { try requireOwnPrivate(url, what: what) }
    }

    /// Throws unless `url` (a PKI folder, its `keys/`, a key file; links followed) belongs to this user and nobody
    /// else can write it: a folder that another user made first — in a shared `/tmp`, say — could hold a key
    /// of theirs that the lab would then sign with and serve, or take one of ours.
    static func requireOwnPrivate(_ url: URL, what: String) throws {
        var st = stat()
        guard stat(url.path, &st) == 0 else { return }
        try requireOwnPrivate(st, url, what: what)
    }

    /// ``requireOwnPrivate(_:what:)`` on a `stat` already made.
    static func requireOwnPrivate(_ st: stat, _ url: URL, what: String) throws {
        if st.st_uid != geteuid() {
            let owner = getpwuid(st.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(st.st_uid)"
            throw PKIError(
                .notPrivate, "\(what) belongs to \(owner), not to the user running pinlab", file: url.path,
                fix: "use a folder of your own (--dir), or remove this one if you did not make it")
        }
        // Writable by everyone, or by a group that is not this user's own (a user-private group, umask 002, is).
        if st.st_mode & 0o002 != 0 || (st.st_mode & 0o020 != 0 && st.st_gid != getegid()) {
            throw PKIError(
                .notPrivate, "\(what) can be written by others (mode \(String(st.st_mode & 0o777, radix: 8)))",
                file: url.path, fix: "run `chmod go-w \(url.path)` if you made it, or use another --dir")
        }
    }
}

/// An exclusive advisory lock on a file (flock), held until `unlock` or deinit: two processes opening the same PKI
/// directory take turns, so neither sees or writes half a state.
final class DirectoryLock {
    private var fd: Int32

    init(_ url: URL) throws {
        fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PKIError(
                .lockFailed, "cannot open the lock file: \(String(cString: strerror(errno)))", file: url.path,
                fix: "check that the PKI folder is writable")
        }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let err = String(cString: strerror(errno))
            close(fd)
            fd = -1
            throw PKIError(.lockFailed, "cannot lock the PKI folder: \(err)", file: url.path)
        }
    }

    func unlock() {
        if fd >= 0 {
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit { unlock() }
}
