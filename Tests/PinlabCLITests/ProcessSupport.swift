import Foundation
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


/// The tools these tests call, found on the PATH.
enum Tool {
    /// The executable `name` on the PATH, if there is one.
    static func path(_ name: String) -> String? {
        ChildProcess.resolve(name)
    }

    /// CI installs every tool these tests call (openssl, certtool, curl, xmllint, python3 with jsonschema).
    static let inCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Whether a test needing `name` runs: always in CI, where a missing tool must fail the test; elsewhere only
    /// when the tool is on the PATH, so that a developer without it sees the test reported as skipped.
    static func runs(needing name: String) -> Bool { inCI || path(name) != nil }
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
