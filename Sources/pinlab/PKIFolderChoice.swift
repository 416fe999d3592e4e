import ArgumentParser
import Foundation
import PinningLab
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#endif

/// The lab PKI folder of a command run without `--dir`: the nearest `.pinninglab/` in the current folder or one
/// above it — so a command run in a sub-folder of a project uses the project's PKI (the one its servers and exports
/// use) instead of making a second one with other pins — else a new `.pinninglab/` in the current folder.
///
/// The walk stops after the home folder and before a folder on another file system (`st_dev` changes), as git's
/// does. A `.pinninglab/` found on the way is used only if it belongs to the user running pinlab and has mode 0700:
/// one made by someone else above a shared folder (`/tmp/.pinninglab`) could hold their keys for the lab to sign
/// with, or take ours (git refuses another user's repository the same way since CVE-2022-24765). Such a folder ends
/// the command with exit status 2, naming it and the fix. The folder used or made is named on standard error, once.
enum DefaultPKIFolder {
    static let name = ".pinninglab"

    /// What the walk found.
    enum Outcome: Equatable {
        /// A `.pinninglab/` of this user, mode 0700.
        case found(String)
        /// None: the folder to make (in the current folder).
        case notFound(String)
        /// One that must not be used, and why (the whole message).
        case refused(String)
    }

    /// Decided once per process, when a command first needs it.
    static let path: String = {
        switch find(from: FileManager.default.currentDirectoryPath, home: homeDirectory()) {
        case .found(let p):
            note("using the lab PKI in \(p) (the nearest \(name)/ in this folder or above; --dir DIR for another)")
            return p
        case .notFound(let p):
            note(
                "no \(name)/ in this folder or above (up to the home folder): the lab PKI is in \(p) (--dir DIR for another)"
            )
            return p
        case .refused(let message):
            fail(message)
        }
    }()

    private static func note(_ line: String) {
        FileHandle.standardError.write(Data("pinlab: \(line)\n".utf8))
    }

    /// The user's home folder: `$HOME`, else the password database's.
    static func homeDirectory() -> String? {
        if let h = ProcessInfo.processInfo.environment["HOME"], !h.isEmpty { return h }
        guard let pw = getpwuid(geteuid()) else { return nil }
        return String(cString: pw.pointee.pw_dir)
    }

    /// The walk from `start` up: the first `.pinninglab` (of any kind) decides; none up to `home` (included), the
    /// root, or the last folder on `start`'s file system → a new one in `start`.
    static func find(from start: String, home: String?) -> Outcome {
        let startPath = realPath(start) ?? start
        let homePath = home.map { realPath($0) ?? $0 }
        var st = stat()
        guard stat(startPath, &st) == 0 else { return .notFound(join(startPath, name)) }
        let device = st.st_dev
        var folder = startPath
        while true {
            let candidate = join(folder, name)
            var c = stat()
            if lstat(candidate, &c) == 0 {
                if let why = unusable(candidate) {
                    return .refused(
                        """
                        the lab PKI folder \(candidate) (the nearest \(name) in \(startPath) or above) \(why): it \
                        could hold another user's keys for the lab to sign with, or be read by others. Fix: pass \
                        --dir with a folder of your own, \(fix(candidate))
                        """)
                }
                return .found(candidate)
            }
            if folder == homePath || folder == "/" { break }
            let parent = (folder as NSString).deletingLastPathComponent
            var p = stat()
            guard !parent.isEmpty, stat(parent, &p) == 0, p.st_dev == device else { break }
            folder = parent
        }
        return .notFound(join(startPath, name))
    }

    /// Why `path` (a `.pinninglab` found by the walk) must not be used, or nil.
    static func unusable(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return "is a link to nothing" }
        guard st.st_mode & S_IFMT == S_IFDIR else { return "is not a folder" }
        if st.st_uid != geteuid() {
            let owner = getpwuid(st.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(st.st_uid)"
            return "belongs to \(owner), not to the user running pinlab"
        }
        let mode = st.st_mode & 0o7777
        if mode != 0o700 { return "has mode \(String(mode, radix: 8)), not 700" }
        return nil
    }

    private static func fix(_ path: String) -> String {
        var s = stat()
        if stat(path, &s) == 0, s.st_mode & S_IFMT == S_IFDIR, s.st_uid == geteuid() {
            return "or run `chmod 700 \(path)` if you made it."
        }
        return "or remove it if nobody needs it."
    }

    private static func join(_ folder: String, _ leaf: String) -> String {
        folder.hasSuffix("/") ? folder + leaf : folder + "/" + leaf
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}

/// The spec a command opens its PKI folder with: `--spec FILE` when given; else the spec file of one's own the
/// folder was made from (its state file records the path and SHA-256), when that file is still there unchanged;
/// else nil, the built-in spec — which the PKI refuses to put in the place of a folder made from a spec of one's
/// own (`PKIError.Code.specReplaced`, naming the folder, the spec and the fix).
/// Returns the spec and the absolute path of its file (nil for the built-in spec).
func specForOpening(_ explicit: String?, directory: URL) throws -> (spec: PKISpec?, file: String?) {
    if let explicit {
        let spec = try PKISpec.load(contentsOf: URL(fileURLWithPath: explicit))
        return (spec, URL(fileURLWithPath: explicit).standardizedFileURL.path)
    }
    // A folder made by `pinlab pki init --post-quantum`: the built-in spec with its post-quantum part (this
    // pinlab's, which re-issues the certificates when the part changed).
    if let record = LabPKI.recordedSpec(in: directory), record.path == BuiltInLab.postQuantumSpecName {
        return (try BuiltInLab.spec(postQuantum: true), record.path)
    }
    guard let record = LabPKI.recordedSpec(in: directory),
        let spec = try? PKISpec.load(contentsOf: URL(fileURLWithPath: record.path)),
        spec.fingerprint == record.sha256
    else { return (nil, nil) }
    return (spec, record.path)
}

/// Says on standard error what an opening changed that the user must know: a kept key whose file was missing got
/// a new random key, so every pin on it changed (for a CA's key: every certificate it signs, and every device
/// that trusts it no longer trusts what the lab serves).
func announceReplacedKeys(_ pki: LabPKI) {
    for keyName in pki.refresh.replacedMissingKeys {
        let users = pki.identities.filter { $0.keyName == keyName }
        let cas = users.filter { $0.role.isCA }.map(\.name)
        let file = pki.keyFile(keyName).path
        let text: String
        if cas.isEmpty {
            text =
                "\(file) was missing: a new random key replaces it, so the pins of \(users.map(\.name).joined(separator: ", ")) changed."
        } else {
            text =
                "\(file) was missing: \(cas.joined(separator: ", ")) now \(cas.count == 1 ? "has" : "have") a new random key. "
                + "Every pin on it and on the certificates it signs changed, and a device that trusts the old "
                + "\(cas[0]) no longer trusts what the lab serves: install its trust file again "
                + "(\(pki.files(for: cas[0]).certificatePEM.path))."
        }
        FileHandle.standardError.write(Data("warning: \(text)\n".utf8))
    }
}
