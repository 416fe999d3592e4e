import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab --version`, and the binary's resources when it is copied away from the build folder.
@Suite("pinlab release binary")
struct ReleaseTests {
    @Test("--version names the version, the commit and the OpenSSL and GnuTLS libraries it runs on")
    func versionNamesVersionCommitAndLibraries() async throws {
        let r = try await CLI.run(["--version"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines.first?.range(of: #"^pinlab \d+\.\d+\.\d+ \(commit [0-9a-z-]+\)$"#, options: .regularExpression)
                != nil, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("openssl engine: OpenSSL 3.") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("gnutls engine: GnuTLS 3.") }, "\(r.stdout)")
    }

    /// A copy of the binary in a folder of its own (no resource bundle next to it) prints the same catalogue,
    /// schemas and spec as the binary in the build folder: it reads the copies embedded in its code.
    @Test("a copied binary reads the embedded catalogue and schemas")
    func copiedBinaryReadsEmbeddedResources() async throws {
        let bin = try #require(CLI.binary)
        let dir = TestScratch.root.appendingPathComponent("pinlab-copied-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let copy = dir.appendingPathComponent("pinlab")
        // cp in a child process: a copy written by this process could be held open by a child another test forks
        // meanwhile, and then not run (ETXTBSY).
        let cp = try await run(["/bin/cp", bin.path, copy.path])
        #expect(cp.status == 0, "\(cp.output)")
        for args in [
            ["scenarios", "list"], ["check", "--print-schema", "json"], ["check", "--print-schema", "batch-in"],
            ["scenarios", "validate"],
        ] {
            let here = try await CLI.run(args)
            let there = try await run([copy.path] + args)
            #expect(here.status == 0 && there.status == 0, "\(args): \(here.stderr) \(there.stderr)")
            #expect(here.stdout == there.stdout, "\(args) differs in the copied binary")
        }
        let bundles = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasSuffix(".resources")
        }
        #expect(bundles.isEmpty)
    }
}
