import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
}

/// Runs a command with a time limit; on overrun it sends SIGTERM to the process (and its group), then SIGKILL
/// one second later. Output goes to temporary files so a child that keeps a pipe open can never stall us.
enum ProcessRunner {
    static func resolve(_ command: String, environment: [String: String]) -> String? {
        if command.contains("/") { return FileManager.default.isExecutableFile(atPath: command) ? command : nil }
        let path = environment["PATH"] ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func run(
        _ arguments: [String], extraEnvironment: [String: String] = [:], timeout: Duration, scratch: URL
    ) async -> ProcessResult {
        let start = ContinuousClock.now
        func elapsed() -> Double {
            let d = ContinuousClock.now - start
            return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
        }
        var env = ProcessInfo.processInfo.environment
        for (k, v) in extraEnvironment { env[k] = v }
        guard let exe = arguments.first, let path = resolve(exe, environment: env) else {
            return ProcessResult(exitStatus: 127, timedOut: false,
                                 launchError: "command not found: '\(arguments.first ?? "")' (searched PATH)",
                                 stderrTail: "", stdoutTail: "", milliseconds: elapsed())
        }
        let token = UUID().uuidString.prefix(8)
        let outURL = scratch.appendingPathComponent("out-\(token).txt")
        let errURL = scratch.appendingPathComponent("err-\(token).txt")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        guard let outHandle = try? FileHandle(forWritingTo: outURL),
              let errHandle = try? FileHandle(forWritingTo: errURL)
        else {
            return ProcessResult(exitStatus: 126, timedOut: false, launchError: "cannot create output files in \(scratch.path)",
                                 stderrTail: "", stdoutTail: "", milliseconds: elapsed())
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = Array(arguments.dropFirst())
        p.environment = env
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = outHandle
        p.standardError = errHandle
        let state = RunState()
        let status: Int32 = await withCheckedContinuation { (cont: CheckedContinuation<Int32, Never>) in
            p.terminationHandler = { proc in
                if state.finish() { cont.resume(returning: proc.terminationStatus) }
            }
            do {
                try p.run()
            } catch {
                state.launchError = "\(error)"
                if state.finish() { cont.resume(returning: 126) }
                return
            }
            let pid = p.processIdentifier
            Task.detached {
                try? await Task.sleep(for: timeout)
                guard !state.isFinished else { return }
                state.timedOut = true
                kill(pid, SIGTERM)
                kill(-pid, SIGTERM)
                try? await Task.sleep(for: .seconds(1))
                guard !state.isFinished else { return }
                kill(pid, SIGKILL)
                kill(-pid, SIGKILL)
            }
        }
        try? outHandle.close()
        try? errHandle.close()
        return ProcessResult(exitStatus: status, timedOut: state.timedOut, launchError: state.launchError,
                             stderrTail: tail(errURL), stdoutTail: tail(outURL), milliseconds: elapsed())
    }

    /// The last few lines (at most 2 kB) of a file, trimmed.
    static func tail(_ url: URL) -> String {
        guard let data = try? Data(contentsOf: url), !data.isEmpty else { return "" }
        let slice = data.suffix(2048)
        let text = String(decoding: slice, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.suffix(3).joined(separator: " | ")
    }
}

/// Shared between the termination handler and the watchdog.
private final class RunState: @unchecked Sendable {
    // @unchecked: every field is read and written under `lock`.
    private let lock = NSLock()
    private var _finished = false
    private var _timedOut = false
    private var _launchError: String?

    /// Marks the run finished; true only for the first caller.
    func finish() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if _finished { return false }
        _finished = true
        return true
    }
    var isFinished: Bool { lock.lock(); defer { lock.unlock() }; return _finished }
    var timedOut: Bool {
        get { lock.lock(); defer { lock.unlock() }; return _timedOut }
        set { lock.lock(); _timedOut = newValue; lock.unlock() }
    }
    var launchError: String? {
        get { lock.lock(); defer { lock.unlock() }; return _launchError }
        set { lock.lock(); _launchError = newValue; lock.unlock() }
    }
}
