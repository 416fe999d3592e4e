import Foundation
import PinningLabCore

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

/// Runs a command with a time limit; a command still running after `timeout` is killed.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) throws -> Run {
    let r = ChildProcess.runBlocking(args, input: Array((stdin ?? "").utf8), timeout: .milliseconds(Int(timeout * 1000)))
    return Run(status: r.timedOut ? -9 : r.status, stdout: r.stdoutText, stderr: r.stderrText)
}

