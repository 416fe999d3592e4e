import Foundation
import PinningLabCore
import PinningLabPKI
/// The end of one child process.
struct ProcessResult: Sendable {
    var exitStatus: Int32
    /// Killed after its time ran out.
    var timedOut: Bool
    /// Could not be started at all (`launchError` says why).
    var launchError: String?
    /// The last lines of its standard error, then of its standard output.
    var stderrTail: String
    var stdoutTail: String
    var milliseconds: Double
    /// Why `stop` ended it early, if it did.
    var stopReason: String? = nil
}

/// Runs a client command with a time limit, with `posix_spawn` (Foundation's `Process` is avoided: on Linux it can
/// over-read `/proc/self/fd` in a process with many descriptors open, as a runner full of servers is).
///
/// The child gets its own process group (so an overrun kills the whole tree: SIGTERM, then SIGKILL one second
/// later), default signal dispositions (the runner ignores SIGPIPE; the child must not inherit that), standard
/// input from `/dev/null`, and standard output and error in temporary files, so a grandchild that keeps a pipe
/// open can never stall the runner. A dedicated thread blocks in `waitpid` for exactly this child, so the end of
/// the child is seen at once.
enum ProcessRunner {
    ///
    /// `stdinFile` becomes its standard input; with `stdoutFile` its standard output goes to that file, which the
    /// caller owns and may read while the child runs; `stop`, asked every 50 ms, ends the child early when it
    /// returns a reason (counted as a time-out, the reason in `stopReason`).
    static func run(
        _ arguments: [String], extraEnvironment: [String: String] = [:], timeout: Duration, scratch: URL,
        stdinFile: String? = nil, stdoutFile: String? = nil, stop: (@Sendable () -> String?)? = nil
    ) async -> ProcessResult {
        let start = ContinuousClock.now
        func elapsed() -> Double { milliseconds(ContinuousClock.now - start) }
        var env = ProcessInfo.processInfo.environment
        for (k, v) in extraEnvironment { env[k] = v }
        guard let exe = arguments.first, ChildProcess.resolve(exe, path: env["PATH"]) != nil else {
            return ProcessResult(exitStatus: 127, timedOut: false,
                                 launchError: "command not found: '\(arguments.first ?? "")' (searched PATH)",
                                 stderrTail: "", stdoutTail: "", milliseconds: elapsed())
        }
        let token = UUID().uuidString.prefix(8)
        let outPath = stdoutFile ?? scratch.appendingPathComponent("out-\(token).txt").path
        let errPath = scratch.appendingPathComponent("err-\(token).txt").path
        defer {
            if stdoutFile == nil { unlink(outPath) }
            unlink(errPath)
        }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawnBackground(arguments, stdinFile: stdinFile, stdoutFile: outPath, stderrFile: errPath,
                                                   environment: env, newProcessGroup: true).pid
        } catch {
            return ProcessResult(exitStatus: 126, timedOut: false, launchError: error.reason, stderrTail: "",
                                 stdoutTail: "", milliseconds: elapsed())
        }
        LiveChildren.shared.add(pid)
        defer { LiveChildren.shared.remove(pid) }
        // The watchdog signals the child only under `state`'s lock and only while `finished` is false; the waiting
        // thread sets `finished` under that lock before it reaps the child (it waits with WNOWAIT first), so a pid
        // that was reaped — and may belong to another process since — is never signalled.
        let state = Locked(RunFlags())
        @Sendable func signal(_ sig: Int32) -> Bool {
            state.withLock { s in
                guard !s.finished else { return false }
                if sig == SIGTERM { s.timedOut = true }
                kill(-pid, sig)
                kill(pid, sig)
                return true
            }
        }
        let watchdog = Task.detached {
            if let stop {
                let deadline = ContinuousClock.now + timeout
                while ContinuousClock.now < deadline, !Task.isCancelled, !state.withLock(\.finished) {
                    if let why = stop() {
                        state.withLock { $0.stopReason = why }
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
            } else {
                try? await Task.sleep(for: timeout)
            }
            guard !Task.isCancelled, signal(SIGTERM) else { return }
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled else { return }
            _ = signal(SIGKILL)
        }
        let status: Int32 = await onDedicatedThread(named: "pinlab.wait") {
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
            // Its process group may outlive it (a grandchild): kill the group while the pid is still ours.
            state.withLock { s in
                if s.timedOut { kill(-pid, SIGKILL) }  // leave no grandchild behind
                s.finished = true
            }
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            return ChildProcess.exitCode(waitStatus: raw)
        }
        watchdog.cancel()
        let flags = state.withLock { $0 }
        return ProcessResult(exitStatus: status, timedOut: flags.timedOut, launchError: nil,
                             stderrTail: tail(errPath), stdoutTail: tail(outPath), milliseconds: elapsed(),
                             stopReason: flags.stopReason)
    }

    /// The gist of a client's output (its first 2 kB and last 2 kB): the first two lines, where command-line
    /// clients put the error, and the last one, where they put a summary; at most about 600 characters.
    static func tail(_ path: String) -> String {
        // An empty file is not read: swift-foundation's FileManager.contents(atPath:) leaks a 4 KiB buffer per call on
        // an empty file (AddressSanitizer, Swift 6.3.1), and most clients' stderr is empty (RELIABILITY.md).
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size > 0,
            let data = FileManager.default.contents(atPath: path), !data.isEmpty
        else { return "" }
        let text = data.count <= 4096
            ? String(decoding: data, as: UTF8.self)
            : String(decoding: data.prefix(2048), as: UTF8.self) + "\n" + String(decoding: data.suffix(2048), as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let picked = lines.count <= 3 ? lines : Array(lines.prefix(2)) + ["…", lines[lines.count - 1]]
        let joined = picked.joined(separator: " | ")
        return joined.count > 600 ? String(joined.prefix(600)) + "…" : joined
    }
}

/// The process groups of the client commands running now, so an interrupted runner can end them: each child
/// leads its own process group, so a Ctrl-C on the terminal does not reach it.
final class LiveChildren: Sendable {
    static let shared = LiveChildren()
    private let pids = Locked<Set<pid_t>>([])
    func add(_ pid: pid_t) { pids.withLock { _ = $0.insert(pid) } }
    func remove(_ pid: pid_t) { pids.withLock { _ = $0.remove(pid) } }
    /// Sends SIGKILL to every running client's process group.
    func killAll() {
        for pid in pids.withLock({ $0 }) {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
    }
}

/// What the waiting thread and the watchdog share about one child.
private struct RunFlags: Sendable {
    var finished = false
    var timedOut = false
    var stopReason: String?
}
