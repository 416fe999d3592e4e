public import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// A set of reports that cannot be merged, or a file that is not a report.
public struct ReportMergeError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public var file: String
    public var problem: String
    public var fix: String
    public var description: String { "\(file): \(problem) Fix: \(fix)" }
    public var errorDescription: String? { description }
}

extension CheckReport {
    /// Reads a report written by `pinlab check --format json`. `file` names it in errors; `engines` are the engine
    /// names a report may hold (PinningLab's `decode(json:file:)` passes the engine registry's).
    public static func decode(json: Data, file: String, engines known: [String]) throws -> CheckReport {
        let decoder = JSONDecoder()
        // Foundation's .iso8601 strategy reports a bad date with no field; this one names it.
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime]
            let fractional = ISO8601DateFormatter()
            fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            guard let date = iso.date(from: text) ?? fractional.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: c,
                    debugDescription:
                        "'\(YAMLReader.excerpt(text))' is not an ISO 8601 date and time (e.g. 2026-11-28T05:00:00Z)")
            }
            return date
        }
        do {
            let report = try decoder.decode(CheckReport.self, from: json)
            guard report.tool == "pinlab", report.formatVersion == 1 else {
                throw ReportMergeError(
                    file: file, problem: "it is not a pinlab check report of format version 1.",
                    fix: "give the JSON reports of `pinlab check --format json`.")
            }
            try report.requireConsistent(file: file, engines: known)
            return report
        } catch let e as ReportMergeError {
            throw e
        } catch let DecodingError.keyNotFound(key, ctx) {
            throw ReportMergeError(
                file: file, problem: "the field \(path(ctx.codingPath + [key])) is missing.",
                fix: "give the JSON reports of `pinlab check --format json`, unedited.")
        } catch let DecodingError.typeMismatch(_, ctx), let DecodingError.valueNotFound(_, ctx) {
            throw ReportMergeError(
                file: file, problem: "the field \(path(ctx.codingPath)) has the wrong type (\(ctx.debugDescription)).",
                fix: "give the JSON reports of `pinlab check --format json`, unedited.")
        } catch let DecodingError.dataCorrupted(ctx) where !ctx.codingPath.isEmpty {
            throw ReportMergeError(
                file: file, problem: "the field \(path(ctx.codingPath)) is malformed: \(ctx.debugDescription).",
                fix: "give the JSON reports of `pinlab check --format json`, unedited.")
        } catch {
            // Valid JSON that the decoder calls invalid holds a value out of range (a number too large for its field).
            if let tree = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]) {
                let field = outOfRangeNumber(tree, path: "").map {
                    "the field \($0.path) holds \($0.value), out of range"
                }
                throw ReportMergeError(
                    file: file, problem: (field ?? "a value is malformed") + ".",
                    fix: "give the JSON reports of `pinlab check --format json`, unedited.")
            }
            var reason = "it is not JSON"
            do { _ = try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]) } catch {
                if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String {
                    reason += " (\(detail))"
                }
            }
            throw ReportMergeError(
                file: file,
                problem: reason + (json.count > 0 ? ", \(json.count) bytes (truncated?)." : ": the file is empty."),
                fix: "give the JSON reports of `pinlab check --format json`.")
        }
    }

    /// The first number in a JSON tree that no integer field holds (beyond ±2^63), with its path.
    private static func outOfRangeNumber(_ node: Any, path: String) -> (path: String, value: String)? {
        if let n = node as? NSNumber, !(n is Bool) {
            let d = n.doubleValue
            return d.isFinite && abs(d) < 9.2e18 ? nil : (path, n.stringValue)
        }
        if let a = node as? [Any] {
            for (i, v) in a.enumerated() { if let hit = outOfRangeNumber(v, path: "\(path)[\(i)]") { return hit } }
        }
        if let o = node as? [String: Any] {
            for k in o.keys.sorted() {
                if let hit = outOfRangeNumber(o[k]!, path: path.isEmpty ? k : "\(path).\(k)") { return hit }
            }
        }
        return nil
    }

    /// A report whose verdicts name statuses, engines or scenarios the report itself does not hold was edited or
    /// damaged: merging it would count cells no matrix shows.
    func requireConsistent(file: String, engines names: [String]) throws {
        let fix = "give the JSON reports of `pinlab check --format json`, unedited."
        let known = Set(names)
        if let e = engines.first(where: { !known.contains($0) }) {
            throw ReportMergeError(
                file: file,
                problem:
                    "the field engines names '\(YAMLReader.excerpt(e))', not an engine (\(names.joined(separator: ", "))).",
                fix: fix)
        }
        let ids = Set(scenarios.map(\.id))
        let engineSet = Set(engines)
        for (i, v) in verdicts.enumerated() {
            if !Verdict.Status.all.contains(v.status) {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "the field verdicts[\(i)].verdict is '\(YAMLReader.excerpt(v.status.rawValue))', not a verdict (\(Verdict.Status.all.map(\.rawValue).joined(separator: ", "))).",
                    fix: fix)
            }
            if !ids.contains(v.scenario) {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "the field verdicts[\(i)].scenario is '\(YAMLReader.excerpt(v.scenario))', which the report's scenarios do not list.",
                    fix: fix)
            }
            if !engineSet.contains(v.engine) {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "the field verdicts[\(i)].engine is '\(YAMLReader.excerpt(v.engine))', which the report's engines do not list.",
                    fix: fix)
            }
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: ["."])
    }

    /// Joins reports of disjoint parts of one run (`pinlab check --shard K/N`, or runs on different engines or
    /// scenarios) into one. The reports must come from the same client and catalogue (the same scenarios with the
    /// same expected rows); a cell may appear in one report only. Cells are listed in catalogue order. Shards of a
    /// run (``shard``) must all be there unless `partial` (to render one shard's report, say).
    public static func merge(_ reports: [(file: String, report: CheckReport)], partial: Bool = false) throws
        -> CheckReport
    {
        guard let (firstFile, first) = reports.first else {
            throw ReportMergeError(
                file: "pinlab report merge", problem: "no report was given.",
                fix: "give the JSON reports to join: pinlab report merge a.json b.json.")
        }
        func catalogue(_ r: CheckReport) -> [String: [String: Expectation]] {
            Dictionary(r.scenarios.map { ($0.id, $0.expected) }, uniquingKeysWith: { a, _ in a })
        }
        let reference = catalogue(first)
        var owner: [String: String] = [:]
        var shards: [Int: String] = [:]
        var sheets: [String: ScenarioSheet] = [:]
        var order: [String] = first.scenarios.map(\.id)
        var engines: [String] = []
        var verdicts: [Verdict] = []
        for (file, r) in reports {
            if r.client != first.client {
                throw ReportMergeError(
                    file: file, problem: "it judges the client '\(r.client)', \(firstFile) judges '\(first.client)'.",
                    fix: "merge the shards of one client's run only.")
            }
            if r.platform != first.platform {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "it was judged by the platform \(r.platform?.rawValue ?? "none"), \(firstFile) by \(first.platform?.rawValue ?? "none").",
                    fix: "run every shard with the same --platform.")
            }
            if (r.shard == nil) != (first.shard == nil) || (r.shard != nil && r.shard?.count != first.shard?.count) {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "it holds \(r.shard.map { "shard \($0)" } ?? "a whole run"), \(firstFile) holds \(first.shard.map { "shard \($0)" } ?? "a whole run").",
                    fix: "merge the N reports of one run split with --shard 1/N … N/N.")
            }
            if r.shard != nil, r.shardCut != first.shardCut {
                throw ReportMergeError(
                    file: file,
                    problem:
                        "its shards were cut \(r.shardCut ?? "by an older pinlab (a hash of each cell)"), \(firstFile)'s \(first.shardCut ?? "by an older pinlab (a hash of each cell)"): the pieces may miss cells or overlap.",
                    fix:
                        "run every piece of the run with the same --shard-weights file (or none), with one pinlab version."
                )
            }
            if let shard = r.shard {
                if let other = shards[shard.index] {
                    throw ReportMergeError(
                        file: file, problem: "it is shard \(shard), and so is \(other).",
                        fix: "give each shard's report once.")
                }
                shards[shard.index] = file
            }
            let mine = catalogue(r)
            for (id, row) in mine where reference[id] != nil && reference[id] != row {
                throw ReportMergeError(
                    file: file,
                    problem: "its catalogue differs from \(firstFile)'s: scenario '\(id)' expects other outcomes.",
                    fix: "merge reports made with the same catalogue (the same pinlab version and --catalogue).")
            }
            if Set(mine.keys) != Set(reference.keys) {
                let missing = Set(reference.keys).symmetricDifference(mine.keys).sorted().prefix(5).joined(
                    separator: ", ")
                throw ReportMergeError(
                    file: file,
                    problem: "its catalogue differs from \(firstFile)'s: the scenarios differ (\(missing)).",
                    fix: "run every shard with the same catalogue and the same --scenarios.")
            }
            for s in r.scenarios where sheets[s.id] == nil { sheets[s.id] = s }
            for s in r.scenarios.map(\.id) where !order.contains(s) { order.append(s) }
            for e in r.engines where !engines.contains(e) { engines.append(e) }
            for v in r.verdicts {
                let id = Baseline.key(v)
                if let other = owner[id] {
                    throw ReportMergeError(
                        file: file, problem: "the cell \(id) is also in \(other): the reports overlap.",
                        fix: "merge disjoint parts only, e.g. the N reports of --shard 1/N … N/N.")
                }
                owner[id] = file
                verdicts.append(v)
            }
        }
        if !partial, let n = first.shard?.count, shards.count < n {
            let missing = (1...n).filter { shards[$0] == nil }.map { "\($0)/\(n)" }
            throw ReportMergeError(
                file: "pinlab report merge",
                problem:
                    "the run was split in \(n) shards and \(missing.count == 1 ? "shard \(missing[0]) is" : "shards \(missing.joined(separator: ", ")) are") missing: its cells were never judged.",
                fix:
                    "give the reports of all \(n) shards (a failed or missing shard job must fail the build, not pass it)."
            )
        }
        let scenarioRank = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        let engineRank = Dictionary(uniqueKeysWithValues: engines.enumerated().map { ($1, $0) })
        let profileRank = Dictionary(uniqueKeysWithValues: PinProfile.all.enumerated().map { ($1, $0) })
        verdicts.sort {
            (scenarioRank[$0.scenario] ?? .max, engineRank[$0.engine] ?? .max, profileRank[$0.profile] ?? .max)
                < (scenarioRank[$1.scenario] ?? .max, engineRank[$1.engine] ?? .max, profileRank[$1.profile] ?? .max)
        }
        var merged = CheckReport(
            client: first.client, engines: engines, profiles: first.profiles,
            startedAt: reports.map(\.report.startedAt).min() ?? first.startedAt,
            durationSeconds: reports.map(\.report.durationSeconds).reduce(0, +), verdicts: verdicts,
            scenarios: order.compactMap { sheets[$0] })
        merged.platform = first.platform
        if reports.count == 1 { merged.shard = first.shard }
        return merged
    }
}
