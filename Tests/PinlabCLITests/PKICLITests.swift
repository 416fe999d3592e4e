import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("pinlab pki")
struct PKICLITests {
    func freshDir(_ label: String) -> URL {
        TestScratch.root.appendingPathComponent("pinlab-pki-cli-\(label)-\(UUID().uuidString)")
    }

    @Test func initListShowPinsExport() async throws {
        let dir = freshDir("main")
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = ["--dir", dir.path]
        let identities = try Lab.builtInSpec().names.count
        try #require(identities > 0)
        let first = try await CLI.run(["pki", "init"] + d)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stdout.contains("\(identities) identities") && first.stdout.contains("keys created"),
            "\(first.stdout)")
        let second = try await CLI.run(["pki", "init"] + d)
        #expect(second.stdout.contains("keys kept") && second.stdout.contains("fresh"), "\(second.stdout)")

        // Damaged per-identity files are found and rewritten from the state, and the run says which.
        let leafFiles = dir.appendingPathComponent("certs/leaf-v1")
        try Data("garbage".utf8).write(to: leafFiles.appendingPathComponent("cert.pem"))
        try FileManager.default.removeItem(at: leafFiles.appendingPathComponent("chain.pem"))
        let repaired = try await CLI.run(["pki", "init"] + d)
        #expect(repaired.status == 0 && repaired.stdout.contains("fresh"), "\(repaired.stdout)\(repaired.stderr)")
        #expect(
            repaired.stdout.contains("certs/leaf-v1: cert.pem damaged, chain.pem missing: rewritten"),
            "\(repaired.stdout)")
        let verified = try await run([
            "openssl", "verify", "-CAfile", dir.appendingPathComponent("certs/lab-root/cert.pem").path,
            "-untrusted", leafFiles.appendingPathComponent("chain.pem").path,
            leafFiles.appendingPathComponent("cert.pem").path,
        ])
        #expect(verified.status == 0, "\(verified.output)")
        let third = try await CLI.run(["pki", "init"] + d)
        #expect(!third.stdout.contains("Repaired"), "\(third.stdout)")

        let list = try await CLI.run(["pki", "list"] + d)
        #expect(list.status == 0)
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("NAME") == true && lines.count == identities + 1)
        let json = try await CLI.run(["pki", "list", "--format", "json"] + d)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(rows.compactMap { $0["name"] as? String } == (try Lab.builtInSpec().names))
        let v1 = try #require(rows.first { $0["name"] as? String == "leaf-v1" })
        let files = try #require(v1["files"] as? [String: String])
        #expect(FileManager.default.fileExists(atPath: files["certificatePEM"]!))
        #expect(FileManager.default.fileExists(atPath: files["pkcs12"]!))

        let show = try await CLI.run(["pki", "show", "leaf-v1"] + d)
        #expect(show.stdout.contains("chain      leaf-v1 ← lab-intermediate-a ← lab-root"), "\(show.stdout)")
        #expect(show.stdout.contains("sha256/\(v1["spkiSHA256"] as! String)"))

        let curl = try await CLI.run(["pki", "pins", "leaf-v1", "leaf-v3-rekey", "--format", "curl"] + d)
        #expect(curl.stdout.hasPrefix("sha256//") && curl.stdout.contains(";sha256//"), "\(curl.stdout)")
        let okhttp = try await CLI.run(["pki", "pins", "--format", "okhttp"] + d)
        #expect(okhttp.stdout.split(separator: "\n").count == 2, "default pin set: K1 and the backup K2")

        // Exports are readable by openssl.
        let out = dir.appendingPathComponent("x")
        for (format, check) in [
            ("pem", ["openssl", "x509", "-noout", "-in"]),
            ("der", ["openssl", "x509", "-inform", "der", "-noout", "-in"]),
            ("key", ["openssl", "pkey", "-noout", "-in"]), ("chain", ["openssl", "crl2pkcs7", "-nocrl", "-certfile"]),
        ] {
            let e = try await CLI.run(["pki", "export", "leaf-v1", "--format", format, "--out", out.path] + d)
            #expect(e.status == 0, "\(format): \(e.stderr)")
            let r = try await run(check + [out.path])
            #expect(r.status == 0, "\(format): \(r.output)")
        }
        let p12 = try await CLI.run(
            ["pki", "export", "client-valid", "--format", "p12", "--password", "hunter2", "--out", out.path] + d)
        #expect(p12.status == 0)
        #expect(try await run(["openssl", "pkcs12", "-in", out.path, "-passin", "pass:hunter2", "-noout"]).status == 0)
        #expect(try await run(["openssl", "pkcs12", "-in", out.path, "-passin", "pass:wrong", "-noout"]).status != 0)
        #expect(Storage_mode(out.path) == 0o600)
    }

    @Test func errorsAreClearAndExitNonZero() async throws {
        let dir = freshDir("err")
        defer { try? FileManager.default.removeItem(at: dir) }
        let unknown = try await CLI.run(["pki", "show", "leaf-v9", "--dir", dir.path])
        #expect(unknown.status != 0 && unknown.stderr.contains("no identity named 'leaf-v9'"), "\(unknown.stderr)")
        let badSpec = dir.appendingPathComponent("bad.yaml")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try "version: 1\nentities:\n  root: { role: root }\n  leaf: { role: leaf, issuer: rot }\n".write(
            to: badSpec, atomically: true, encoding: .utf8)
        let bad = try await CLI.run([
            "pki", "init", "--spec", badSpec.path, "--dir", dir.appendingPathComponent("p").path,
        ])
        #expect(bad.status == 2, "a bad spec is a setup problem")
        #expect(bad.stderr.contains("bad.yaml:4: 'leaf', field 'issuer': unknown issuer 'rot'"), "\(bad.stderr)")
        #expect(bad.stderr.contains("did you mean 'root'?"))
        #expect(
            !FileManager.default.fileExists(atPath: dir.appendingPathComponent("p/state.json").path), "no partial state"
        )
        let fmt = try await CLI.run(["pki", "pins", "--format", "xml", "--dir", dir.path])
        #expect(fmt.status != 0 && fmt.stderr.contains("--format must be one of"))
        // A spec of one's own without lab-root or leaf-v1: the summary names its own root and leaf (it named
        // certs/lab-root/cert.pem, a file that does not exist, and `pki show leaf-v1`).
        let own = dir.appendingPathComponent("own.yaml")
        try "version: 1\nkeys:\n  K1: p256\nentities:\n  r: { role: root }\n  l: { role: leaf, issuer: r, key: K1 }\n"
            .write(to: own, atomically: true, encoding: .utf8)
        let ownDir = dir.appendingPathComponent("own")
        let made = try await CLI.run(["pki", "init", "--spec", own.path, "--dir", ownDir.path])
        let trust = ownDir.appendingPathComponent("certs/r/cert.pem").path
        #expect(
            made.status == 0 && made.stdout.contains("Trust file: \(trust)")
                && FileManager.default.fileExists(atPath: trust), "\(made.stdout)")
        #expect(
            made.stdout.contains("pinlab pki show l ") && !made.stdout.contains("leaf-v1")
                && !made.stdout.contains("lab-root"), "\(made.stdout)")
    }

    /// Marks `key` in a PKI folder's state file as derived from `seed`, as PinningLab did for every EC key before
    /// CA keys stopped being seeded: the state of a folder an older version made with `--seed`.
    func markSeeded(_ dir: URL, key: String) throws {
        let url = dir.appendingPathComponent("state.json")
        var state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var keys = try #require(state["keys"] as? [String: [String: String]])
        let seeded = try #require(keys["K1"]?["origin"], "K1 (a leaf key) is seeded")
        #expect(seeded.hasPrefix("seed:"), "\(seeded)")
        keys[key]?["origin"] = seeded
        state["keys"] = keys
        try JSONSerialization.data(withJSONObject: state).write(to: url)
        chmod(url.path, 0o600)
    }

    @Test("a root whose key came from a seed and that is not name-constrained is never exported; --rekey fixes it")
    func seededUnconstrainedRootIsRefused() async throws {
        let dir = freshDir("seeded")
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = ["--dir", dir.path]
        let initialized = try await CLI.run(["pki", "init", "--seed", "docs"] + d)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        try markSeeded(dir, key: "proxy-root")
        try markSeeded(dir, key: "lab-root")
        let out = dir.appendingPathComponent("profile", isDirectory: true).path + "/"
        for args in [
            ["export", "mobileconfig", "--include-proxy-root", "--out", out],
            ["export", "curl", "proxy-leaf"],
            ["export", "mobileconfig", "--scenario", "intercepting-proxy", "--out", out],
            ["pki", "export", "proxy-root", "--format", "pem"],
            ["pki", "export", "proxy-leaf", "--format", "root"],
        ] {
            let r = try await CLI.run(args + d)
            #expect(r.status != 0, "\(args.joined(separator: " ")) is refused: \(r.stdout)")
            #expect(
                r.stderr.contains("'proxy-root'") && r.stderr.contains("derived from a seed")
                    && r.stderr.contains("pinlab pki proxy-root --rekey"), "\(args): \(r.stderr)")
            #expect(!r.stdout.contains("BEGIN CERTIFICATE"), "\(args): nothing written")
        }
        // lab-root is name-constrained: seeded or not, its export goes through.
        let labRoot = try await CLI.run(["export", "mobileconfig", "--out", out] + d)
        #expect(labRoot.status == 0, "\(labRoot.stderr)")
        let warned = try await CLI.run(["pki", "init"] + d)
        #expect(
            warned.stderr.contains("lab-root") && warned.stderr.contains("pinlab pki init --force"), "\(warned.stderr)")

        let rekeyed = try await CLI.run(["pki", "proxy-root", "--rekey"] + d)
        #expect(
            rekeyed.status == 0 && rekeyed.stdout.contains("proxy-root: NOT name-constrained"),
            "\(rekeyed.stdout) \(rekeyed.stderr)")
        let again = try await CLI.run(["export", "mobileconfig", "--include-proxy-root", "--out", out] + d)
        #expect(again.status == 0, "after --rekey: \(again.stderr)")
        #expect(again.stderr.contains("warning: proxy-root is NOT name-constrained"), "\(again.stderr)")
    }

    @Test("proxy-root lives 7 days; --rekey replaces its key and re-issues what it signs, nothing else's key")
    func proxyRootIsShortLivedAndRekeyable() async throws {
        let dir = freshDir("rekey")
        defer { try? FileManager.default.removeItem(at: dir) }
        let before = try Lab.pki(directory: dir)
        let root = try before.identity("proxy-root")
        #expect(
            abs(root.notAfter.timeIntervalSince(root.notBefore) - (7 * 86400 + 3600)) < 5,
            "\(root.notBefore) → \(root.notAfter)")
        for name in ["proxy-leaf", "proxy-leaf-api", "twin-intermediate-a", "twin-leaf"] {
            #expect(
                try before.identity(name).notAfter <= root.notAfter.addingTimeInterval(1),
                "\(name) does not outlive proxy-root")
        }
        let r = try await CLI.run(["pki", "proxy-root", "--rekey", "--dir", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("whoever holds its key can impersonate ANY site"), "\(r.stderr)")
        // not the cached one
        let after = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: dir))
        #expect(try after.identity("proxy-root").pins.spkiSHA256 != root.pins.spkiSHA256, "a new key")
        for name in ["lab-root", "lab-intermediate-a", "leaf-v1", "twin-intermediate-a"] {
            #expect(
                try after.identity(name).pins.spkiSHA256 == before.identity(name).pins.spkiSHA256,
                "\(name) keeps its key")
        }
        // What proxy-root signs is re-issued under the new key: the chain verifies.
        let files = after.files(for: "twin-leaf")
        try after.materialize("twin-leaf")
        let v = try await run([
            "openssl", "verify", "-CAfile", files.rootPEM.path, "-untrusted", files.chainPEM.path,
            files.certificatePEM.path,
        ])
        #expect(v.status == 0, "\(v.output)")
        let show = try await CLI.run(["pki", "show", "proxy-root", "--dir", dir.path])
        #expect(show.stdout.contains("reach      NOT name-constrained: it can vouch for ANY site"), "\(show.stdout)")
        let labRoot = try await CLI.run(["pki", "show", "lab-root", "--dir", dir.path])
        #expect(
            labRoot.stdout.contains("reach      name-constrained to: localhost, test, 127.0.0.0/8, ::1/128"),
            "\(labRoot.stdout)")
    }

    @Test func concurrentInitProcessesLeaveOneConsistentState() async throws {
        let dir = freshDir("concurrent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try #require(CLI.binary)
        let results = await withTaskGroup(of: ChildProcess.Result.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    await ChildProcess.run([bin.path, "pki", "init", "--dir", dir.path], timeout: TestTimeouts.command)
                }
            }
            var all: [ChildProcess.Result] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderrText))")
        let pki = try Lab.pki(directory: dir)
        #expect(pki.refresh.generatedKeys.isEmpty, "the four runs created every key once")
        #expect(!pki.refresh.reissued, "and left fresh certificates")
        let r = try await run([
            "openssl", "verify", "-CAfile", pki.files(for: "lab-root").certificatePEM.path, "-untrusted",
            pki.files(for: "lab-intermediate-a").certificatePEM.path, pki.files(for: "leaf-v1").certificatePEM.path,
        ])
        #expect(r.status == 0, "\(r.output)")
        let keyFiles = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("keys").path)
        #expect(keyFiles.filter { $0.hasPrefix(".tmp") }.isEmpty)
        // One file per key an identity uses, and one per CT log.
        #expect(keyFiles.count == Set(pki.identities.map(\.keyName)).count + pki.ctLogs.count)
    }
}

// swift-format-ignore: AlwaysUseLowerCamelCase
func Storage_mode(_ path: String) -> Int? {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber).map {
        $0.intValue & 0o777
    }
}
