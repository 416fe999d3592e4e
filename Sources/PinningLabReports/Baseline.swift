public import Foundation
import PinningLabBase
public import PinningLabModel
import PinningLabPKI

/// A committed record of what each cell of a client's run was (`pinlab check --write-baseline FILE`), so that CI fails
/// only when a cell changes (`--baseline FILE`): x509-limbo's known-divergence files, for pinning. The file is
/// JSON with sorted keys and one line per cell (`"rekey/leaf-spki/openssl": "fail"`), so a change reviews as a
/// one-line diff; `baseline.schema.json` describes it.
public struct Baseline: Sendable, Hashable, Codable {
    /// Always `pinlab-baseline`.
    public var format: String = "pinlab-baseline"
    public var formatVersion: Int = 1
    /// The client the baseline was written for (informative: a baseline may be reused under another name).
    public var client: String
    /// The platform policy the run was judged by, if any.
    public var platform: PlatformPolicy?
    /// The status of every cell, keyed `scenario/profile/engine`.
    public var cells: [String: Verdict.Status]

    public init(client: String, platform: PlatformPolicy? = nil, cells: [String: Verdict.Status]) {
        self.client = client
        self.platform = platform
        self.cells = cells
    }

    /// The baseline of a report: every cell's status.
    public init(_ report: CheckReport) {
        self.init(
            client: report.client, platform: report.platform,
            cells: Dictionary(report.verdicts.map { (Baseline.key($0), $0.status) }, uniquingKeysWith: { a, _ in a }))
    }

    /// `scenario/profile/engine`.
    public static func key(_ v: Verdict) -> String { "\(v.scenario)/\(v.profile.rawValue)/\(v.engine)" }

    /// The file's text: pretty JSON, sorted keys, a final newline.
    public func jsonString() throws -> String { try JSONOutput.string(self) + "\n" }

    /// Reads a baseline file; a file that is not one gets an error naming it, what is wrong and the fix.
    public static func load(contentsOf url: URL, displayName: String? = nil) throws -> Baseline {
        let name = displayName ?? url.path
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BaselineError(
                file: name,
                problem:
                    "the file cannot be read (\(Storage.whyUnreadable(url.path, fallback: error.localizedDescription))).",
                fix: "write one with `pinlab check --write-baseline \(name) …` and commit it.")
        }
        let b: Baseline
        do {
            b = try JSONDecoder().decode(Baseline.self, from: data)
        } catch let DecodingError.keyNotFound(k, ctx) {
            throw BaselineError(
                file: name, problem: "the field '\(path(ctx.codingPath + [k]))' is missing.",
                fix: "write the file with `pinlab check --write-baseline`; `--print-schema baseline` shows its format.")
        } catch let DecodingError.typeMismatch(_, ctx), let DecodingError.valueNotFound(_, ctx),
            let DecodingError.dataCorrupted(ctx)
        {
            let at = ctx.codingPath.isEmpty ? "" : " at '\(path(ctx.codingPath))'"
            throw BaselineError(
                file: name, problem: "the file is not a pinlab baseline\(at): \(ctx.debugDescription)",
                fix: "write the file with `pinlab check --write-baseline`; `--print-schema baseline` shows its format.")
        }
        guard b.format == "pinlab-baseline" else {
            throw BaselineError(
                file: name, problem: "the field 'format' is '\(b.format)', not 'pinlab-baseline'.",
                fix: "pass a file written by `pinlab check --write-baseline`.")
        }
        guard b.formatVersion == 1 else {
            throw BaselineError(
                file: name, problem: "the field 'formatVersion' is \(b.formatVersion); this pinlab reads version 1.",
                fix: "rewrite the baseline with this pinlab's `--write-baseline`.")
        }
        for (key, status) in b.cells {
            guard key.split(separator: "/").count == 3 else {
                throw BaselineError(
                    file: name, problem: "the cell key '\(key)' is not `scenario/profile/engine`.",
                    fix: "write keys such as `rekey/leaf-spki/openssl`, or rewrite the file with `--write-baseline`.")
            }
            guard Verdict.Status.all.contains(status) else {
                throw BaselineError(
                    file: name, problem: "the cell '\(key)' has the verdict '\(status)'.",
                    fix: "use one of \(Verdict.Status.all.map(\.rawValue).joined(separator: ", ")).")
            }
        }
        return b
    }

    private static func path(_ keys: [any CodingKey]) -> String { keys.map(\.stringValue).joined(separator: ".") }

    /// Compares a run with this baseline and marks the report's deviating cells that deviated the same way before.
    public func compare(_ report: inout CheckReport, file: String) {
        var changes: [BaselineComparison.Change] = []
        for i in report.verdicts.indices {
            let v = report.verdicts[i]
            let key = Baseline.key(v)
            let before = cells[key]
            if let before, before == v.status {
                if v.status.isDeviation { report.verdicts[i].baselined = true }
                continue
            }
            // A cell the baseline does not know counts only when it deviates.
            if before == nil && !v.status.isDeviation { continue }
            changes.append(
                BaselineComparison.Change(
                    cell: key, scenario: v.scenario, profile: v.profile, engine: v.engine,
                    before: before, after: v.status, reason: v.reason))
        }
        report.summary = VerdictSummary(report.verdicts)
        report.baseline = BaselineComparison(file: file, changes: changes)
    }
}

/// What changed against a baseline. Any change fails `pinlab check --baseline` (exit 1): a newly failing cell is a
/// regression, a newly passing one means the baseline must be rewritten (`--write-baseline`) and committed.
public struct BaselineComparison: Sendable, Hashable, Codable {
    public struct Change: Sendable, Hashable, Codable {
        /// `scenario/profile/engine`.
        public var cell: String
        public var scenario: String
        public var profile: PinProfile
        public var engine: String
        /// The baseline's status; absent when the baseline has no such cell.
        public var before: Verdict.Status?
        public var after: Verdict.Status
        public var reason: String

        /// Deviates now and did not before.
        public var newlyFailing: Bool { after.isDeviation && !(before?.isDeviation ?? false) }
        /// Deviated before and does not now.
        public var newlyPassing: Bool { !after.isDeviation && (before?.isDeviation ?? false) }
    }

    /// The baseline file, as given.
    public var file: String
    public var changes: [Change]

    public var newlyFailing: [Change] { changes.filter(\.newlyFailing) }
    public var newlyPassing: [Change] { changes.filter(\.newlyPassing) }
    /// Changes from one deviation to another, or between non-deviating statuses (pass ↔ policy, …).
    public var otherChanges: [Change] { changes.filter { !$0.newlyFailing && !$0.newlyPassing } }
    public var changed: Bool { !changes.isEmpty }

    /// What changed, one line per cell, for standard output.
    public var text: String {
        guard changed else { return "baseline \(file): no cell changed\n" }
        var out = "baseline \(file): \(changes.count) cell\(changes.count == 1 ? "" : "s") changed\n"
        func line(_ c: Change) -> String {
            "  \(c.scenario) × \(c.profile) × \(c.engine): \(c.before?.rawValue ?? "not in the baseline") → \(c.after)"
                + (c.after.isDeviation ? " — \(c.reason)" : "") + "\n"
        }
        if !newlyFailing.isEmpty {
            out += "newly failing (\(newlyFailing.count)):\n" + newlyFailing.map(line).joined()
        }
        if !newlyPassing.isEmpty {
            out +=
                "newly passing (\(newlyPassing.count)) — rewrite the baseline with --write-baseline and commit it:\n"
                + newlyPassing.map(line).joined()
        }
        if !otherChanges.isEmpty {
            out += "changed (\(otherChanges.count)):\n" + otherChanges.map(line).joined()
        }
        return out
    }
}

/// A baseline file that cannot be used: names the file, what is wrong and the fix.
public struct BaselineError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public var file: String
    public var problem: String
    public var fix: String
    public init(file: String, problem: String, fix: String) {
        self.file = file
        self.problem = problem
        self.fix = fix
    }
    public var description: String { "baseline \(file): \(problem) Fix: \(fix)" }
    public var errorDescription: String? { description }
}
