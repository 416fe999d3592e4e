public import Foundation
import PinningLabBase
import PinningLabPKI
public import PinningLabReports

/// A committed record of each host's verdict in an interception run (`pinlab intercept --write-baseline FILE`), so
/// that CI fails only when a host's verdict changes (`--baseline FILE`) — an app with a known unpinned analytics
/// host stays green until something else moves. JSON with sorted keys, one line per host.
public struct InterceptBaseline: Sendable, Hashable, Codable {
    /// Always `pinlab-intercept-baseline`.
    public var format: String = "pinlab-intercept-baseline"
    public var formatVersion: Int = 1
    /// The declared pinned patterns of the run the baseline was written from (informative).
    public var pinned: [String]
    /// The verdict of every host, by host name.
    public var hosts: [String: HostVerdict.Status]

    public init(pinned: [String], hosts: [String: HostVerdict.Status]) {
        self.pinned = pinned
        self.hosts = hosts
    }

    /// The baseline of a report: every host's status.
    public init(_ report: InterceptReport) {
        self.init(
            pinned: report.pinned,
            hosts: Dictionary(report.hosts.map { ($0.host, $0.status) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The file's text: pretty JSON, sorted keys, a final newline.
    public func jsonString() throws -> String { try JSONOutput.string(self) + "\n" }

    /// Reads a baseline file; a file that is not one gets an error naming it, what is wrong and the fix.
    public static func load(contentsOf url: URL, displayName: String? = nil) throws(BaselineError) -> InterceptBaseline
    {
        let name = displayName ?? url.path
        let fixWrite = "write one with `pinlab intercept --write-baseline \(name) …` and commit it."
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BaselineError(
                file: name,
                problem:
                    "the file cannot be read (\(Storage.whyUnreadable(url.path, fallback: error.localizedDescription))).",
                fix: fixWrite)
        }
        struct Header: Decodable {
            var format: String?
            var formatVersion: Int?
        }
        if let header = try? JSONDecoder().decode(Header.self, from: data), let format = header.format,
            format != "pinlab-intercept-baseline"
        {
            let hint =
                format == "pinlab-baseline"
                ? " (that is a `pinlab check` baseline: its cells are scenario/profile/engine, not hosts)" : ""
            throw BaselineError(
                file: name, problem: "the field 'format' is '\(format)', not 'pinlab-intercept-baseline'\(hint).",
                fix: "pass a file written by `pinlab intercept --write-baseline`.")
        }
        let b: InterceptBaseline
        do {
            b = try JSONDecoder().decode(InterceptBaseline.self, from: data)
        } catch let DecodingError.keyNotFound(k, _) {
            throw BaselineError(file: name, problem: "the field '\(k.stringValue)' is missing.", fix: fixWrite)
        } catch let DecodingError.dataCorrupted(ctx)
            where ctx.codingPath.count == 2 && ctx.codingPath[0].stringValue == "hosts"
        {
            throw BaselineError(
                file: name,
                problem:
                    "the host '\(ctx.codingPath[1].stringValue)' has a verdict that is not one of \(HostVerdict.Status.allCases.map(\.rawValue).joined(separator: ", ")).",
                fix: "use one of those, or rewrite the file with --write-baseline.")
        } catch {
            throw BaselineError(
                file: name, problem: "the file is not a pinlab intercept baseline (\(error)).", fix: fixWrite)
        }
        guard b.formatVersion == 1 else {
            throw BaselineError(
                file: name, problem: "the field 'formatVersion' is \(b.formatVersion); this pinlab reads version 1.",
                fix: "rewrite the baseline with this pinlab's `--write-baseline`.")
        }
        return b
    }

    /// One host whose verdict differs from the baseline's.
    public struct Change: Sendable, Hashable {
        public var host: String
        /// nil: the baseline does not know the host (it counts only when it deviates now).
        public var before: HostVerdict.Status?
        public var after: HostVerdict.Status
    }

    /// The hosts whose verdict changed, in the report's order: a known host whose status differs, or a new host that
    /// deviates. A host of the baseline the run did not reach is not a change (the app may not have called it).
    public func changes(in report: InterceptReport) -> [Change] {
        report.hosts.compactMap { h in
            let before = hosts[h.host]
            if before == h.status { return nil }
            if before == nil && !h.status.isDeviation { return nil }
            return Change(host: h.host, before: before, after: h.status)
        }
    }

    /// What changed, for standard output.
    public func text(for report: InterceptReport, file: String) -> String {
        let t = TextEscaping.terminal
        let file = t(file)
        let changes = changes(in: report)
        let unseen = hosts.keys.filter { report.verdict(for: $0) == nil }.sorted()
        var out =
            changes.isEmpty
            ? "baseline \(file): no host changed\n"
            : "baseline \(file): \(changes.count) host\(changes.count == 1 ? "" : "s") changed — rewrite it with --write-baseline if that is intended\n"
        for c in changes {
            out +=
                "  \(t(c.host)): \(c.before?.rawValue ?? "not in the baseline") → \(c.after.rawValue) (\(c.after.message))\n"
        }
        if !unseen.isEmpty {
            out +=
                "  not reached in this run (not counted): \(t(unseen.prefix(10).joined(separator: ", ")))\(unseen.count > 10 ? ", …" : "")\n"
        }
        return out
    }
}
