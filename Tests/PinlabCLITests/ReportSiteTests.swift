import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab report site`: an index, a page per client and a page per scenario from JSON reports; every link
/// resolves, nothing is loaded from elsewhere, no script.
@Suite("pinlab report site")
struct ReportSiteTests {
    static let scenarios = ["baseline", "wrong-host", "rekey"]

    func tempDir() throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-site-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// JSON reports of `correct` (in two shards) and `no-hostname-check`, and the site made from them.
    func makeSite(in dir: URL) async throws -> URL {
        var reports: [String] = []
        for (client, shard) in [("correct", "1/2"), ("correct", "2/2"), ("no-hostname-check", nil)] {
            let out = dir.appendingPathComponent("\(client)-\(reports.count).json").path
            let r = try await CLI.run(
                [
                    "check", "--client", client, "--engine", "openssl", "--scenarios",
                    Self.scenarios.joined(separator: ","),
                    "--format", "json", "--output", out,
                ] + (shard.map { ["--shard", $0] } ?? []) + CLI.dirArgs)
            #expect(r.status == (client == "correct" ? 0 : 1), "\(r.stderr)")
            reports.append(out)
        }
        let site = dir.appendingPathComponent("site")
        let r = try await CLI.run(["report", "site"] + reports + ["--out", site.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("2 client pages, 3 scenario pages"), "\(r.stdout)")
        return site
    }

    @Test("index, a page per client and per scenario; every link resolves; no script or external resource")
    func siteStructureAndLinks() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let site = try await makeSite(in: dir)
        let expected =
            ["index.html", "style.css", "clients/correct.html", "clients/no-hostname-check.html"]
            + Self.scenarios.map { "scenarios/\($0).html" }
        for f in expected {
            #expect(FileManager.default.fileExists(atPath: site.appendingPathComponent(f).path), "no \(f)")
        }

        let pages = try FileManager.default.subpathsOfDirectory(atPath: site.path).filter { $0.hasSuffix(".html") }
        #expect(pages.count == 1 + 2 + Self.scenarios.count, "\(pages)")
        for page in pages {
            let url = site.appendingPathComponent(page)
            let html = try String(contentsOf: url, encoding: .utf8)
            #expect(!html.contains("<script"), "\(page) has a script")
            #expect(
                !html.contains("http://") && !html.contains("https://") && !html.contains("src=\"//"),
                "\(page) loads something from elsewhere")
            for link in Self.attributes(html, "href") + Self.attributes(html, "src") {
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target =
                    parts[0].isEmpty
                    ? url : url.deletingLastPathComponent().appendingPathComponent(parts[0]).standardizedFileURL
                #expect(target.path.hasPrefix(site.standardizedFileURL.path), "\(page): \(link) leaves the site")
                let text = try? String(contentsOf: target, encoding: .utf8)
                #expect(text != nil, "\(page): \(link) does not resolve")
                if parts.count == 2, let text {
                    #expect(text.contains("id=\"\(parts[1])\""), "\(page): \(link): no anchor \(parts[1])")
                }
            }
        }
        // The index links every client and every scenario; each scenario page shows every client's row.
        let index = try String(contentsOf: site.appendingPathComponent("index.html"), encoding: .utf8)
        for f in expected.dropFirst(2) { #expect(index.contains("href=\"\(f)\""), "the index does not link \(f)") }
        // Each client's row adds up: as expected + deviating + policy + stricter + skipped + unsupported = cells.
        let rows = index.components(separatedBy: "<tr><td class=\"name\"><a href=\"clients/").dropFirst()
        #expect(rows.count == 2, "\(rows.count) client rows")
        for row in rows {
            let cells = row.components(separatedBy: "</tr>")[0].components(separatedBy: "<td>").dropFirst(3)
                .compactMap { Int($0.components(separatedBy: "</td>")[0]) }
            #expect(
                cells.count == 8,
                "cells, as expected, deviating, another reason, policy, stricter, skipped, unsupported: \(cells)")
            if cells.count == 8 {
                #expect(
                    cells[0] == cells[1] + cells[2] + cells[4] + cells[5] + cells[6] + cells[7],
                    "a row that does not add up: \(cells)")
            }
        }
        for id in Self.scenarios {
            let page = try String(contentsOf: site.appendingPathComponent("scenarios/\(id).html"), encoding: .utf8)
            #expect(
                page.contains(">correct</a>") && page.contains(">no-hostname-check</a>"),
                "\(id): a client's row is missing")
        }
        // The deviation is on wrong-host's page with its reason, and the shards of `correct` were joined.
        let wrongHost = try String(
            contentsOf: site.appendingPathComponent("scenarios/wrong-host.html"), encoding: .utf8)
        #expect(wrongHost.contains("Deviations"))
        #expect(
            wrongHost.range(
                of: #"no-hostname-check</a> × <code>[a-z+-]+</code> × openssl: \S"#, options: .regularExpression) != nil
        )
        let baseline = try String(contentsOf: site.appendingPathComponent("scenarios/baseline.html"), encoding: .utf8)
        #expect(!baseline.contains("Deviations"))
        let correct = try String(contentsOf: site.appendingPathComponent("clients/correct.html"), encoding: .utf8)
        #expect(
            correct.contains("Conforms") && !correct.contains("m skipped\" title=\"openssl: not run"),
            "the shards of correct were not joined")
    }

    @Test("bad input: a missing report and --out naming a file exit 2 and say so")
    func badInput() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = try await CLI.run([
            "report", "site", dir.appendingPathComponent("nope.json").path, "--out", dir.path,
        ])
        #expect(missing.status == 2 && missing.stderr.contains("nope.json: cannot be read"), "\(missing.stderr)")
        let notJSON = dir.appendingPathComponent("x.json")
        try "{}".write(to: notJSON, atomically: true, encoding: .utf8)
        let bad = try await CLI.run(["report", "site", notJSON.path, "--out", dir.appendingPathComponent("s").path])
        #expect(bad.status == 2 && bad.stderr.contains("x.json"), "\(bad.stderr)")
        // A folder or a FIFO where a file goes is named as such (it was "you don't have permission", "error 256"),
        // for reports, baselines and scenario files alike, and nothing waits on the FIFO.
        let fifo = dir.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let folder = dir.appendingPathComponent("scenarios/x.yaml")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (args, said) in [
            (["report", "merge", fifo.path], "it is a FIFO, not a regular file"),
            (["report", "merge", dir.path], "it is a directory"),
            (
                [
                    "check", "--client", "correct", "--scenarios", "baseline", "--engine", "openssl", "--baseline",
                    fifo.path,
                ] + CLI.dirArgs,
                "it is a FIFO, not a regular file"
            ),
            (
                [
                    "check", "--client", "correct", "--scenarios", "baseline", "--engine", "openssl", "--baseline",
                    dir.path,
                ] + CLI.dirArgs,
                "it is a directory"
            ),
            (["scenarios", "validate", dir.appendingPathComponent("scenarios").path], "it is a directory"),
        ] {
            let r = try await CLI.run(args)
            #expect(r.status == 2 && r.stderr.contains(said), "\(args): exit \(r.status): \(r.stderr)")
        }
    }

    @Test("the index and a scenario page render in headless Chromium (not blank)", .requires("chromium"))
    func rendersInHeadlessChromium() async throws {
        let chromium = try #require(LabTests.chromium, "CI installs Chromium (.ci/run); none was found")
        let python = try #require(LabTests.python)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let site = try await makeSite(in: dir)
        for page in ["index.html", "scenarios/wrong-host.html"] {
            let png = dir.appendingPathComponent(page.replacingOccurrences(of: "/", with: "-") + ".png")
            let shot = try await run(
                [
                    chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1024,768",
                    "--screenshot=\(png.path)", site.appendingPathComponent(page).absoluteString,
                ], timeout: TestTimeouts.browser.timeInterval)
            #expect(FileManager.default.fileExists(atPath: png.path), "no screenshot of \(page): \(shot.output)")
            let check = try await run([
                python, LabTests.root.appendingPathComponent("labs/tools/pngcheck.py").path, png.path,
            ])
            #expect(check.status == 0, "\(page): \(check.output)")
        }
    }

    /// The values of every `name="…"` attribute of a page.
    static func attributes(_ html: String, _ name: String) -> [String] {
        var out: [String] = []
        var rest = html[...]
        while let r = rest.range(of: " \(name)=\"") {
            let after = rest[r.upperBound...]
            guard let end = after.firstIndex(of: "\"") else { break }
            out.append(String(after[..<end]).replacingOccurrences(of: "&amp;", with: "&"))
            rest = after[end...]
        }
        return out
    }
}

/// A report is input from wherever CI got it: hostile client names and scenario ids must not write outside `--out`
/// nor inject markup.
@Suite("pinlab report site: hostile names")
struct ReportSiteHostileNameTests {
    @Test func hostileClientNamesAndScenarioIdsStayInsideTheSiteAndAreEscaped() async throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-site-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain.json")
        let r = try await CLI.run(
            [
                "check", "--client", "correct", "--engine", "openssl", "--scenarios", "baseline",
                "--format", "json", "--output", plain.path,
            ] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let names = ["../../escaped<script>alert(1)</script>", "/etc/passwd", "..", ""]
        var reports: [String] = []
        for (i, name) in names.enumerated() {
            var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: plain)) as? [String: Any])
            json["client"] = name
            if var verdicts = json["verdicts"] as? [[String: Any]] {
                for k in verdicts.indices {
                    verdicts[k]["scenario"] = "../../../pwn-\(i)"
                    verdicts[k]["client"] = name
                }
                json["verdicts"] = verdicts
            }
            if var scenarios = json["scenarios"] as? [[String: Any]] {
                for k in scenarios.indices { scenarios[k]["id"] = "../../../pwn-\(i)" }
                json["scenarios"] = scenarios
            }
            let url = dir.appendingPathComponent("r\(i).json")
            try JSONSerialization.data(withJSONObject: json).write(to: url)
            reports.append(url.path)
        }
        let site = dir.appendingPathComponent("out/site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let made = try await CLI.run(["report", "site"] + reports + ["--out", site.path])
        #expect(made.status == 0, "\(made.stderr)")
        // Every file under dir is either an input or under the site folder.
        let all = try FileManager.default.subpathsOfDirectory(atPath: dir.path)
        let outside = all.filter { !$0.hasPrefix("out/site") && !$0.hasPrefix("out") && !$0.hasSuffix(".json") }
        #expect(outside.isEmpty, "written outside the site: \(outside)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("pwn-0.html").path))
        let pages = try FileManager.default.subpathsOfDirectory(atPath: site.path).filter { $0.hasSuffix(".html") }
        #expect(
            pages.count == 1 + names.count + names.count,
            "an index, one page per client and per scenario id: \(pages.sorted())")
        for page in pages {
            #expect(!page.contains(".."), "\(page)")
            let html = try String(contentsOf: site.appendingPathComponent(page), encoding: .utf8)
            #expect(!html.contains("<script"), "\(page) carries the client's markup unescaped")
        }
    }
}
