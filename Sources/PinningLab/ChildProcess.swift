import Foundation
import PinningLabCore
import PinningLabPKI

/// Child processes started with `posix_spawnp`, for the CLIs PinningLab drives (clients under test, openssl, curl).
///
/// Foundation's `Process` is not used: on Linux its `run()` can crash reading `/proc/self/fd` (an over-read in
/// `findMaximumOpenFromProcSelfFD`, swift-corelibs-foundation#5472) in processes with many descriptors open, as a
/// test process full of servers is. Pipes are created close-on-exec, so a process spawned concurrently by another
/// thread never inherits them, and output is read until the child exits, not until EOF, so a grandchild holding a
/// pipe open cannot stall the caller.
package enum ChildProcess {
    /// How a child ended.
    package struct Result: Sendable {
        /// The exit code, or 128 + the signal that ended it (as a shell reports it); 127 when it could not be started.
        package var status: Int32
        package var stdout: [UInt8]
        package var stderr: [UInt8]
        /// Killed because its time ran out.
        package var timedOut: Bool
        /// Why it could not be started, if it could not.
        package var launchError: String?
        package var milliseconds: Double
        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        package var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Standard output then standard error.
        package var output: String { stdoutText + stderrText }
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

    /// Runs `arguments` to completion on a dedicated thread (off the cooperative pool).
    package static func run(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8] = [],
        timeout: Duration = .seconds(30), newProcessGroup: Bool = false, outputLimit: Int = 8 << 20
    ) async -> Result {
        await onDedicatedThread(named: "pinlab.child") {
            runBlocking(arguments, environment: environment, input: input, timeout: timeout,
                        newProcessGroup: newProcessGroup, outputLimit: outputLimit)
        }
    }

    /// Runs `arguments` to completion on the calling thread. On overrun the child (and its process group when
    /// `newProcessGroup`) gets SIGTERM, then SIGKILL 500 ms later.
    package static func runBlocking(
        _ arguments: [String], environment: [String: String]? = nil, input: [UInt8] = [],
        timeout: Duration = .seconds(30), newProcessGroup: Bool = false, outputLimit: Int = 8 << 20
    ) -> Result {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        func failed(_ why: String) -> Result {
            Result(status: 127, stdout: [], stderr: Array(why.utf8), timedOut: false, launchError: why, milliseconds: elapsed())
        }
        guard let exe = arguments.first else { return failed("no command") }
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let path = resolve(exe, path: env["PATH"]) else { return failed("command not found: '\(exe)' (searched PATH)") }

        var inP: [Int32] = [-1, -1], outP: [Int32] = [-1, -1], errP: [Int32] = [-1, -1]
        guard makePipe(&inP), makePipe(&outP), makePipe(&errP) else {
            for fd in inP + outP + errP where fd >= 0 { close(fd) }
            return failed("cannot create pipes: \(String(cString: strerror(errno)))")
        }
        defer { for fd in [outP[0], errP[0]] { close(fd) } }
        for fd in [outP[0], errP[0], inP[1]] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }

        var pid: pid_t = 0
        let rc = spawn(path: path, arguments: arguments, environment: env, stdin: inP[0], stdout: outP[1],
                       stderr: errP[1], newProcessGroup: newProcessGroup, pid: &pid)
        close(inP[0])
        close(outP[1])
        close(errP[1])
        guard rc == 0 else {
            close(inP[1])
            return failed("cannot start '\(exe)': \(String(cString: strerror(rc)))")
        }

        var out: [UInt8] = [], err: [UInt8] = []
        var pendingInput = input[...]
        var inputFD: Int32 = inP[1]
        if pendingInput.isEmpty {
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
        let deadline = start + UInt64(timeout.components.seconds) * 1_000_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000)
        var timedOut = false
        var killAt: UInt64? = nil
        var status: Int32 = 0
        var outOpen = true, errOpen = true
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
            let w = waitpid(pid, &status, WNOHANG)
            if w == pid { break }
            let now = DispatchTime.now().uptimeNanoseconds
            if !timedOut && now > deadline {
                timedOut = true
                kill(newProcessGroup ? -pid : pid, SIGTERM)
                killAt = now + 500_000_000
            }
            if let k = killAt, now > k {
                kill(newProcessGroup ? -pid : pid, SIGKILL)
                killAt = nil
            }
        }
        if inputFD >= 0 { close(inputFD) }
        if outOpen { _ = drain(outP[0], into: &out) }
        if errOpen { _ = drain(errP[0], into: &err) }
        if newProcessGroup && timedOut { kill(-pid, SIGKILL) }
        return Result(status: exitCode(waitStatus: status), stdout: out, stderr: err, timedOut: timedOut, launchError: nil, milliseconds: elapsed())
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
        guard i >= 0, o >= 0, e >= 0 else { throw ChildProcessError(reason: "cannot open output files: \(String(cString: strerror(errno)))") }
        var pid: pid_t = 0
        let rc = spawn(path: path, arguments: arguments, environment: env, stdin: i, stdout: o, stderr: e,
                       newProcessGroup: newProcessGroup, pid: &pid)
        guard rc == 0 else { throw ChildProcessError(reason: "cannot start '\(exe)': \(String(cString: strerror(rc)))") }
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
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        return spawnLock.withLock { spawned in
            spawned += 1
            return posix_spawn(&pid, path, &actions, &attr, argv, envp)
        }
    }
}

/// A child process could not be started.
package struct ChildProcessError: Error, CustomStringConvertible, Sendable {
    package var reason: String
    package var description: String { reason }
}

