import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// The answers so far, matched to cells; shared between the process watcher and the runner.
final class AnswerTally: Sendable {
    enum Answer {
        case answered(BatchResult, line: Int)
        case invalid(String)
    }
    enum Final: Sendable {
        case answered(BatchResult)
        case invalid(String)
    }
    private struct Tally {
        var byCell: [Int: Answer] = [:]
        var problems: [String] = []
        var lastAnswer: ContinuousClock.Instant?

        mutating func record(_ i: Int, _ answer: Answer, line n: Int) {
            lastAnswer = .now
            if let previous = byCell[i] {
                let first: String
                switch previous {
                case .answered(_, let line): first = "line \(line)"
                case .invalid(let why):
                    first =
                        why.hasPrefix("reported twice") ? String(why.prefix(while: { $0 != ";" })) : "an earlier line"
                }
                byCell[i] = .invalid("reported twice (\(first) and line \(n)); a cell must be answered exactly once")
                return
            }
            byCell[i] = answer
        }
    }
    private let tally = Locked(Tally())
    private let index: [String: Int]
    private let progress: (@Sendable (CheckProgress) -> Void)?
    private let total: Int
    private let started = ContinuousClock.now

    init(index: [String: Int], progress: (@Sendable (CheckProgress) -> Void)?, total: Int) {
        self.index = index
        self.progress = progress
        self.total = total
    }

    /// Takes raw output lines (line number, text).
    func takeText(_ lines: [(Int, String)]) {
        take(
            lines.compactMap { n, text in
                let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
                return t.isEmpty ? nil : (n, AnswerLine(t))
            })
    }

    func take(_ lines: [(Int, AnswerLine)]) {
        guard !lines.isEmpty else { return }
        let (done, bad) = tally.withLock { t in
            for (n, line) in lines {
                switch line {
                case .malformed(let text, let why):
                    let shown = text.count > 120 ? String(text.prefix(120)) + "…" : text
                    t.problems.append("line \(n) of the harness's output is not an answer (\(why)): \(shown)")
                case .invalid(let id, let step, let why):
                    guard let i = index[BatchResult.key(id, step: step)] else {
                        t.problems.append("line \(n) names an unknown cell id '\(id)'" + stepHint(id, step))
                        continue
                    }
                    t.record(i, .invalid("line \(n) answers this cell with a malformed result: \(why)"), line: n)
                case .decoded(let a):
                    guard let i = index[a.key] else {
                        let hint = stepHint(a.id, a.step)
                        let near =
                            hint.isEmpty
                            ? suggestion(a.id, in: index.keys.filter { !$0.contains("#") }).map {
                                " (did you mean '\($0)'?)"
                            } ?? "" : ""
                        t.problems.append("line \(n) names an unknown cell id '\(a.id)'\(near)\(hint)")
                        continue
                    }
                    t.record(i, .answered(a, line: n), line: n)
                }
            }
            return (t.byCell.count, t.byCell.values.filter { if case .invalid = $0 { true } else { false } }.count)
        }
        progress?(
            CheckProgress(
                done: done, total: total, deviations: bad,
                elapsedSeconds: seconds(ContinuousClock.now - started)))
    }

    /// Why an id that names a cell does not match with this `step` (empty when the id names no cell at all).
    private func stepHint(_ id: String, _ step: Int?) -> String {
        let steps = index.keys.filter { $0.hasPrefix(id + "#") }.count
        if step == nil && steps > 0 {
            return ": that cell is \(steps) connections; answer each with \"step\": 1 … \(steps)"
        }
        if let step, steps > 0 { return ": that cell has steps 1 … \(steps), not \(step)" }
        if step != nil && index[id] != nil { return ": that cell is one connection; answer it without \"step\"" }
        return ""
    }

    var problems: [String] { tally.withLock { $0.problems } }
    var lastAnswer: ContinuousClock.Instant? { tally.withLock { $0.lastAnswer } }
    var complete: Bool { tally.withLock { $0.byCell.count == index.count } }

    var answers: [Int: Final] {
        tally.withLock {
            $0.byCell.mapValues {
                switch $0 {
                case .answered(let a, _): return .answered(a)
                case .invalid(let why): return .invalid(why)
                }
            }
        }
    }
}
