import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// A batch run keeps a fixture server per cell open at once (about four descriptors each): with the common soft limit
/// (1,024; 256 on macOS) it ran out of descriptors halfway and turned every cell into an error.
@Suite("Batch runs and the descriptor limit", .requires("python3"))
struct DescriptorLimitTests {
    static let harness = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/Batch/python/pinlab_batch.py").path

    func batch(ulimit: String) async throws -> CLI.Result {
        let bin = try #require(CLI.binary)
        let script = "ulimit \(ulimit) 512 && exec \"$0\" check --batch --engine openssl --dir \"$1\" -- python3 \"$2\""
        let r = await ChildProcess.run(
            ["/bin/sh", "-c", script, bin.path, CLI.pkiDirectory.path, Self.harness],
            timeout: TestTimeouts.catalogue)
        return CLI.Result(status: r.status, stdout: r.stdoutText, stderr: r.stderrText)
    }

    @Test("a soft limit below what the batch needs is raised (264 cells, soft limit 512)")
    func softLimitIsRaised() async throws {
        let r = try await batch(ulimit: "-Sn")
        #expect(!r.stdout.contains("Too many open files"), "\(r.stdout.suffix(600))")
        #expect(r.stdout.contains(" 0 error"), "\(r.stdout.suffix(300))")
    }

    @Test("a hard limit below it is a setup error that names the number and the fix, before any server starts")
    func hardLimitIsASetupError() async throws {
        let r = try await batch(ulimit: "-n")
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("may open 512") && r.stderr.contains("ulimit -n"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }
}
