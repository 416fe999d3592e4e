// What `--help` and standard error say is what the process does.
import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("help and warnings tell the truth")
struct HelpTruthTests {
    @Test("lab check exits with the codes its help lists")
    func labCheckExitCodesEqualItsHelp() async throws {
        let help = try await CLI.run(["lab", "check", "--help"])
        let text = help.stdout.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "  ", with: " ")
        #expect(text.contains("2 for a malformed command line"), "\(help.stdout)")
        #expect(!text.contains("64"), "the help promises an exit status the process never uses")
        let unknownLab = try await CLI.run(["lab", "check", "99"] + CLI.dirArgs + ["--", "true"])
        #expect(unknownLab.status == 2, "\(unknownLab.stderr)")
        #expect(unknownLab.stderr.contains("is not a lab"), "\(unknownLab.stderr)")
        let badFlag = try await CLI.run(["lab", "check", "--no-such-flag", "1", "--", "true"])
        #expect(badFlag.status == 2, "\(badFlag.stderr)")
    }

    @Test("an export's warning is said once on standard error")
    func exportWarningsAreNotDoubled() async throws {
        let r = try await CLI.run(["pki", "export", "proxy-root", "--format", "pem"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("warning: "), "the unconstrained proxy root exports without a warning: \(r.stderr)")
        #expect(!r.stderr.contains("warning: WARNING"), "\(r.stderr)")
    }

    @Test("one environment prefix: PINLAB_, with the 0.9.0 names read for one release and said to be deprecated")
    func environmentPrefix() async throws {
        let bin = try #require(CLI.binary)
        func run(_ variable: String) async -> ChildProcess.Result {
            var env = ProcessInfo.processInfo.environment
            env["PINLAB_TRACE"] = nil
            env["PINNINGLAB_TRACE"] = nil
            env[variable] = "1"
            return await ChildProcess.run(
                [bin.path, "pki", "list"] + CLI.dirArgs, environment: env, timeout: TestTimeouts.command)
        }
        let new = await run("PINLAB_TRACE")
        #expect(new.status == 0, "\(new.stderrText)")
        #expect(
            new.stderrText.contains("pki: ") && new.stderrText.contains(" ms"),
            "PINLAB_TRACE traced nothing: \(new.stderrText)")
        #expect(!new.stderrText.contains("deprecated"), "\(new.stderrText)")
        let old = await run("PINNINGLAB_TRACE")
        #expect(old.status == 0, "\(old.stderrText)")
        #expect(
            old.stderrText.contains("PINNINGLAB_TRACE is deprecated") && old.stderrText.contains("PINLAB_TRACE"),
            "\(old.stderrText)")
    }

    @Test("a usage error names its own subcommand's usage, also when the subcommand finds it while running")
    func usageErrorsNameTheirSubcommand() async throws {
        for (args, usage) in [
            (["intercept", "--listen", "nope"], "Usage: pinlab intercept"),
            (["timeline", "--preset", "nope"], "Usage: pinlab timeline"),
            (["serve"] + CLI.dirArgs, "Usage: pinlab serve"),
            (["lab", "check", "99", "--", "true"], "Usage: pinlab lab check"),
        ] {
            let r = try await CLI.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(usage), "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("pinlab <subcommand>"), "\(args): \(r.stderr)")
        }
    }
}
