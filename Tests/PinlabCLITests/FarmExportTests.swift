import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// `pinlab export farm`: the files a device farm's certificate injection takes, read back by independent parsers
/// (openssl for the .cer and the .pfx with its password, Python's plistlib for the profile), with the client key
/// kept 0600 and the unconstrained proxy root only on request and with its warning.
@Suite("pinlab export farm")
struct FarmExportTests {
    func tempDir(_ label: String) throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-farm-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// Runs a tool found on PATH: its exit status and its output as text.
    func tool(_ name: String, _ args: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        let path = try #require(ChildProcess.resolve(name), "\(name) is not on PATH")
        let r = await ChildProcess.run([path] + args, timeout: TestTimeouts.command)
        return (r.status, String(decoding: r.stdout, as: UTF8.self), String(decoding: r.stderr, as: UTF8.self))
    }

    func mode(_ url: URL) -> mode_t {
        var st = stat()
        return lstat(url.path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    @Test(
        "the bundle: roots as DER and PEM, the profile, the client identity as .pfx (0600) with its password, FARM.md",
        .requires("openssl", "python3"))
    func bundleReadsBack() async throws {
        let dir = try tempDir("bundle")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("farm", isDirectory: true)
        let r = try await CLI.run(["export", "farm", "--out", out.path + "/"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: out.path))
        #expect(
            names == [
                "FARM.md", "lab-root.cer", "lab-root.pem", "PinningLab.mobileconfig", "client-valid.pfx",
                "client-valid.pfx.password",
            ], "\(names)")
        // The .cer is the root's DER: openssl reads it as DER and finds the same certificate as the PEM.
        let der = try await tool(
            "openssl",
            [
                "x509", "-inform", "der", "-in", out.appendingPathComponent("lab-root.cer").path, "-noout",
                "-fingerprint", "-sha256",
            ])
        let pem = try await tool(
            "openssl",
            ["x509", "-in", out.appendingPathComponent("lab-root.pem").path, "-noout", "-fingerprint", "-sha256"])
        #expect(
            der.status == 0 && der.stdout == pem.stdout && der.stdout.contains("Fingerprint"),
            "\(der.stdout) \(der.stderr)")
        // The .pfx opens with the password in the .password file, and holds client-valid's certificate and a key.
        #expect(mode(out.appendingPathComponent("client-valid.pfx")) == 0o600)
        #expect(mode(out.appendingPathComponent("client-valid.pfx.password")) == 0o600)
        let password = out.appendingPathComponent("client-valid.pfx.password").path
        var p12 = try await tool(
            "openssl",
            [
                "pkcs12", "-in", out.appendingPathComponent("client-valid.pfx").path,
                "-passin", "file:\(password)", "-nodes", "-legacy",
            ])
        if p12.status != 0 {  // an OpenSSL without the legacy provider's flag
            p12 = try await tool(
                "openssl",
                [
                    "pkcs12", "-in", out.appendingPathComponent("client-valid.pfx").path,
                    "-passin", "file:\(password)", "-nodes",
                ])
        }
        #expect(p12.status == 0, "\(p12.stderr)")
        #expect(
            p12.stdout.contains("CN = client-valid") || p12.stdout.contains("CN=client-valid"),
            "\(p12.stdout.prefix(400))")
        #expect(p12.stdout.contains("PRIVATE KEY-----"), "the .pfx holds no key")
        let wrong = try await tool(
            "openssl",
            [
                "pkcs12", "-in", out.appendingPathComponent("client-valid.pfx").path,
                "-passin", "pass:not-the-password", "-nodes", "-legacy",
            ])
        #expect(wrong.status != 0, "the .pfx opened without its password")
        // The profile is a property list with one root payload.
        let plist = try await tool(
            "python3",
            [
                "-c",
                """
                import plistlib, sys
                p = plistlib.load(open(sys.argv[1], 'rb'))
                print(len(p['PayloadContent']), p['PayloadContent'][0]['PayloadType'])
                """, out.appendingPathComponent("PinningLab.mobileconfig").path,
            ])
        #expect(
            plist.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1 com.apple.security.root",
            "\(plist.stdout) \(plist.stderr)")
        let readme = try String(contentsOf: out.appendingPathComponent("FARM.md"), encoding: .utf8)
        #expect(
            readme.contains("name-constrained to: localhost, test"), "FARM.md does not say what the root can vouch for")
        #expect(!readme.contains("NOT name-constrained"), "no unconstrained root was asked for")
    }

    @Test("the proxy root comes only with --include-proxy-root, with its warning; the bundle needs a folder")
    func proxyRootAndFolder() async throws {
        let dir = try tempDir("proxy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("farm", isDirectory: true)
        let r = try await CLI.run(["export", "farm", "--include-proxy-root", "--out", out.path + "/"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("proxy-root.cer").path))
        #expect(r.stderr.contains("proxy-root is NOT name-constrained"), "\(r.stderr)")
        let readme = try String(contentsOf: out.appendingPathComponent("FARM.md"), encoding: .utf8)
        #expect(readme.contains("WARNING: proxy-root is NOT name-constrained"), "\(readme)")
        let toStdout = try await CLI.run(["export", "farm"] + CLI.dirArgs)
        #expect(toStdout.status == 2 && toStdout.stderr.contains("--out farm/"), "\(toStdout.stderr)")
        #expect(toStdout.stdout.isEmpty)
    }
}
