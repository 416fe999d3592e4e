import Foundation
import PinningLabCore
import PinningLabModel

/// Short column headers for the matrix.
func shortHeader(_ p: PinProfile) -> String {
    switch p {
    case .leafSPKIBackup: return "+backup"
    case .intermediateSPKI: return "int-spki"
    default: return p.rawValue
    }
}

/// The mark of one status in matrices.
func mark(_ s: Verdict.Status) -> String {
    switch s {
    case .pass: return "✓"
    case .fail: return "✗"
    case .disagree: return "≠"
    case .skipped: return "·"
    case .unsupported: return "∅"
    default: return "!"
    }
}

/// The terminal matrix: scenarios × profiles, one mark per engine in each cell, then the deviations and a summary.
enum TextReport {
    static func render(_ r: CheckReport, color: Bool, maxDeviations: Int? = nil) -> String {
        func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        func painted(_ status: Verdict.Status) -> String {
            let m = mark(status)
            switch status {
            case .pass: return paint(m, "32")
            case .fail: return paint(m, "1;31")
            case .disagree, .error: return paint(m, "1;33")
            default: return paint(m, "2")
            }
        }
        var out = ""
        let engines = r.engines
        out += paint("pinlab check", "1") + " · client \(r.client) · engines \(engines.joined(separator: ", "))\n"
        out += "Each cell: expected (A accept, X refuse), then one mark per engine (\(engines.joined(separator: ", "))):\n"
        out += "\(painted(.pass)) as expected  \(painted(.fail)) deviates  \(painted(.disagree)) client and server disagree  "
        out += "\(paint("?", "33")) refused, but for another reason  "
        out += "\(painted(.skipped)) skipped  \(painted(.unsupported)) unsupported  \(painted(.error)) error;  +backup = leaf-spki+backup\n\n"

        let ids = r.scenarios.map(\.id).isEmpty ? orderedUnique(r.verdicts.map(\.scenario)) : r.scenarios.map(\.id)
        let nameWidth = max(8, ids.map(\.count).max() ?? 8) + 2
        let widths = r.profiles.map { max(shortHeader($0).count, 2 + engines.count) + 2 }
        var header = "scenario".padding(toLength: nameWidth, withPad: " ", startingAt: 0)
        for (p, w) in zip(r.profiles, widths) { header += shortHeader(p).padding(toLength: w, withPad: " ", startingAt: 0) }
        out += paint(header.trimmingTrailing(), "1") + "\n"
        var index: [String: Verdict] = [:]
        for v in r.verdicts { index["\(v.scenario)|\(v.profile.rawValue)|\(v.engine)"] = v }
        for id in ids {
            var line = id.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            for (p, w) in zip(r.profiles, widths) {
                let vs = engines.map { index["\(id)|\(p.rawValue)|\($0)"] }
                let expected = vs.compactMap { $0 }.first?.expected
                let letter = expected.map { $0 == .accept ? "A" : "X" } ?? " "
                let marks = vs.map { v in v.map { $0.wrongReason ? paint("?", "33") : painted($0.status) } ?? " " }.joined()
                let visible = 2 + engines.count
                line += letter + " " + marks + String(repeating: " ", count: max(0, w - visible))
            }
            out += line.trimmingTrailing() + "\n"
        }

        let dev = r.deviations
        if !dev.isEmpty {
            out += "\n" + paint("Deviations (\(dev.count)):", "1") + "\n"
            let shown = maxDeviations.map { Array(dev.prefix($0)) } ?? dev
            for v in shown {
                out += "  \(painted(v.status)) \(v.scenario) × \(v.profile) × \(v.engine): \(v.reason)"
                if let a = v.alert?.description, !v.reason.contains(a) { out += " (alert \(a))" }
                out += "\n"
            }
            if shown.count < dev.count { out += "  … and \(dev.count - shown.count) more (a full `pinlab check` lists them all)\n" }
        }
        let wrong = r.verdicts.filter(\.wrongReason)
        if !wrong.isEmpty {
            out += "\n" + paint("Refused as expected, but for another reason than a correct client (\(wrong.count)):", "1") + "\n"
            let shown = maxDeviations.map { Array(wrong.prefix($0)) } ?? wrong
            for v in shown { out += "  ? \(v.scenario) × \(v.profile) × \(v.engine): \(v.reason)\n" }
            if shown.count < wrong.count { out += "  … and \(wrong.count - shown.count) more\n" }
        }
        out += "\n" + (r.deviates ? paint(r.summaryLine, "1;31") : paint(r.summaryLine, "1;32")) + "\n"
        return out
    }
}

func orderedUnique(_ xs: [String]) -> [String] {
    var seen: Set<String> = []
    return xs.filter { seen.insert($0).inserted }
}

extension String {
    func trimmingTrailing() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// A Markdown report: a summary, the matrix as a table, and the deviations.
enum MarkdownReport {
    static func render(_ r: CheckReport) -> String {
        var out = "# pinlab check: \(r.client)\n\n"
        out += "- Engines: \(r.engines.joined(separator: ", "))\n"
        out += "- Result: **\(r.deviates ? "deviates" : "conforms")** — \(r.summary.line)\n"
        out += "- Duration: \(String(format: "%.2f", r.durationSeconds)) s\n\n"
        out += "Each cell: the expected outcome (A accept, X refuse), then one mark per engine "
        out += "(\(r.engines.joined(separator: ", "))): ✓ as expected, ✗ deviates, ≠ client and server disagree, "
        out += "? refused as expected but for another reason than a correct client, "
        out += "· skipped, ∅ unsupported, ! error.\n\n"
        out += "| scenario | " + r.profiles.map { "`\($0.rawValue)`" }.joined(separator: " | ") + " |\n"
        out += "|---|" + r.profiles.map { _ in ":-:" }.joined(separator: "|") + "|\n"
        var index: [String: Verdict] = [:]
        for v in r.verdicts { index["\(v.scenario)|\(v.profile.rawValue)|\(v.engine)"] = v }
        let ids = r.scenarios.map(\.id).isEmpty ? orderedUnique(r.verdicts.map(\.scenario)) : r.scenarios.map(\.id)
        for id in ids {
            var cells: [String] = []
            for p in r.profiles {
                let vs = r.engines.map { index["\(id)|\(p.rawValue)|\($0)"] }
                let letter = vs.compactMap { $0 }.first.map { $0.expected == .accept ? "A" : "X" } ?? ""
                cells.append(letter + " " + vs.map { v in v.map { $0.wrongReason ? "?" : mark($0.status) } ?? " " }.joined())
            }
            out += "| `\(id)` | " + cells.joined(separator: " | ") + " |\n"
        }
        let dev = r.deviations
        if !dev.isEmpty {
            out += "\n## Deviations\n\n"
            for v in dev {
                out += "- \(mark(v.status)) `\(v.scenario)` × `\(v.profile)` × \(v.engine): \(escapeMarkdown(v.reason))"
                if let a = v.alert { out += " (alert `\(a)`)" }
                out += "\n"
            }
        }
        let wrong = r.verdicts.filter(\.wrongReason)
        if !wrong.isEmpty {
            out += "\n## Refused for another reason\n\n"
            for v in wrong { out += "- `\(v.scenario)` × `\(v.profile)` × \(v.engine): \(escapeMarkdown(v.reason))\n" }
        }
        return out
    }

    static func escapeMarkdown(_ s: String) -> String {
        s.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
