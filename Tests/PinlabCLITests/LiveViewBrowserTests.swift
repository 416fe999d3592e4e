import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The live view of `pinlab intercept --live` driven in a real browser: Playwright for Python on the system's
/// Chromium (`executable_path`, no browser download) opens the printed address, a session of `curl -x` runs goes
/// through the proxy, and the script checks what the page shows, clicks a host's row (only its connections are
/// listed) and clicks it again (all of them). The script is Tests/Browser/live_playwright.py.
@Suite("pinlab intercept --live in a browser")
struct LiveViewBrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Browser/live_playwright.py").path
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })

    @Test(
        "Playwright clicks through a session of curl -x runs on the live page", .requires("chromium", "curl"),
        .requiresPython(module: "playwright"))
    func playwrightClicksThroughASession() async throws {
        let bin = try #require(
            CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
        let chromium = try #require(Self.chromium, "CI installs Chromium (.ci/run); none was found")
        // The test lab's PKI exists by now in most runs; made here when it does not.
        _ = try await CLI.run(["pki", "init"] + CLI.dirArgs)
        let run = await ChildProcess.run(
            ["python3", Self.script, bin.path, CLI.pkiDirectory.path, chromium], timeout: .seconds(240))
        #expect(run.status == 0 && run.stdoutText.hasSuffix("ok\n"), "\(run.output)")
        // What the script saw, step by step (each line is a check it made).
        for line in [
            "row api.pinning.test refused", "row v2.api.pinning.test not-pinned",
            "click: only api.pinning.test's connection",
            "second click: all 4 connections",
        ] {
            #expect(run.stdoutText.contains(line), "\(line): \(run.output)")
        }
    }
}
