import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// `pinlab export ech` and `pinlab pki export --ech`: the lab's ECHConfigList, binary and base64, read back with an
/// independent parser and compared with the PKI folder's list — the one every command client is given as
/// `{ech.config}` (ECHTests checks that the Go client is given exactly it).
@Suite("pinlab: ECH exports")
struct ECHExportCLITests {
    func tempDir() throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-ech-export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    static func checkParses(_ bytes: [UInt8], _ what: String) {
        guard let configs = ECHConfigRead.parseList(bytes), configs.count == 1, let c = configs.first else {
            Issue.record("\(what): not one ECHConfig: \(bytes)")
            return
        }
        #expect(c.version == 0xfe0d, "\(what)")
        #expect(c.publicName == "public.pinning.test", "\(what)")
        #expect(c.kemID == 0x0020 && c.publicKey.count == 32, "\(what): X25519")
        #expect(c.cipherSuites == [[0x0001, 0x0001]] && c.extensions.isEmpty, "\(what)")
    }

    @Test func bothCommandsWriteTheLabsListInBothForms() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try await Lab.openPKI(directory: CLI.pkiDirectory)
        let list = try pki.echConfiguration().configList
        let b64 = Data(list).base64EncodedString() + "\n"

        // pinlab export ech: the base64 main file to stdout; both files to a folder.
        let stdout = try await CLI.run(["export", "ech"] + CLI.dirArgs)
        #expect(stdout.status == 0, "\(stdout.stderr)")
        #expect(stdout.stdout == b64)
        let folder = dir.appendingPathComponent("ech/")
        let written = try await CLI.run(["export", "ech", "--out", folder.path + "/"] + CLI.dirArgs)
        #expect(written.status == 0, "\(written.stderr)")
        let exportedB64 = try String(contentsOf: folder.appendingPathComponent("echconfig.b64"), encoding: .utf8)
        let exportedBinary = Array(try Data(contentsOf: folder.appendingPathComponent("echconfig.list")))
        #expect(exportedB64 == b64)
        #expect(exportedBinary == list)
        Self.checkParses(exportedBinary, "export ech: echconfig.list")
        Self.checkParses(
            Array(Data(base64Encoded: exportedB64.trimmingCharacters(in: .newlines)) ?? Data()),
            "export ech: echconfig.b64")

        // pinlab pki export --ech: base64 by default, binary with --format binary.
        let pkiB64 = try await CLI.run(["pki", "export", "--ech"] + CLI.dirArgs)
        #expect(pkiB64.status == 0 && pkiB64.stdout == b64, "\(pkiB64.stderr)")
        let binaryFile = dir.appendingPathComponent("ech.list")
        let pkiBinary = try await CLI.run(
            ["pki", "export", "--ech", "--format", "binary", "--out", binaryFile.path] + CLI.dirArgs)
        #expect(pkiBinary.status == 0, "\(pkiBinary.stderr)")
        let bytes = Array(try Data(contentsOf: binaryFile))
        #expect(bytes == list)
        Self.checkParses(bytes, "pki export --ech --format binary")
    }

    /// Mistakes name the fix: an identity with --ech, a certificate format with --ech, no identity and no --ech, and
    /// an ech export from pins.json (which holds no ECH configuration).
    @Test func mistakesAreRefusedWithTheirFix() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (args, says) in [
            (["pki", "export", "leaf-v1", "--ech"], "drop 'leaf-v1'"),
            (["pki", "export", "--ech", "--format", "pem"], "base64 or binary"),
            (["pki", "export"], "--ech"),
        ] {
            let r = try await CLI.run(args + CLI.dirArgs)
            #expect(r.status != 0 && r.stderr.contains(says), "\(args): \(r.stderr)")
        }
        let pins = dir.appendingPathComponent("pins.json")
        let made = try await CLI.run(["export", "pins-json", "--out", pins.path] + CLI.dirArgs)
        #expect(made.status == 0, "\(made.stderr)")
        let r = try await CLI.run(["export", "ech", "--from", pins.path] + CLI.dirArgs)
        #expect(r.status == 2 && r.stderr.contains("drop --from"), "\(r.stderr)")
    }
}
