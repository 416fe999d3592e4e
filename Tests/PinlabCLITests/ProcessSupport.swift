import Foundation
import PinningLabTestSupport
import PinningLabCore
import PinningLab

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

/// Runs a command with a time limit; a command still running after `timeout` is killed.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) async throws -> Run {
    let r = await ChildProcess.run(args, input: Array((stdin ?? "").utf8), timeout: .milliseconds(Int(timeout * 1000)))
    return Run(status: r.timedOut ? -9 : r.status, stdout: r.stdoutText, stderr: r.stderrText)
}



extension CLI {
    /// The JSON manifest `pinlab serve --manifest` writes, once it is complete (it parses), or `nil` after `limit`.
    static func manifest(_ url: URL, waitingUpTo limit: Duration) async -> [String: Any]? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let d = try? Data(contentsOf: url), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any] {
                return o
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }
}
