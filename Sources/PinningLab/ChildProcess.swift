import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabPKI

/// Child processes started with `posix_spawnp`: the one way PinningLab runs another program (clients under test,
/// batch harnesses, openssl, curl).
///
/// Foundation's `Process` is not used: on Linux its `run()` can crash reading `/proc/self/fd` (an over-read in
/// `findMaximumOpenFromProcSelfFD`, swift-corelibs-foundation#5472) in processes with many descriptors open, as a
/// test process full of servers is. Pipes and files are opened close-on-exec, so a process spawned concurrently by
/// another thread never inherits them; output is read until the child exits, not until EOF, so a grandchild
/// holding a pipe open cannot stall the caller. Children start with default signal dispositions and an empty mask
/// (the runner ignores SIGPIPE; a child must not inherit that).
package enum ChildProcess {
    /// How a child ended.
    package struct Result: Sendable {
        /// The exit code, or 128 + the signal that ended it (as a shell reports it); 127 when the command was not
        /// found, 126 when it was found but could not be started.
        package var status: Int32
        /// Its standard output (empty when it went to a `stdoutFile`) and standard error, at most `outputLimit`
        /// bytes each.
        package var stdout: [UInt8]
        package var stderr: [UInt8]
        /// Killed because its time ran out, or because `stop` asked for it.
        package var timedOut: Bool
        /// Why it could not be started, if it could not.
        package var launchError: String?
        package var milliseconds: Double
        /// Why `stop` ended it early, if it did.
        package var stopReason: String? = nil
        /// The CPU time it used (user and system, from `wait4`): a measure of its work that a loaded machine does
        /// not inflate as it inflates wall time.
        package var cpuSeconds: Double = 0
        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        package var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Standard output then standard error.
        package var output: String { stdoutText + stderrText }
        /// The gist of standard error (``ChildProcess/gist(_:)``).
        package var stderrGist: String { ChildProcess.gist(stderr) }
        /// The gist of standard output.
        package var stdoutGist: String { ChildProcess.gist(stdout) }
    }

    /// The gist of a program's output (its first 2 kB and last 2 kB): the first two lines, where command-line
    /// programs put the error, and the last one, where they put a summary; at most about 600 characters.
    package static func gist(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "" }
        let text =
            bytes.count <= 4096
            ? String(decoding: bytes, as: UTF8.self)
            : String(decoding: bytes.prefix(2048), as: UTF8.self) + "\n"
                + String(decoding: bytes.suffix(2048), as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        let picked = lines.count <= 3 ? lines : Array(lines.prefix(2)) + ["…", lines[lines.count - 1]]
        let joined = picked.joined(separator: " | ")
        return joined.count > 600 ? String(joined.prefix(600)) + "…" : joined
    }

    /// A `waitpid` status as a shell reports it: the exit code, or 128 + the number of the signal that ended the
    /// child. The one convention of every process PinningLab runs.
    package static func exitCode(waitStatus raw: Int32) -> Int32 {
        (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }

    /// Finds `command` in `PATH` (or takes it as is when it contains a slash).
    package static func resolve(_ command: String, path: String? = nil) -> String? {
        if command.contains("/") { return access(command, X_OK) == 0 ? command : nil }
        let search = path ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in search.split(separator: ":") where access("\(dir)/\(command)", X_OK) == 0 {
            return "\(dir)/\(command)"
        }
        return nil
    }

    /// Runs `arguments` to completion on a dedicated thread (off the cooperative pool); see ``runBlocking``.
    package static func run(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8] = [], stdinFile: String? = nil,
        stdoutFile: String? = nil, timeout: Duration = .seconds(30), newProcessGroup: Bool = false,
        killAfter grace: Duration = .milliseconds(500), outputLimit: Int = 8 << 20,
        stop: (@Sendable () -> String?)? = nil
    ) async -> Result {
        await onDedicatedThread(named: "pinlab.child") {
            runBlocking(
                arguments, environment: environment, input: input, stdinFile: stdinFile, stdoutFile: stdoutFile,
                timeout: timeout, newProcessGroup: newProcessGroup, killAfter: grace,
                outputLimit: outputLimit, stop: stop)
        }
    }

    /// Runs `arguments` to completion on the calling thread.
    ///
    /// Standard input is `input` through a pipe, or the file `stdinFile`; standard output is captured, or appended
    /// to `stdoutFile` (which the caller owns and may read while the child runs); standard error is captured. On
    /// overrun — or when `stop`, asked about every 50 ms, returns a reason (kept in `stopReason`) — the child gets
    /// SIGTERM, then SIGKILL `grace` later. With `newProcessGroup` the child leads a process group of its own:
    /// signals go to the whole group, a group that outlives a killed child is killed, and the child is listed in
    /// ``LiveChildren`` while it runs (a terminal's Ctrl-C does not reach it). The child is signalled only before
    /// it is reaped, so a pid that may belong to another process by then is never signalled.
    package static func runBlocking(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8] = [], stdinFile: String? = nil,
        stdoutFile: String? = nil, timeout: Duration = .seconds(30), newProcessGroup: Bool = false,
        killAfter grace: Duration = .milliseconds(500), outputLimit: Int = 8 << 20,
        stop: (@Sendable () -> String?)? = nil
    ) -> Result {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        func failed(_ status: Int32, _ why: String) -> Result {
            Result(
                status: status, stdout: [], stderr: Array(why.utf8), timedOut: false, launchError: why,
                milliseconds: elapsed())
        }
        guard let exe = arguments.first else { return failed(127, "no command") }
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let path = resolve(exe, path: env["PATH"]) else {
            return failed(127, "command not found: '\(exe)' (searched PATH)")
        }

        // Standard input, output and error: a pipe each, or the named files (opened close-on-exec).
        var inP: [Int32] = [-1, -1]
        var outP: [Int32] = [-1, -1]
        var errP: [Int32] = [-1, -1]
        var opened = true
        if let stdinFile { inP[0] = open(stdinFile, O_RDONLY | O_CLOEXEC) } else { opened = makePipe(&inP) }
        if let stdoutFile {
            outP[1] = open(stdoutFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        } else if opened {
            opened = makePipe(&outP)
        }
        if opened { opened = makePipe(&errP) }
        guard opened, inP[0] >= 0, outP[1] >= 0 else {
            let why = String(cString: strerror(errno))
            for fd in inP + outP + errP where fd >= 0 { close(fd) }
            return failed(126, "cannot open the standard streams of '\(exe)': \(why)")
        }
        defer { for fd in [outP[0], errP[0]] where fd >= 0 { close(fd) } }
        for fd in [outP[0], errP[0], inP[1]] where fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }

        var pid: pid_t = 0
        let rc = spawn(
            path: path, arguments: arguments, environment: env, stdin: inP[0], stdout: outP[1],
            stderr: errP[1], newProcessGroup: newProcessGroup, pid: &pid)
        close(inP[0])
        close(outP[1])
        close(errP[1])
        guard rc == 0 else {
            if inP[1] >= 0 { close(inP[1]) }
            return failed(126, "cannot start '\(exe)': \(String(cString: strerror(rc)))")
        }
        if newProcessGroup { LiveChildren.shared.add(pid) }
        defer { if newProcessGroup { LiveChildren.shared.remove(pid) } }
        let target = newProcessGroup ? -pid : pid

        var out: [UInt8] = []
        var err: [UInt8] = []
        var pendingInput = input[...]
        var inputFD: Int32 = inP[1]
        if inputFD >= 0 && pendingInput.isEmpty {
            close(inputFD)
            inputFD = -1
        }
        var buf = [UInt8](repeating: 0, count: 65536)
        func drain(_ fd: Int32, into data: inout [UInt8]) -> Bool {  // false at EOF
            while true {
                let n = buf.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if data.count < outputLimit { data.append(contentsOf: buf[0..<min(n, outputLimit - data.count)]) }
                    continue
                }
                if n == 0 { return false }
                return errno == EINTR ? true : errno == EAGAIN || errno == EWOULDBLOCK
            }
        }
        func nanoseconds(_ d: Duration) -> UInt64 {
            UInt64(max(0, d.components.seconds)) * 1_000_000_000
                + UInt64(max(0, d.components.attoseconds) / 1_000_000_000)
        }
        let deadline = start + nanoseconds(timeout)
        var timedOut = false
        var stopReason: String? = nil
        var nextStopCheck = start
        var killAt: UInt64? = nil
        var outOpen = outP[0] >= 0
        var errOpen = true
        while true {
            if inputFD >= 0 {
                let n = pendingInput.withUnsafeBytes { systemWrite(inputFD, $0.baseAddress, $0.count) }
                if n > 0 { pendingInput = pendingInput.dropFirst(n) }
                if pendingInput.isEmpty || (n < 0 && errno != EAGAIN && errno != EINTR) {
                    close(inputFD)
                    inputFD = -1
                }
            }
            var fds: [pollfd] = []
            if outOpen { fds.append(pollfd(fd: outP[0], events: Int16(POLLIN), revents: 0)) }
            if errOpen { fds.append(pollfd(fd: errP[0], events: Int16(POLLIN), revents: 0)) }
            if inputFD >= 0 { fds.append(pollfd(fd: inputFD, events: Int16(POLLOUT), revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), 10)
            if outOpen { outOpen = drain(outP[0], into: &out) }
            if errOpen { errOpen = drain(errP[0], into: &err) }
            // Ended? Asked without reaping (WNOWAIT): until it is reaped the pid, and its group, are still its own.
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo == SIGCHLD { break }
            let now = DispatchTime.now().uptimeNanoseconds
            if !timedOut, let stop, now >= nextStopCheck {
                nextStopCheck = now + 50_000_000
                stopReason = stop()
            }
            if !timedOut && (now > deadline || stopReason != nil) {
                timedOut = true
                kill(target, SIGTERM)
                killAt = now + nanoseconds(grace)
            }
            if let k = killAt, now > k {
                kill(target, SIGKILL)
                killAt = nil
            }
        }
        if newProcessGroup && timedOut { kill(-pid, SIGKILL) }  // leave no grandchild behind
        var raw: Int32 = 0
        var usage = rusage()
        while wait4(pid, &raw, 0, &usage) < 0 && errno == EINTR {}
        if inputFD >= 0 { close(inputFD) }
        if outOpen { _ = drain(outP[0], into: &out) }
        if errOpen { _ = drain(errP[0], into: &err) }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return Result(
            status: exitCode(waitStatus: raw), stdout: out, stderr: err, timedOut: timedOut, launchError: nil,
            milliseconds: elapsed(), stopReason: stopReason,
            cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }

    /// A child running in the background, its output going to files (or /dev/null). Stop it with ``terminate()``.
    package final class Background: Sendable {
        package let pid: Int32
        /// Its exit status once reaped: the exit code, or 128 + the signal that ended it.
        private let ended = Locked<Int32?>(nil)
        init(pid: Int32) { self.pid = pid }

        /// Whether it is still running (reaps it if it has ended).
        package var isRunning: Bool {
            ended.withLock { ended in
                guard ended == nil else { return false }
                var status: Int32 = 0
                guard waitpid(pid, &status, WNOHANG) == pid else { return true }
                ended = ChildProcess.exitCode(waitStatus: status)
                return false
            }
        }

        /// The exit status once it has ended (the exit code, or 128 + the signal that ended it); nil while it runs.
        package var exitStatus: Int32? { isRunning ? nil : ended.withLock { $0 } }

        /// SIGKILL, then reap. Safe to call more than once.
        package func terminate() {
            ended.withLock { ended in
                guard ended == nil else { return }
                kill(pid, SIGKILL)
                var status: Int32 = 0
                _ = waitpid(pid, &status, 0)
                ended = 128 + SIGKILL
            }
        }
    }

    /// Starts `arguments` in the background with standard input from `stdinFile` (/dev/null when nil) and its
    /// output appended to the given files (/dev/null when nil).
    /// With `newProcessGroup`, the child leads a process group of its own, so `kill(-pid, …)` reaches its children.
    package static func spawnBackground(
        _ arguments: [String], stdinFile: String? = nil, stdoutFile: String? = nil, stderrFile: String? = nil,
        environment: [String: String]? = nil, newProcessGroup: Bool = false
    ) throws(ChildProcessError) -> Background {
        guard let exe = arguments.first else { throw ChildProcessError(reason: "no command") }
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let path = resolve(exe, path: env["PATH"]) else {
            throw ChildProcessError(reason: "command not found: '\(exe)' (searched PATH)")
        }
        func openFile(_ p: String?, _ flags: Int32) -> Int32 {
            open(p ?? "/dev/null", flags | O_CLOEXEC, 0o600)
        }
        let i = openFile(stdinFile, O_RDONLY)
        let o = openFile(stdoutFile, O_WRONLY | O_CREAT | O_APPEND)
        let e = stderrFile == stdoutFile ? o : openFile(stderrFile, O_WRONLY | O_CREAT | O_APPEND)
        defer {
            close(i)
            close(o)
            if e != o { close(e) }
        }
        guard i >= 0, o >= 0, e >= 0 else {
            throw ChildProcessError(reason: "cannot open output files: \(String(cString: strerror(errno)))")
        }
        var pid: pid_t = 0
        let rc = spawn(
            path: path, arguments: arguments, environment: env, stdin: i, stdout: o, stderr: e,
            newProcessGroup: newProcessGroup, pid: &pid)
        guard rc == 0 else {
            throw ChildProcessError(reason: "cannot start '\(exe)': \(String(cString: strerror(rc)))")
        }
        return Background(pid: pid)
    }

    /// Held while creating close-on-exec descriptors and while spawning, so that where pipes are not made close-on-exec
    /// atomically (Darwin: pipe, then fcntl) no child spawned here inherits one in the instant between. It counts the
    /// children spawned: a `Locked<Void>` made ThreadSanitizer report its zero-sized value's inout accesses as a race.
    private static let spawnLock = Locked(0)

    /// A blocking pipe (a child's standard stream), close-on-exec: `Sockets.makePipe`.
    private static func makePipe(_ fds: inout [Int32]) -> Bool {
        guard let (r, w) = spawnLock.withLock({ _ in Sockets.makePipe(nonBlocking: false) }) else { return false }
        fds = [r, w]
        return true
    }

    private static func spawn(
        path: String, arguments: [String], environment: [String: String], stdin: Int32, stdout: Int32, stderr: Int32,
        newProcessGroup: Bool, pid: inout pid_t
    ) -> Int32 {
        #if canImport(Glibc)
            var actions = posix_spawn_file_actions_t()
            var attr = posix_spawnattr_t()
        #else
            var actions: posix_spawn_file_actions_t? = nil
            var attr: posix_spawnattr_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Children start with default signal handling and an empty mask, whatever the spawning thread blocks.
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setsigmask(&attr, &none)
        var flags = Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newProcessGroup {
            flags |= Int16(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attr, 0)
        }
        posix_spawnattr_setflags(&attr, flags)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        return spawnLock.withLock { spawned in
            spawned += 1
            return posix_spawn(&pid, path, &actions, &attr, argv, envp)
        }
    }
}

/// The process groups of the children running now in groups of their own (``ChildProcess/runBlocking``'s
/// `newProcessGroup`), so an interrupted runner can end them: a terminal's Ctrl-C does not reach them.
final class LiveChildren: Sendable {
    static let shared = LiveChildren()
    private let pids = Locked<Set<pid_t>>([])
    func add(_ pid: pid_t) { pids.withLock { _ = $0.insert(pid) } }
    func remove(_ pid: pid_t) { pids.withLock { _ = $0.remove(pid) } }
    /// Sends SIGKILL to every such child's process group.
    func killAll() {
        for pid in pids.withLock({ $0 }) {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
    }
}

/// A child process could not be started.
package struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    package var reason: String
    package var description: String { reason }
}
