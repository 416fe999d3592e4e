import ArgumentParser
import Foundation
import PinningLab
import PinningLabPKI

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Work with JSON reports of `pinlab check`.",
        subcommands: [Merge.self, Site.self]
    )

    struct Merge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join the JSON reports of disjoint runs (e.g. --shard 1/N … N/N) into one, in any report format.",
            discussion: """
                The reports must judge the same client with the same catalogue, and no cell may be in two of them.
                Exit status: 0 when every cell is as expected, 1 when any cell deviates, 2 when the reports cannot be merged.
                """)

        @Argument(help: "JSON reports written by `pinlab check --format json`.")
        var reports: [String]

        @Option(help: "text, json, junit, markdown or html.")
        var format: String = "text"

        @Option(name: [.short, .customLong("output")], help: "Write the merged report to this file.")
        var output: String?

        @Flag(
            help:
                "Accept the shards of a run without all of them (e.g. to render one shard's report). Without it, reports of --shard K/N runs must be all N."
        )
        var partial = false

        func validate() throws {
            guard !reports.isEmpty else {
                throw ValidationError("give the JSON reports to join: pinlab report merge a.json b.json.")
            }
            try validateReportFormat(format)
        }

        func run() async throws {
            var loaded: [(file: String, report: CheckReport)] = []
            for path in reports {
                guard let data = FileManager.default.contents(atPath: path) else {
                    fail("\(path): cannot be read: \(Storage.whyUnreadable(path, fallback: "is the path right?")).")
                }
                do {
                    loaded.append((path, try CheckReport.decode(json: data, file: path)))
                } catch {
                    fail("\(error)")
                }
            }
            let merged: CheckReport
            do {
                merged = try CheckReport.merge(loaded, partial: partial)
            } catch {
                fail("\(error)")
            }
            try emit(merged, format: format, output: output)
            if merged.deviates { throw ExitCode(1) }
        }
    }
}

extension ReportCommand {
    struct Site: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a static site from JSON reports: an index, a page per client and a page per scenario.",
            discussion: """
                One report per client (the reports of one client's shards are merged first). The site is plain HTML \
                and CSS with relative links — no script, nothing loaded from elsewhere — ready for any static host \
                (GitHub Pages, GitLab Pages) or to open from disk: DIR/index.html.
                Example: pinlab report site reports/*.json --out site
                Exit status: 0 when the site is written, 2 when a report cannot be read or the folder cannot be written.
                """)

        @Argument(
            help: "JSON reports written by `pinlab check --format json` (or `pinlab report merge --format json`).")
        var reports: [String]

        @Option(help: "The folder to write the site to (created if needed; files of an earlier site are replaced).")
        var out: String

        func validate() throws {
            guard !reports.isEmpty else {
                throw ValidationError("give the JSON reports: pinlab report site a.json b.json --out site.")
            }
        }

        func run() async throws {
            var byClient: [(client: String, parts: [(file: String, report: CheckReport)])] = []
            for path in reports {
                guard let data = FileManager.default.contents(atPath: path) else {
                    fail("\(path): cannot be read: \(Storage.whyUnreadable(path, fallback: "is the path right?")).")
                }
                let report: CheckReport
                do {
                    report = try CheckReport.decode(json: data, file: path)
                } catch {
                    fail("\(error)")
                }
                if let i = byClient.firstIndex(where: { $0.client == report.client }) {
                    byClient[i].parts.append((path, report))
                } else {
                    byClient.append((report.client, [(path, report)]))
                }
            }
            var joined: [CheckReport] = []
            for group in byClient {
                do {
                    joined.append(group.parts.count == 1 ? group.parts[0].report : try CheckReport.merge(group.parts))
                } catch {
                    fail("the reports of the client '\(group.client)' cannot be joined: \(error)")
                }
            }
            let root = URL(fileURLWithPath: out, isDirectory: true)
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: out, isDirectory: &isDir), !isDir.boolValue {
                fail("--out \(out): that is a file. Fix: name a folder (it is created if needed).")
            }
            let files = ReportSite.render(joined)
            for (path, text) in files.sorted(by: { $0.key < $1.key }) {
                writeOrFail(text, to: root.appendingPathComponent(path).path, createFolder: true)
            }
            let scenarios = files.keys.filter { $0.hasPrefix("scenarios/") }.count
            print(
                "site: \(root.appendingPathComponent("index.html").path) (\(joined.count) client pages, \(scenarios) scenario pages)"
            )
        }
    }
}

/// Checks before any work that `path` (given with `option`) can be written: its folder exists and is writable, and
/// it is not itself a folder. A run that would fail only at the end, after every cell, fails at once instead.
func requireWritable(_ path: String?, option: String) {
    guard let path else { return }
    let url = URL(fileURLWithPath: path)
    let folder = url.deletingLastPathComponent().path
    var isDir: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue {
        fail(
            "\(option) \(path): that is a folder. Fix: name a file in it, e.g. \(option) \(url.appendingPathComponent("report").path)."
        )
    }
    guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDir), isDir.boolValue else {
        fail(
            "\(option) \(path): the folder \(folder) does not exist. Fix: create it (mkdir -p \(folder)) or choose another path."
        )
    }
    guard FileManager.default.isWritableFile(atPath: folder) else {
        fail("\(option) \(path): the folder \(folder) is not writable. Fix: choose a folder you can write to.")
    }
}

/// Writes `bytes` to the file `path` that `option` named (`--out`), replacing it at once (a link there is replaced,
/// not followed; the temporary file is this process's own, ``Storage/writeAtomically(_:to:mode:)``), or ends the
/// run (exit 2) with the path, the reason and the fix. `mode` 0600 for keys and `.p12` files.
func writeOutputFile(_ bytes: [UInt8], to path: String, option: String, mode: mode_t = 0o644) {
    do {
        try Storage.writeAtomically(bytes, to: URL(fileURLWithPath: path), mode: mode)
    } catch let e as PKIError {
        fail("\(option) \(path): \(e.reason)\(e.fix.map { ". Fix: \($0)." } ?? "")")
    } catch {
        fail("\(option) \(writeFailure(path, error))")
    }
}

/// Makes the folder `path` (given with `option`) if needed and checks that it can be written, before any work:
/// reports written into it at the end must not be lost after a whole session.
func requireWritableFolder(_ path: String, option: String) {
    do {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    } catch {
        fail("\(option) " + writeFailure(path, error))
    }
    guard FileManager.default.isWritableFile(atPath: path) else {
        fail("\(option) \(path): the folder is not writable. Fix: choose a folder you can write to.")
    }
}

/// What went wrong writing `path`, in words (POSIX's reason, not Foundation's error object).
func writeFailure(_ path: String, _ error: any Error) -> String {
    let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
    var reason = underlying.map { String(cString: strerror(Int32($0.code))) } ?? error.localizedDescription
    while reason.hasSuffix(".") { reason.removeLast() }
    return "cannot write \(path): \(reason). Fix: check that its folder exists and is writable."
}

/// Writes `text` to the file `path` (after making its folder, with `createFolder`), or ends the run (exit 2) with
/// `prefix` (the option that named the file, e.g. `--output: `) and why the write failed.
func writeOrFail(
    _ text: @autoclosure () throws -> String, to path: String, prefix: String = "", createFolder: Bool = false
) {
    do {
        if createFolder {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        // The one writer (a temporary file renamed over `path`; a device or FIFO there is written into, not replaced).
        try Storage.writeAtomically(Array(text().utf8), to: URL(fileURLWithPath: path), mode: 0o644)
    } catch let e as PKIError {
        fail(prefix + "\(path): \(e.reason)\(e.fix.map { ". Fix: \($0)." } ?? "")")
    } catch {
        fail(prefix + writeFailure(path, error))
    }
}

/// Prints a report in `format` on standard output, or writes it to `output` and prints its summary line.
func emit(_ report: CheckReport, format: String, output: String?) throws {
    let fmt = ReportFormat(rawValue: format) ?? .text
    let text = try report.render(fmt, color: output == nil && fmt == .text && stdoutIsTerminal)
    if let output {
        writeOrFail(text, to: output)
        print(report.summaryLine)
    } else {
        print(text, terminator: "")
    }
}
