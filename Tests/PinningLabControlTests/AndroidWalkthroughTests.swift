import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The article "Testing an Android app": its `PinLab.java`, taken from the article itself, compiled with javac
/// against Debian's OkHttp 3.13 and Android's `org.json` (libandroid-json-java), and run on the JVM with a driver
/// that does what the article's instrumentation test does (Tests/Walkthroughs/AndroidDriver.java).
@Suite("Android walk-through: PinLab.java on the JVM", .serialized)
struct AndroidWalkthroughTests {
    static let jars = ["okhttp.jar", "okio.jar", "okhttp-tls.jar", "com.android.json.jar"].map {
        "/usr/share/java/" + $0
    }
    static var available: Bool {
        ProcessInfo.processInfo.environment["CI"] != nil
            || (Tool.path("javac") != nil && jars.allSatisfy { FileManager.default.fileExists(atPath: $0) })
    }

    @Test(.enabled(if: available, "needs javac, libokhttp-java and libandroid-json-java (apt-get install …)"))
    func articleHelperDrivesTheControlAPIFromOkHttp() async throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let article = try String(
            contentsOf: here.appendingPathComponent("../../Sources/PinningLab/PinningLab.docc/TestingAnAndroidApp.md"),
            encoding: .utf8)
        let blocks = article.components(separatedBy: "```java\n").dropFirst().map {
            $0.components(separatedBy: "```")[0]
        }
        let helper = try #require(
            blocks.first { $0.contains("public final class PinLab") }, "no PinLab.java in the article")
        let work = TestScratch.root.appendingPathComponent("android-walkthrough-\(UUID().uuidString)")
        let sources = work.appendingPathComponent("src/com/example/pinninglab")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try helper.write(to: sources.appendingPathComponent("PinLab.java"), atomically: true, encoding: .utf8)
        let driver = here.appendingPathComponent("../Walkthroughs/AndroidDriver.java").standardizedFileURL
        let classes = work.appendingPathComponent("classes").path
        let classpath = Self.jars.joined(separator: ":")
        let javac = await ChildProcess.run(
            [
                "javac", "-nowarn", "-cp", classpath, "-d", classes, sources.appendingPathComponent("PinLab.java").path,
                driver.path,
            ],
            timeout: .seconds(180))
        try #require(javac.status == 0, "javac: \(javac.output)")

        try await ControlTestLab.withControl { control, _ in
            let run = await ChildProcess.run(
                [
                    "java", "-cp", classes + ":" + classpath, "com.example.pinninglab.AndroidDriver", control.url,
                    try #require(control.token),
                ], timeout: .seconds(300))
            #expect(run.status == 0, "\(run.output)")
            let cells = run.stdoutText.split(separator: "\n").filter { $0.hasPrefix("cell ") }
            #expect(cells.count == 20, "10 scenarios × 2 engines: \(run.output)")
            #expect(
                run.stdoutText.contains("rotation baseline gnutls generation=1") && run.stdoutText.contains(" ok\n"))
            #expect(
                run.stdoutText.contains("error pinlab 404 (scenario): no scenario has the id 'no-such-scenario'."),
                "\(run.stdoutText)")
            #expect(run.stdoutText.contains("all cells right"))
        }
    }
}
