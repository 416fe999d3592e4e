public import Foundation

/// The one folder below which a test process writes its files: `pinlab-test-run-PID-…` in the temporary folder,
/// mode 0700, removed when the process exits. Tests used to make their folders straight in `/tmp` and never remove
/// them: a run left about fifty behind — PKI folders with private keys among them. The folders of a run that did
/// not exit (a crash, a SIGKILL) are removed by the next run that finds their process gone.
///
/// The lab PKI the suites share (`TestPKIFolder`) stays outside on purpose: it is reused across runs.
public enum TestScratch {
    static let prefix = "pinlab-test-run-"

    public static let root: URL = {
        let base = FileManager.default.temporaryDirectory
        removeFoldersOfExitedRuns(in: base)
        let url = base.appendingPathComponent("\(prefix)\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            fatalError("TestScratch: cannot create the test folder \(url.path): \(error)")
        }
        path = url.path
        atexit { TestScratch.removeAtExit() }
        return url
    }()

    /// A fresh folder below `root`, created; `label` makes it recognisable while a test runs.
    public static func directory(_ label: String) -> URL {
        let url = root.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The path `root` was created at, for the exit handler (a C function pointer cannot capture).
    nonisolated(unsafe) private static var path: String?

    private static func removeAtExit() {
        if let path { try? FileManager.default.removeItem(atPath: path) }
    }

    /// `pinlab-test-run-PID-…` folders whose process no longer exists.
    private static func removeFoldersOfExitedRuns(in base: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard let pid = rest.split(separator: "-").first.flatMap({ pid_t($0) }), pid > 0 else { continue }
            var st = stat()
            let path = base.appendingPathComponent(name).path
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }
}
