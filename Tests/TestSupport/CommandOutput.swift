public import Foundation
import PinningLab
import PinningLabCore
import PinningLabPKI

/// What a finished command printed, and its status (-9 when it was killed at its time limit).
public struct CommandOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var output: String { stdout + stderr }
}

/// Runs a command with a time limit through the package's one process runner (`ChildProcess`); a command still
/// running after `timeout` is killed.
public func commandOutput(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) async -> CommandOutput {
    let r = await ChildProcess.run(args, input: Array((stdin ?? "").utf8), timeout: .milliseconds(Int(timeout * 1000)))
    return CommandOutput(status: r.timedOut ? -9 : r.status, stdout: r.stdoutText, stderr: r.stderrText)
}
