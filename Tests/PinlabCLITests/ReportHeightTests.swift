import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The HTML check report of a run that conforms is a page, not a scroll: the scenarios whose every cell went as
/// expected fold into two `<details>` (the matrix's rows, and the chains), measured as headless Chromium lays the
/// page out. A run that deviates keeps its deviating rows and sections open.
@Suite("pinlab check --format html: height")
struct ReportHeightTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Browser/page_height.py").path
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })

    static func measure(_ html: URL) async throws -> (height: Int, closed: Int, opened: Int) {
        let chromium = try #require(Self.chromium, "CI installs Chromium (.ci/run); none was found")
        let run = await ChildProcess.run(["python3", Self.script, chromium, html.path], timeout: TestTimeouts.browser)
        let words = run.stdoutText.split(separator: " ")
        guard run.status == 0, words.count == 6, let h = Int(words[1]), let c = Int(words[3]),
            let o = Int(words[5].trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            Issue.record("page_height.py: \(run.output)")
            return (0, 0, 0)
        }
        return (h, c, o)
    }

    @Test(
        "an all-pass report of the whole catalogue is under 5,000 px; a deviating one shows what deviates",
        .requires("chromium"), .requiresPython(module: "playwright"))
    func allPassReportIsAPage() async throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-html-height-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pass = dir.appendingPathComponent("correct.html")
        let r = try await CLI.run(
            ["check", "--client", "correct", "--format", "html", "--output", pass.path] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let conforming = try await Self.measure(pass)
        #expect(
            conforming.height > 0 && conforming.height < 5000, "the all-pass report is \(conforming.height) px tall")
        #expect(conforming.closed == 2, "the passing rows and the passing scenarios fold: \(conforming)")
        #expect(conforming.opened > 4 * conforming.height, "opened, every chain is there: \(conforming)")

        let deviating = dir.appendingPathComponent("no-pinning.html")
        let d = try await CLI.run(
            ["check", "--client", "no-pinning", "--format", "html", "--output", deviating.path] + CLI.dirArgs)
        #expect(d.status == 1, "\(d.stderr)")
        let page = try String(contentsOf: deviating, encoding: .utf8)
        // A deviating scenario's row and section are outside the folded parts.
        let folded = page.components(separatedBy: "<details class=\"quiet\">").dropFirst()
            .map { $0.components(separatedBy: "</details>").first ?? "" }.joined()
        #expect(
            page.contains("id=\"s-intercepting-proxy\"") && !folded.contains("id=\"s-intercepting-proxy\""),
            "intercepting-proxy deviates for no-pinning: its section must stay open")
        #expect(folded.contains("id=\"s-baseline\""), "baseline goes as expected for no-pinning: its section folds")
    }
}
