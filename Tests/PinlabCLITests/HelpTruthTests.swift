// What `--help` and standard error say is what the process does.
import Foundation
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
}
