import Foundation
import PinningLab
import PinningLabLabs
import PinningLabTestSupport
import Testing

/// The teaching labs, graded through the built `pinlab` binary on both engines: every reference solution passes,
/// every starter fails in exactly the cells its lab is about, and nothing else.
@Suite("teaching labs", .serialized)
struct LabTests {
    /// The repository root (this file is Tests/PinlabCLITests/LabTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    struct Graded: Decodable {
        struct Failure: Decodable {
            var cell: LabCell
            var engines: [String]
            var isTheLesson: Bool
            var did: String
            var shouldHave: String
            var missed: String
        }
        var lab: Int
        var passed: Bool
        var cells: Int
        var wrong: Int
        var engines: [String]
        var failures: [Failure]
    }

    static func grade(_ lab: TeachingLab, file: String) async throws -> (CLI.Result, Graded) {
        let python = try #require(python, "python3 is needed for the Python lab clients")
        let path = root.appendingPathComponent(file).path
        #expect(FileManager.default.fileExists(atPath: path), "\(path) is missing")
        let r = try await CLI.run(
            ["lab", "check", String(lab.number), "--format", "json"] + CLI.dirArgs + ["--", python, path]
                + lab.stepArguments)
        let graded = try JSONDecoder().decode(Graded.self, from: Data(r.stdout.utf8))
        return (r, graded)
    }

    /// The labs whose starter and solution are Python (the Go labs: GoStarterLabTests).
    static var numbers: [Int] { TeachingLabs.all.filter { $0.language == .python }.map(\.number) }

    @Test("the reference solution passes", arguments: numbers)
    func referenceSolutionPasses(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let (r, g) = try await Self.grade(lab, file: lab.solutionPath)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(g.passed && g.wrong == 0 && g.failures.isEmpty)
        #expect(g.engines == ["openssl", "gnutls"])
        #expect(g.cells == lab.scenarios.count * lab.profiles.count * 2)
    }

    @Test("the starter fails for exactly the lab's reason, on both engines", arguments: numbers)
    func starterFailsForTheLabsReason(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        #expect(!lab.starterFails.isEmpty)
        let (r, g) = try await Self.grade(lab, file: lab.starterPath)
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(!g.passed)
        #expect(Set(g.failures.map(\.cell)) == lab.starterFails)
        for f in g.failures {
            #expect(f.engines == ["openssl", "gnutls"], "\(f.cell) went wrong on \(f.engines) only")
            #expect(f.isTheLesson)
            // Every wrong cell is explained by the lab itself, not by the generic fallback.
            #expect(lab.explanation(scenario: f.cell.scenario, profile: f.cell.profile) != nil, "\(f.cell)")
            #expect(!f.did.isEmpty && !f.shouldHave.isEmpty && !f.missed.isEmpty)
        }
        #expect(g.wrong == lab.starterFails.count * 2)
    }

    @Test(
        "the built-in teaching client makes the same mistake as the starter",
        arguments: TeachingLabs.all.filter { $0.teachingClient != nil }.map(\.number))
    func teachingClientFailsLikeTheStarter(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let name = try #require(lab.teachingClient)
        let r = try await CLI.run(
            ["lab", "check", String(lab.number), "--client", name, "--format", "json"] + CLI.dirArgs)
        #expect(r.status == 1)
        let g = try JSONDecoder().decode(Graded.self, from: Data(r.stdout.utf8))
        #expect(Set(g.failures.map(\.cell)) == lab.starterFails)
        let correct = try await CLI.run(["lab", "check", String(lab.number), "--client", "correct"] + CLI.dirArgs)
        #expect(correct.status == 0, "\(correct.stdout)")
        #expect(correct.stdout.contains("PASSED"))
    }

    @Test func textGradeExplainsEachWrongCell() async throws {
        let python = try #require(Self.python)
        let starter = Self.root.appendingPathComponent(TeachingLabs.all[0].starterPath).path
        let r = try await CLI.run(
            ["lab", "check", "1", "--engine", "openssl"] + CLI.dirArgs + ["--", python, starter])
        #expect(r.status == 1)
        for phrase in [
            "✗ intercepting-proxy under leaf-spki (openssl)", "What your client did: It trusted",
            "What it should have done: Refuse", "The reasoning it missed:", "What to try next:", "NOT YET",
        ] {
            #expect(r.stdout.contains(phrase), "missing \(phrase) in\n\(r.stdout)")
        }
    }

    @Test func unknownLabNamesTheValidOnes() async throws {
        let last = try #require(TeachingLabs.all.last)
        let next = String(last.number + 1)
        for bad in [next, "0", "rotation"] {
            let r = try await CLI.run(["lab", "show", bad])
            #expect(r.status == 2, "\(r.status)")
            #expect(r.stderr.contains("'\(bad)' is not a lab"), "\(r.stderr)")
            #expect(
                r.stderr.contains("1 (01-why-pin)") && r.stderr.contains("\(last.number) (\(last.slug))"),
                "\(r.stderr)")
        }
        let unknown = try await CLI.run(["lab", "check", next, "--", "true"])
        #expect(unknown.status != 0 && unknown.status != 1, "an unknown lab must not look like a failed grade")
        #expect(
            unknown.stderr.contains("'\(next)' is not a lab")
                && unknown.stderr.contains("\(last.number) (\(last.slug))"), "\(unknown.stderr)")
        let noClient = try await CLI.run(["lab", "check", "2"])
        #expect(noClient.status != 0 && noClient.status != 1)
        #expect(noClient.stderr.contains("give a client"))
    }

    @Test func listAndShowPointAtPagesThatExist() async throws {
        let list = try await CLI.run(["lab", "list"])
        #expect(list.status == 0)
        for lab in TeachingLabs.all {
            #expect(list.stdout.contains(lab.title))
            let solution = lab.swiftStarterPath.replacingOccurrences(of: "/Starters/", with: "/Instructor/")
            for swift in [lab.swiftStarterPath, solution] where lab.hasSwiftStarter {
                #expect(
                    FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(swift).path), "\(swift)")
            }
            #expect(
                FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(lab.pagePath).path),
                "\(lab.pagePath) is missing")
            let show = try await CLI.run(["lab", "show", String(lab.number)] + CLI.dirArgs)
            #expect(show.status == 0)
            #expect(show.stdout.contains(lab.gradeCommand))
            for s in lab.scenarios { #expect(show.stdout.contains(s)) }
            // The page names every scenario and the grading command; the answers are not in the learner's page.
            let page = try String(contentsOf: Self.root.appendingPathComponent(lab.pagePath), encoding: .utf8)
            #expect(page.contains(lab.gradeCommand), "\(lab.pagePath) does not give the grading command")
            for s in lab.scenarios { #expect(page.contains("`\(s)`"), "\(lab.pagePath) does not name \(s)") }
            #expect(
                FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(lab.instructorNotesPath).path),
                "the instructor answers of lab \(lab.number) are missing")
        }
    }

    @Test func htmlPictureShowsTheChainThePinsAndBothRows() async throws {
        let python = try #require(Self.python)
        let lab = try TeachingLabs.named("5")
        let out = TestScratch.root.appendingPathComponent("pinlab-lab5-\(UUID().uuidString).html")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try await CLI.run(
            ["lab", "check", "5", "--engine", "openssl", "--html", out.path] + CLI.dirArgs
                + ["--", python, Self.root.appendingPathComponent(lab.starterPath).path])
        #expect(r.status == 1)
        let html = try String(contentsOf: out, encoding: .utf8)
        for s in lab.scenarios { #expect(html.contains("id=\"s-\(s)\"")) }
        #expect(html.contains("your client") && html.contains(">correct<"))
        // chain-stuffing: the appended genuine certificates are drawn outside the validated chain.
        #expect(html.contains("not in the validated chain"))
        #expect(html.contains("which is not in the validated chain"))
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))
    }

    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })

    /// The picture renders in headless Chromium (Debian: `apt-get install -y chromium`) and is not blank. Without
    /// Chromium the test is reported as skipped; in CI, which installs it, a missing Chromium fails it.
    @Test(.enabled(if: Self.chromium != nil || Tool.inCI, "Chromium is not installed (apt-get install -y chromium)"))
    func htmlPictureRendersInHeadlessChromium() async throws {
        let chromium = try #require(Self.chromium, "CI installs Chromium (.ci/run); none was found")
        let python = try #require(Self.python)
        let dir = TestScratch.root.appendingPathComponent("pinlab-lab-shot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = dir.appendingPathComponent("lab6.html")
        let png = dir.appendingPathComponent("lab6.png")
        let lab = try TeachingLabs.named("6")
        let r = try await CLI.run(
            ["lab", "check", "6", "--engine", "gnutls", "--html", html.path] + CLI.dirArgs
                + ["--", python, Self.root.appendingPathComponent(lab.starterPath).path])
        #expect(r.status == 1)
        let shot = try await run(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=1280,900", "--screenshot=\(png.path)", html.absoluteString,
            ], timeout: TestTimeouts.browser.timeInterval)
        #expect(FileManager.default.fileExists(atPath: png.path), "no screenshot: \(shot.output)")
        let check = try await run([python, Self.root.appendingPathComponent("labs/tools/pngcheck.py").path, png.path])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.stdout.contains("1280x900"))
    }
}
