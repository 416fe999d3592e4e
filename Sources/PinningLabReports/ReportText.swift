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
    case .policy: return "P"
    case .stricter: return "S"
    default: return "!"
    }
}

/// The mark of one cell in matrices: `?` for a refusal for another reason, `b` for a deviation the baseline records.
func cellMark(_ v: Verdict) -> String {
    if v.baselined == true { return "b" }
    return v.wrongReason ? "?" : mark(v.status)
}

/// The legend of the marks a report uses beyond the usual ones (policy, stricter, baselined); empty when none.
func extraLegend(_ r: CheckReport, policy: String, stricter: String, baselined: String) -> String {
    var parts: [String] = []
    if r.summary.policy > 0 { parts.append(policy) }
    if r.summary.stricter > 0 { parts.append(stricter) }
    if r.summary.baselined > 0 { parts.append(baselined) }
    return parts.joined(separator: "  ")
}

/// Policy and stricter-than-required cells grouped by scenario and status: one line each, with the reason once.
func ruleGroups(_ ruled: [Verdict]) -> [(scenario: String, status: Verdict.Status, cells: String, why: String)] {
    var order: [String] = []
    var groups: [String: [Verdict]] = [:]
    for v in ruled {
        let key = "\(v.scenario)|\(v.status.rawValue)"
        if groups[key] == nil { order.append(key) }
        groups[key, default: []].append(v)
    }
    return order.map { key in
        let vs = groups[key]!
        let profiles = orderedUnique(vs.map(\.profile.rawValue))
        let engines = orderedUnique(vs.map(\.engine))
        let cells =
            "\(vs.count) cell\(vs.count == 1 ? "" : "s"): \(profiles.count == PinProfile.all.count ? "every profile" : profiles.joined(separator: ", ")) × \(engines.joined(separator: ", "))"
        // The reason up to the cell's own evidence ("; refused as expected: …").
        let why = vs[0].reason.components(separatedBy: "; ").first ?? vs[0].reason
        return (vs[0].scenario, vs[0].status, cells, why)
    }
}

/// Cells whose outcome a platform policy decided, or that were stricter than required, for the lists under matrices.
func ruleCells(_ r: CheckReport) -> [Verdict] { r.verdicts.filter { $0.status == .policy || $0.status == .stricter } }

/// A report's verdicts as its matrices (text, Markdown, HTML) draw them: the scenarios in order (the report's, or as
/// the verdicts name them when it lists none) and, per scenario and pin profile, one verdict per engine of the report.
struct VerdictMatrix {
    let scenarios: [String]
    private let engines: [String]
    private let index: [String: Verdict]

    init(_ r: CheckReport) {
        var index: [String: Verdict] = [:]
        for v in r.verdicts { index["\(v.scenario)|\(v.profile.rawValue)|\(v.engine)"] = v }
        self.index = index
        engines = r.engines
        scenarios = r.scenarios.map(\.id).isEmpty ? orderedUnique(r.verdicts.map(\.scenario)) : r.scenarios.map(\.id)
    }

    /// The cell's verdicts, one per engine (`nil`: the engine did not run it).
    func cell(_ scenario: String, _ profile: PinProfile) -> [Verdict?] {
        engines.map { index["\(scenario)|\(profile.rawValue)|\($0)"] }
    }

    /// `A` (accept) or `X` (refuse): the outcome a cell expects, from the first engine that ran it; `nil` when none did.
    static func expectedLetter(_ cell: [Verdict?]) -> String? {
        cell.compactMap { $0 }.first.map { $0.expected == .accept ? "A" : "X" }
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
        // What a client, a command template or a catalogue wrote is shown escaped (TextEscaping.terminal): a
        // client's ESC or OSC sequence on its standard error is printed as text, never run by the terminal.
        let t = TextEscaping.terminal
        var out = ""
        let engines = r.engines.map(t)
        out +=
            paint("pinlab check", "1") + " · client \(t(r.client)) · engines \(engines.joined(separator: ", "))"
            + (r.platform.map { " · platform \($0)" } ?? "") + (r.clientChecks.map { " · checks \($0)" } ?? "") + "\n"
        out +=
            "Each cell: expected (A accept, X refuse), then one mark per engine (\(engines.joined(separator: ", "))):\n"
        out +=
            "\(painted(.pass)) as expected  \(painted(.fail)) deviates  \(painted(.disagree)) client and server disagree  "
        out += "\(paint("?", "33")) refused, but for another reason  "
        out +=
            "\(painted(.skipped)) skipped  \(painted(.unsupported)) unsupported  \(painted(.error)) error;  +backup = leaf-spki+backup\n"
        let extra = extraLegend(
            r, policy: "\(paint("P", "36")) decided by the platform policy, as it prescribes",
            stricter: "\(paint("S", "36")) stricter than required",
            baselined: "\(paint("b", "33")) deviates as in the baseline")
        if !extra.isEmpty { out += extra + "\n" }
        out += "\n"

        let matrix = VerdictMatrix(r)
        let ids = matrix.scenarios
        let shownIDs = ids.map(t)
        let nameWidth = max(8, shownIDs.map(\.count).max() ?? 8) + 2
        let widths = r.profiles.map { max(shortHeader($0).count, 2 + engines.count) + 2 }
        var header = "scenario".padding(toLength: nameWidth, withPad: " ", startingAt: 0)
        for (p, w) in zip(r.profiles, widths) {
            header += shortHeader(p).padding(toLength: w, withPad: " ", startingAt: 0)
        }
        out += paint(header.trimmingTrailing(), "1") + "\n"
        for (id, shownID) in zip(ids, shownIDs) {
            var line = shownID.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
            for (p, w) in zip(r.profiles, widths) {
                let vs = matrix.cell(id, p)
                let letter = VerdictMatrix.expectedLetter(vs) ?? " "
                let marks = vs.map { v in
                    v.map { v in
                        v.baselined == true
                            ? paint("b", "33")
                            : v.wrongReason
                                ? paint("?", "33")
                                : (v.status == .policy || v.status == .stricter)
                                    ? paint(mark(v.status), "36") : painted(v.status)
                    } ?? " "
                }.joined()
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
                out +=
                    "  \(painted(v.status)) \(t(v.scenario)) × \(v.profile) × \(t(v.engine)): "
                    + (v.baselined == true ? "(baselined) " : "") + t(v.reason)
                if let a = v.alert?.description, !v.reason.contains(a) { out += " (alert \(t(a)))" }
                out += "\n"
            }
            if shown.count < dev.count {
                out += "  … and \(dev.count - shown.count) more (a full `pinlab check` lists them all)\n"
            }
        }
        let wrong = r.verdicts.filter(\.wrongReason)
        if !wrong.isEmpty {
            out +=
                "\n" + paint("Refused as expected, but for another reason than a correct client (\(wrong.count)):", "1")
                + "\n"
            let shown = maxDeviations.map { Array(wrong.prefix($0)) } ?? wrong
            for v in shown { out += "  ? \(t(v.scenario)) × \(v.profile) × \(t(v.engine)): \(t(v.reason))\n" }
            if shown.count < wrong.count { out += "  … and \(wrong.count - shown.count) more\n" }
        }
        let ruled = ruleCells(r)
        if !ruled.isEmpty {
            out +=
                "\n"
                + paint(
                    "Decided by the platform policy, or stricter than required — not pinning deviations (\(ruled.count)):",
                    "1") + "\n"
            for g in ruleGroups(ruled) { out += "  \(mark(g.status)) \(t(g.scenario)) (\(t(g.cells))): \(t(g.why))\n" }
        }
        let negotiation = NegotiationSummary(r)
        if !negotiation.isEmpty {
            out += "\n" + paint("Negotiation, as the servers saw this client:", "1") + "\n"
            for row in negotiation.rows {
                out += "  \(t(row.engine)): " + NegotiationSummary.lines(row).map(t).joined(separator: "\n    ") + "\n"
            }
        }
        let summary = t(r.summaryLine)
        out += "\n" + (r.deviates ? paint(summary, "1;31") : paint(summary, "1;32")) + "\n"
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
        // Everything a client, a command template or a catalogue wrote goes through TextEscaping.markdown: a
        // client's stderr cannot open a row, a heading or raw HTML.
        let md = TextEscaping.markdown
        var out = "# pinlab check: \(md(r.client))\n\n"
        out += "- Engines: \(md(r.engines.joined(separator: ", ")))\n"
        if let p = r.platform { out += "- Platform: \(p)\n" }
        if let c = r.clientChecks { out += "- Client checks: \(c)\n" }
        out += "- Result: **\(r.deviates ? "deviates" : "conforms")** — \(r.summary.line)\n"
        out += "- Duration: \(String(format: "%.2f", r.durationSeconds)) s\n\n"
        out += "Each cell: the expected outcome (A accept, X refuse), then one mark per engine "
        out += "(\(md(r.engines.joined(separator: ", ")))): ✓ as expected, ✗ deviates, ≠ client and server disagree, "
        out += "? refused as expected but for another reason than a correct client, "
        out += "· skipped, ∅ unsupported, ! error."
        let extra = extraLegend(
            r, policy: "P decided by the platform policy, as it prescribes;", stricter: "S stricter than required;",
            baselined: "b deviates as in the baseline;")
        out += (extra.isEmpty ? "" : " " + extra) + "\n\n"
        out += "| scenario | " + r.profiles.map { "`\($0.rawValue)`" }.joined(separator: " | ") + " |\n"
        out += "|---|" + r.profiles.map { _ in ":-:" }.joined(separator: "|") + "|\n"
        let matrix = VerdictMatrix(r)
        for id in matrix.scenarios {
            var cells: [String] = []
            for p in r.profiles {
                let vs = matrix.cell(id, p)
                let letter = VerdictMatrix.expectedLetter(vs) ?? ""
                cells.append(letter + " " + vs.map { v in v.map(cellMark) ?? " " }.joined())
            }
            out += "| \(TextEscaping.markdownCode(id)) | " + cells.joined(separator: " | ") + " |\n"
        }
        out += list("Deviations", r.deviations) { v in
            "\(mark(v.status)) \(cell(v)): \(v.baselined == true ? "(baselined) " : "")\(md(v.reason))"
                + (v.alert.map { " (alert \(TextEscaping.markdownCode($0.description)))" } ?? "")
        }
        out += list("Refused for another reason", r.verdicts.filter(\.wrongReason)) { v in "\(cell(v)): \(md(v.reason))"
        }
        out += mastgSection(r)
        out += list("Negotiation, as the servers saw this client", NegotiationSummary(r).rows) { row in
            "\(md(row.engine)): " + NegotiationSummary.lines(row).map(md).joined(separator: "; ")
        }
        out += list("Decided by the platform policy, or stricter than required", ruleCells(r)) { v in
            "\(mark(v.status)) \(cell(v)): \(md(v.reason))"
        }
        return out
    }

    /// `## title` and a bulleted list of `items` (`item` is a bullet's Markdown); nothing when there are none.
    static func list<T>(_ title: String, _ items: [T], _ item: (T) -> String) -> String {
        items.isEmpty ? "" : "\n## \(title)\n\n" + items.map { "- \(item($0))\n" }.joined()
    }

    /// `## OWASP MASTG evidence`: per test id (with its title and weakness), each failing cell and the command that
    /// runs it again; nothing when no failing cell is evidence for a test.
    static func mastgSection(_ r: CheckReport) -> String {
        let groups = r.mastgFailures
        guard !groups.isEmpty else { return "" }
        var out =
            "\n## OWASP MASTG evidence\n\nFailing cells grouped by the MASTG test whose flaw they show (titles from OWASP/owasp-mastg).\n"
        for (id, cells) in groups {
            let weakness = MASTG.entry(id)?.weakness.map { " — weakness \(MASTG.named($0))" } ?? ""
            out += "\n### \(MASTG.named(id))\(weakness)\n\n"
            out += cells.map { v in
                "- \(cell(v)): \(TextEscaping.markdown(v.reason))\n  `\(r.reproduceCommand(v).replacingOccurrences(of: "`", with: "'"))`\n"
            }.joined()
        }
        return out
    }

    /// `` `scenario` × `profile` × engine ``.
    static func cell(_ v: Verdict) -> String {
        "\(TextEscaping.markdownCode(v.scenario)) × `\(v.profile)` × \(TextEscaping.markdown(v.engine))"
    }
}
