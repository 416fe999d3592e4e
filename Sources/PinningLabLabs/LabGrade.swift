import Foundation
public import PinningLab
import PinningLabBase
public import PinningLabCore
import PinningLabPKI

/// One wrong (scenario, profile) cell of a lab, over the engines where it went wrong, explained in plain words.
public struct LabFailure: Sendable, Hashable, Codable {
    public var cell: LabCell
    /// The engines on which the cell deviated, e.g. `["openssl", "gnutls"]`.
    public var engines: [String]
    public var status: Verdict.Status
    /// What the client did, from the server's evidence and the client's own words.
    public var did: String
    /// What a correct client does here.
    public var shouldHave: String
    /// The line of reasoning the client missed.
    public var missed: String
    /// Whether this cell is one the lab is about (the starter's mistake), or something else broke.
    public var isTheLesson: Bool
}

/// The grade of one client on one lab.
public struct LabGrade: Sendable {
    public var lab: TeachingLab
    public var report: CheckReport
    public var failures: [LabFailure]

    /// The cells that ran (the lab's scenarios × profiles × engines; the catalogue's other profiles are skipped).
    public var cellsRun: Int { report.verdicts.filter { $0.status != .skipped }.count }

    /// Every cell is as expected on every engine.
    public var passed: Bool { !report.deviates }

    /// The (scenario, profile) cells that deviated on at least one engine.
    public var failingCells: Set<LabCell> { Set(failures.map(\.cell)) }

    /// The cells that deviated on every engine that ran them: a mistake in the client, not an engine quirk.
    public var failingOnEveryEngine: Set<LabCell> {
        Set(failures.filter { Set($0.engines) == Set(report.engines) }.map(\.cell))
    }

    public init(lab: TeachingLab, report: CheckReport) {
        self.lab = lab
        self.report = report
        let sheets = Dictionary(report.scenarios.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [LabFailure] = []
        for s in lab.scenarios {
            for p in lab.profiles {
                let bad = report.engines.compactMap { report.verdict(s, p, $0) }.filter { $0.status.isDeviation }
                guard let first = bad.first else { continue }
                let explanation = lab.explanation(scenario: s, profile: p)
                let expectation = first.expected == .accept ? "Accept" : "Refuse"
                out.append(
                    LabFailure(
                        cell: LabCell(s, p), engines: bad.map(\.engine), status: first.status,
                        did: Self.describe(
                            first, sheet: sheets[s], keyExchange: lab.clientChecks?.keyExchange != nil),
                        shouldHave: explanation?.shouldHave
                            ?? "\(expectation): \(sheets[s]?.teaching ?? "see pinlab explain \(s)")",
                        missed: explanation?.missed ?? lab.lesson,
                        isTheLesson: lab.starterFails.contains(LabCell(s, p))))
            }
        }
        failures = out
    }

    /// What the client did in one cell, in a sentence; `keyExchange`: also the group negotiated (a lab that grades the
    /// key exchange).
    static func describe(_ v: Verdict, sheet: ScenarioSheet?, keyExchange: Bool = false) -> String {
        let presented = sheet.map { s in s.chain.filter(\.onTheWire).map(\.name).joined(separator: ", ") } ?? ""
        var server = presented.isEmpty ? "the server" : "a server presenting \(presented)"
        // A cell of several connections: the step that went wrong, and who answered it.
        if let step = v.steps?.first(where: { $0.status.isDeviation }) {
            server = "the \(step.party) server answering \(step.host) in step \(step.step)"
        }
        // The key exchange, where the lab grades it (a client that declares it requires a hybrid).
        let group = v.evidence?.negotiatedGroup.map { " over key exchange \($0)" } ?? ""
        var s: String
        switch v.status {
        case .fail where v.evidence?.echClearFallback != nil:
            // The harm is done before any certificate: the name Encrypted Client Hello hides went out in clear.
            s =
                "After its Encrypted Client Hello was rejected, it connected again without ECH, naming "
                + "\(v.evidence?.echClearFallback ?? "the host") in clear to whoever rejected the offer"
                + (v.observed == .accepted
                    ? ", and sent its request (\(v.evidence?.requestLine ?? "application data"))."
                    : "; that connection was then refused, but the name had already gone over the wire.")
        case .fail where v.observed == .accepted:
            s =
                "It trusted \(server) and sent its request (\(v.evidence?.requestLine ?? "application data"))"
                + "\(keyExchange ? group : "")."
        case .fail:
            s =
                "It refused \(server): it "
                + Verdict.refusalPhrase(evidence: v.evidence ?? .noConnection, category: v.category, alert: v.alert)
                + "."
        case .disagree:
            s = "Its exit status says one thing and the server saw another: \(v.reason)."
        default:
            s = "The cell could not be run: \(v.reason)."
        }
        if let d = v.clientDetail, !d.isEmpty, v.status != .disagree {
            s += " Your client said: \(d.split(separator: "\n").last.map(String.init) ?? d)"
        }
        return s
    }

    /// The grade as JSON: the lab, whether it passed, and each wrong cell with its explanation.
    public func jsonString() throws -> String {
        struct Out: Encodable {
            var lab: Int
            var slug: String
            var client: String
            var engines: [String]
            var passed: Bool
            var cells: Int
            var wrong: Int
            var failures: [LabFailure]
        }
        let out = Out(
            lab: lab.number, slug: lab.slug, client: report.client, engines: report.engines, passed: passed,
            cells: cellsRun,
            wrong: report.summary.deviations, failures: failures)
        return try JSONOutput.string(out) + "\n"
    }

    /// The grade as text: a small matrix, then each wrong cell explained, then what to try next.
    public func renderText(color: Bool = false) -> String {
        func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        var out = "Lab \(lab.number) — \(lab.title)\n"
        out += "Client: \(report.client)\n"
        out +=
            "Cells: \(lab.scenarios.count) scenarios × \(lab.profiles.count) profiles × "
            + "\(report.engines.count) engines (\(report.engines.joined(separator: ", ")))\n\n"

        let width = max(28, (lab.scenarios.map(\.count).max() ?? 0) + 2)
        let colWidth = max(12, (lab.profiles.map(\.rawValue.count).max() ?? 0) + 2)
        out += "".padding(toLength: width, withPad: " ", startingAt: 0)
        for p in lab.profiles { out += p.rawValue.padding(toLength: colWidth, withPad: " ", startingAt: 0) }
        out += "\n"
        for s in lab.scenarios {
            out += s.padding(toLength: width, withPad: " ", startingAt: 0)
            for p in lab.profiles {
                let vs = report.engines.map { report.verdict(s, p, $0) }
                let exp = vs.compactMap { $0 }.first.map { $0.expected == .accept ? "A" : "X" } ?? "?"
                var cell = exp + " "
                var painted = exp + " "
                for v in vs {
                    let m: String
                    switch v?.status {
                    case .pass?: m = "✓"
                    case .fail?: m = "✗"
                    case .disagree?: m = "≠"
                    case .stricter?: m = "S"
                    case .skipped?, .unsupported?, nil: m = "·"
                    default: m = "!"
                    }
                    cell += m
                    painted +=
                        v?.status == .pass ? paint(m, "32") : (v?.status.isDeviation == true ? paint(m, "31") : m)
                }
                out += painted + String(repeating: " ", count: max(1, colWidth - cell.count))
            }
            out += "\n"
        }
        // A refusal where correct clients legitimately differ (an ECH client meeting a cell whose expectation is a
        // client without ECH's) is not a mistake: marked S, and said why.
        let stricter = lab.scenarios.flatMap { s in
            lab.profiles.compactMap { p in
                report.engines.compactMap { report.verdict(s, p, $0) }.first { $0.status == .stricter }
            }
        }
        out += labWrap(
            "(A: must accept, X: must refuse; then one mark per engine: ✓ as expected, ✗ wrong, ≠ claim and "
                + "server disagree, \(stricter.isEmpty ? "" : "S stricter than required (not a mistake), ")"
                + "! error, · not run)", indent: "")
        for v in stricter { out += labWrap("S \(v.scenario) under \(v.profile): \(v.reason)", indent: "") }

        if failures.isEmpty {
            out += "\n" + paint("PASSED", "1;32") + ": every cell as expected on every engine. \(lab.lesson)\n"
            return out
        }
        for f in failures {
            out +=
                "\n" + paint("✗ \(f.cell.scenario) under \(f.cell.profile)", "1;31")
                + " (\(f.engines.joined(separator: ", ")))\n"
            out += labWrap("What your client did: \(f.did)", indent: "  ")
            out += labWrap("What it should have done: \(f.shouldHave)", indent: "  ")
            out += labWrap("The reasoning it missed: \(f.missed)", indent: "  ")
        }
        let lessons = failures.filter(\.isTheLesson).count
        out += "\n"
        if lessons == failures.count {
            out += labWrap("These are the cells this lab is about: \(lab.mistake)", indent: "")
        } else if lessons > 0 {
            out += labWrap(
                "\(lessons) of these cells are this lab's lesson (\(lab.mistake)); the others show "
                    + "something else going wrong: fix those first.", indent: "")
        } else {
            out += labWrap(
                "None of these cells is the one this lab is about: something else is wrong. Make the "
                    + "baseline pass first.", indent: "")
        }
        out += labWrap("What to try next: \(lab.tryNext)", indent: "")
        out += labWrap(
            lab.hasSwiftStarter
                ? "(In Swift: the TODO in \(lab.swiftStarterPath). The whole story: \(lab.pagePath).)"
                : "(The whole story: \(lab.pagePath).)", indent: "")
        out +=
            paint("NOT YET", "1;31") + ": \(report.summary.deviations) of \(cellsRun) cells are "
            + "wrong (\(failures.count) scenario × profile pairs). Run the same command again after your change.\n"
        return out
    }
}

/// Wraps `text` at 100 columns, continuation lines indented two more spaces than `indent`.
func labWrap(_ text: String, indent: String, width: Int = 100) -> String {
    var lines: [String] = []
    var line = indent
    for word in text.split(separator: " ", omittingEmptySubsequences: true) {
        let atStart = line.count == indent.count || line == indent + "  "
        if !atStart && line.count + 1 + word.count > width {
            lines.append(line)
            line = indent + "    " + word
        } else {
            line += (atStart ? "" : " ") + word
        }
    }
    lines.append(line)
    return lines.joined(separator: "\n") + "\n"
}

extension TeachingLab {
    /// The options that run exactly this lab's cells.
    public func checkOptions(
        engines: [any TLSEngine] = Engines.builtIn, jobs: Int = CheckOptions.defaultJobs,
        timeout: Duration = .seconds(10)
    ) -> CheckOptions {
        var options = CheckOptions(
            engines: engines, profiles: Set(profiles), scenarios: scenarios, jobs: jobs, timeout: timeout)
        options.clientChecks = clientChecks
        return options
    }

    /// Runs `client` on this lab's cells and grades it.
    public func grade(
        _ client: ClientUnderTest, runner: CheckRunner, engines: [any TLSEngine] = Engines.builtIn,
        jobs: Int = CheckOptions.defaultJobs, timeout: Duration = .seconds(10)
    ) async throws -> LabGrade {
        let report = try await runner.run(client, options: checkOptions(engines: engines, jobs: jobs, timeout: timeout))
        return LabGrade(lab: self, report: report)
    }
}
