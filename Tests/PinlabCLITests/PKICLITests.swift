import Foundation
import PinningLabTestSupport
import PinningLab
import Testing

@Suite("pinlab pki")
struct PKICLITests {
    func freshDir(_ label: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-pki-cli-\(label)-\(UUID().uuidString)")
    }

    @Test func initListShowPinsExport() async throws {
        let dir = freshDir("main")
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = ["--dir", dir.path]
        let identities = try Lab.builtInSpec().names.count
        try #require(identities > 0)
        let first = try await CLI.run(["pki", "init"] + d)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("\(identities) identities") && first.stdout.contains("keys created"), "\(first.stdout)")
        let second = try await CLI.run(["pki", "init"] + d)
        #expect(second.stdout.contains("keys kept") && second.stdout.contains("fresh"), "\(second.stdout)")

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
        for (format, check) in [("pem", ["openssl", "x509", "-noout", "-in"]), ("der", ["openssl", "x509", "-inform", "der", "-noout", "-in"]),
                                ("key", ["openssl", "pkey", "-noout", "-in"]), ("chain", ["openssl", "crl2pkcs7", "-nocrl", "-certfile"])] {
            let e = try await CLI.run(["pki", "export", "leaf-v1", "--format", format, "--out", out.path] + d)
            #expect(e.status == 0, "\(format): \(e.stderr)")
            let r = try await run(check + [out.path])
            #expect(r.status == 0, "\(format): \(r.output)")
        }
        let p12 = try await CLI.run(["pki", "export", "client-valid", "--format", "p12", "--password", "hunter2", "--out", out.path] + d)
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
        try "version: 1\nentities:\n  root: { role: root }\n  leaf: { role: leaf, issuer: rot }\n".write(to: badSpec, atomically: true, encoding: .utf8)
        let bad = try await CLI.run(["pki", "init", "--spec", badSpec.path, "--dir", dir.appendingPathComponent("p").path])
        #expect(bad.status == 2, "a bad spec is a setup problem")
        #expect(bad.stderr.contains("bad.yaml:4: 'leaf', field 'issuer': unknown issuer 'rot'"), "\(bad.stderr)")
        #expect(bad.stderr.contains("did you mean 'root'?"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("p/state.json").path), "no partial state")
        let fmt = try await CLI.run(["pki", "pins", "--format", "xml", "--dir", dir.path])
        #expect(fmt.status != 0 && fmt.stderr.contains("--format must be one of"))
    }

    @Test func concurrentInitProcessesLeaveOneConsistentState() async throws {
        let dir = freshDir("concurrent")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try #require(CLI.binary)
        let results = await withTaskGroup(of: ChildProcess.Result.self) { group in
            for _ in 0..<4 { group.addTask { await ChildProcess.run([bin.path, "pki", "init", "--dir", dir.path], timeout: .seconds(120)) } }
            var all: [ChildProcess.Result] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderrText))")
        let pki = try Lab.pki(directory: dir)
        #expect(pki.refresh.generatedKeys.isEmpty, "the four runs created every key once")
        #expect(!pki.refresh.reissued, "and left fresh certificates")
        let r = try await run(["openssl", "verify", "-CAfile", pki.files(for: "lab-root").certificatePEM.path, "-untrusted",
                         pki.files(for: "lab-intermediate-a").certificatePEM.path, pki.files(for: "leaf-v1").certificatePEM.path])
        #expect(r.status == 0, "\(r.output)")
        let keyFiles = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("keys").path)
        #expect(keyFiles.filter { $0.hasPrefix(".tmp") }.isEmpty)
        #expect(keyFiles.count == Set(pki.identities.map(\.keyName)).count)
    }
}

func Storage_mode(_ path: String) -> Int? {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber).map { $0.intValue & 0o777 }
}
