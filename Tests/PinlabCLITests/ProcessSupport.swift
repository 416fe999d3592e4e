import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport

typealias Run = CommandOutput

/// Runs a command with a time limit (``commandOutput(_:stdin:timeout:)``).
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) async throws -> Run {
    await commandOutput(args, stdin: stdin, timeout: timeout)
}

extension CLI {
    /// The JSON manifest `pinlab serve --manifest` writes, once it is complete (it parses), or `nil` after `limit`.
    static func manifest(_ url: URL, waitingUpTo limit: Duration) async -> [String: Any]? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let d = try? Data(contentsOf: url), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any]
            {
                return o
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }
}
