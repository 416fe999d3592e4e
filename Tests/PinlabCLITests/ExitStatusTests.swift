import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// One exit-status convention for every command: 0 conforms, 1 a cell deviates, 2 a usage or setup problem. A setup
/// problem is said before any cell runs, naming the option or file and the fix.
@Suite("Exit statuses: 0 conforms, 1 deviates, 2 usage or setup")
struct ExitStatusTests {
    @Test(arguments: [
        (["check", "--client", "correct", "--shard", "3/2"], "1 ≤ K ≤ N"),
        (["check", "--client", "correct", "--engine", "bogus"], "'bogus' is not an engine"),
        (["check", "--client", "bogus"], "not a built-in client"),
        (["check"], "give a client"),
        (
            ["check", "--scenarios", "baseline", "--", "curl", "-sf", "{url"],
            "opens the placeholder {url without a closing brace"
        ),
        (
            ["check", "--scenarios", "baseline", "--", "pinlab-no-such-client", "{url}"],
            "the client command 'pinlab-no-such-client' could not be started: it was not found on the PATH"
        ),
        (["check", "--scenarios", "baseline", "--", "/nonexistent/client", "{url}"], "is not an executable file"),
        (["lab", "check", "1", "--", "pinlab-no-such-client", "{url}"], "could not be started"),
        (
            ["check", "--client", "correct", "--scenarios", "baseline", "--output", "pinlab-no-such-folder/x.html"],
            "pinlab-no-such-folder does not exist. Fix: create it (mkdir -p "
        ),
        (
            ["lab", "check", "1", "--client", "correct", "--html", "pinlab-no-such-folder/lab.html"],
            "pinlab-no-such-folder does not exist"
        ),
    ])
    func setupProblemsExitTwoBeforeAnyCellRuns(_ args: [String], _ message: String) async throws {
        let r = try await CLI.run(args + CLI.dirArgs)
        #expect(r.status == 2, "\(args.joined(separator: " ")) → \(r.status): \(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(!r.stdout.contains("cells"), "no cell was run or graded: \(r.stdout)")
    }

    @Test func deviationsExitOneAndConformanceZero() async throws {
        let ok = try await CLI.run(
            ["check", "--client", "correct", "--engine", "openssl", "--scenarios", "baseline"] + CLI.dirArgs)
        #expect(ok.status == 0, "\(ok.stdout)")
        let bad = try await CLI.run(
            ["check", "--client", "no-pinning", "--engine", "openssl", "--scenarios", "rekey"] + CLI.dirArgs)
        #expect(bad.status == 1, "\(bad.stdout)")
    }
}
