import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI

extension CheckCommand {
    /// `pinlab check --batch`: one harness run for every cell. The problems that belong to no cell (an unknown id, a
    /// line that is not JSON, a non-zero exit) go to standard error; the caller exits 1 when there are any.
    func runBatch(_ runner: CheckRunner, options: CheckOptions) async throws -> (CheckReport, [String]) {
        let batchOptions = BatchOptions(
            cellTimeout: .milliseconds(Int((cellTimeout ?? clientOptions.timeout) * 1000)),
            batchTimeout: .milliseconds(Int((batchTimeout ?? 300) * 1000)), steps: batchSteps)
        let run = try await runner.runBatch(
            .command(name: clientOptions.name, arguments: command), options: options, batch: batchOptions)
        for p in run.problems { FileHandle.standardError.write(Data("batch harness: \(p)\n".utf8)) }
        return (run.report, run.problems)
    }
}

/// `pinlab check`'s progress on a terminal: cells done of total, failures so far, time left — on standard error, one
/// line redrawn at most ten times a second; nothing when standard error is not a terminal.
final class ProgressLine: Sendable {
    private struct Drawn {
        var last = ContinuousClock.now - .seconds(1)
        var onScreen = false
    }
    private let enabled = isatty(STDERR_FILENO) == 1
    private let state = Locked(Drawn())

    var update: @Sendable (CheckProgress) -> Void {
        { [self] p in draw(p) }
    }

    private func draw(_ p: CheckProgress) {
        guard enabled else { return }
        state.withLock { d in
            let now = ContinuousClock.now
            guard p.done == p.total || now - d.last >= .milliseconds(100) else { return }
            d.last = now
            d.onScreen = true
            let left = p.estimatedSecondsLeft.map { String(format: ", about %.0f s left", $0) } ?? ""
            let failing = p.deviations == 0 ? "no deviation" : "\(p.deviations) deviating"
            FileHandle.standardError.write(Data("\r\u{1B}[K\(p.done)/\(p.total) cells, \(failing)\(left)".utf8))
        }
    }

    /// Clears the line.
    func finish() {
        state.withLock { d in
            if d.onScreen { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            d.onScreen = false
        }
    }
}
