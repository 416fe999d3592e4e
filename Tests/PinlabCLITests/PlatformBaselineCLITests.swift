import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab check --platform`, the verifier variance of the catalogue and `--baseline` / `--write-baseline`, through the
/// binary, with real clients.
@Suite("pinlab check: platform policies, verifier variance, baselines", .serialized)
struct PlatformBaselineCLITests {
    static func temporaryFile(_ stem: String) -> URL {
        TestScratch.root.appendingPathComponent("pinlab-\(stem)-\(UUID().uuidString).json")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// A baseline written from a teaching client's run: the next identical run exits 0 with the known deviations
    /// marked; a run in which one cell differs exits 1 and names it; another client's run lists what it fixed.
    @Test func baselineFailsOnlyOnChangedCells() async throws {
        let file = Self.temporaryFile("baseline")
        defer { try? FileManager.default.removeItem(at: file) }
        let run =
            ["check", "--client", "no-pinning", "--engine", "openssl", "--scenarios", "baseline,rekey"] + CLI.dirArgs

        let first = try await CLI.run(run + ["--write-baseline", file.path])
        #expect(first.status == 1, "no-pinning deviates on rekey: \(first.stdout)\(first.stderr)")
        let written = try Self.json(try String(contentsOf: file, encoding: .utf8))
        #expect(written["format"] as? String == "pinlab-baseline")
        let cells = try #require(written["cells"] as? [String: String])
        #expect(cells.count == 2 * PinProfile.all.count)
        #expect(cells["rekey/leaf-cert/openssl"] == "fail" && cells["rekey/leaf-spki/openssl"] == "fail")
        #expect(cells["rekey/leaf-spki+backup/openssl"] == "pass")
        // Diff-friendly: one line per cell, sorted.
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("\n    \"baseline/intermediate-spki/openssl\" : \"pass\",\n"), "\(text)")
        try await Self.validate(text, schema: ReportSchemas.baseline)

        let same = try await CLI.run(run + ["--baseline", file.path])
        #expect(same.status == 0, "an identical run conforms to its baseline: \(same.stdout)\(same.stderr)")
        #expect(same.stdout.contains("no cell changed"), "\(same.stdout)")
        #expect(same.stdout.contains("(baselined) expected refuse"), "known deviations are marked: \(same.stdout)")
        #expect(same.stdout.contains("deviates as in its baseline"), "\(same.stdout)")

        // One cell of the committed baseline says pass: the run differs there, and only there.
        var edited = written
        var editedCells = cells
        editedCells["rekey/leaf-cert/openssl"] = "pass"
        edited["cells"] = editedCells
        try JSONSerialization.data(withJSONObject: edited, options: [.sortedKeys, .prettyPrinted]).write(to: file)
        let changed = try await CLI.run(run + ["--baseline", file.path])
        #expect(changed.status == 1, "\(changed.stdout)\(changed.stderr)")
        #expect(changed.stdout.contains("1 cell changed"), "\(changed.stdout)")
        #expect(
            changed.stdout.contains("newly failing (1):\n  rekey × leaf-cert × openssl: pass → fail"),
            "\(changed.stdout)")

        // The JSON report carries the comparison and marks the baselined cells; it validates against the schema.
        let asJSON = try await CLI.run(run + ["--baseline", file.path, "--format", "json"])
        #expect(asJSON.status == 1)
        #expect(asJSON.stderr.contains("newly failing (1)"), "the change goes to standard error beside a JSON report")
        let report = try Self.json(asJSON.stdout)
        let comparison = try #require(report["baseline"] as? [String: Any])
        let changes = try #require(comparison["changes"] as? [[String: Any]])
        #expect(changes.map { $0["cell"] as? String } == ["rekey/leaf-cert/openssl"])
        let verdicts = try #require(report["verdicts"] as? [[String: Any]])
        #expect(
            verdicts.filter { $0["baselined"] as? Bool == true }.count == 1,
            "rekey × leaf-spki is the one known deviation left")

        // The correct client fixes both deviations of the original baseline: newly passing, named.
        try text.write(to: file, atomically: true, encoding: .utf8)
        let fixed = try await CLI.run(
            [
                "check", "--client", "correct", "--engine", "openssl", "--scenarios", "baseline,rekey",
                "--baseline", file.path,
            ] + CLI.dirArgs)
        #expect(fixed.status == 1, "a changed cell fails the run until the baseline is rewritten")
        #expect(fixed.stdout.contains("newly passing (2)"), "\(fixed.stdout)")
        #expect(fixed.stdout.contains("rekey × leaf-spki × openssl: fail → pass"), "\(fixed.stdout)")
    }

    /// `pinlab lab check` takes the same baseline: a learner's known-wrong cells stop failing the grade until one changes.
    @Test func labCheckTakesABaseline() async throws {
        let file = Self.temporaryFile("lab-baseline")
        defer { try? FileManager.default.removeItem(at: file) }
        let lab = ["lab", "check", "1", "--engine", "openssl"] + CLI.dirArgs
        let first = try await CLI.run(lab + ["--client", "no-pinning", "--write-baseline", file.path])
        #expect(first.status == 1, "no-pinning fails lab 1: \(first.stdout)\(first.stderr)")
        let again = try await CLI.run(lab + ["--client", "no-pinning", "--baseline", file.path])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("no cell changed"), "\(again.stdout)")
        let fixed = try await CLI.run(lab + ["--client", "correct", "--baseline", file.path])
        #expect(fixed.status == 1)
        #expect(fixed.stdout.contains("newly passing"), "\(fixed.stdout)")
    }

    @Test func aBadBaselineFileIsASetupErrorNamingTheFile() async throws {
        let file = Self.temporaryFile("bad-baseline")
        defer { try? FileManager.default.removeItem(at: file) }
        try #"{"format": "pinlab-baseline", "formatVersion": 1, "client": "x", "cells": {"rekey": "fail"}}"#
            .write(to: file, atomically: true, encoding: .utf8)
        let r = try await CLI.run(
            ["check", "--client", "correct", "--scenarios", "baseline", "--baseline", file.path] + CLI.dirArgs)
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(
            r.stderr.contains(file.path) && r.stderr.contains("'rekey' is not `scenario/profile/engine`")
                && r.stderr.contains("Fix:"),
            "\(r.stderr)")
        let missing = try await CLI.run(
            ["check", "--client", "correct", "--baseline", "/nonexistent/b.json"] + CLI.dirArgs)
        #expect(missing.status == 2 && missing.stderr.contains("--write-baseline"), "\(missing.stderr)")
        let platform = try await CLI.run(["check", "--client", "correct", "--platform", "iOS"] + CLI.dirArgs)
        #expect(platform.status == 64 || platform.status == 2, "\(platform.status)")
        #expect(
            platform.stderr.contains("'iOS' is not a platform policy") && platform.stderr.contains("openssl-default"),
            "\(platform.stderr)")
    }

    static let policyScenarios =
        "tls-v1-0,tls-v1-1,tls-v1-2,tls-v1-2-no-forward-secrecy,ats-floor,weak-rsa-1024,sha1-signature"
    static let curl = [
        "--", "curl", "-sf", "-o", "/dev/null", "--cacert", "{ca}", "--resolve", "{resolve}",
        "[--pinnedpubkey {pins.curl}]", "{url}",
    ]

    /// curl follows OpenSSL's default security level: with `--platform openssl-default` it conforms on every policy
    /// scenario (static RSA accepted, shown as policy); with `--platform ats` the downgrade rows are red.
    @Test(.requires("curl"))
    func curlConformsToItsPlatformAndNotToATS() async throws {
        try #require(Tool.path("curl") != nil, "curl is not on the PATH (apt-get install curl)")
        let base =
            [
                "check", "--profiles", "none,leaf-spki,leaf-spki+backup", "--scenarios", Self.policyScenarios,
                "--format", "json",
            ] + CLI.dirArgs
        let openssl = try await CLI.run(base + ["--platform", "openssl-default"] + Self.curl)
        #expect(openssl.status == 0, "\(openssl.stdout.prefix(2000))\(openssl.stderr)")
        let report = try Self.json(openssl.stdout)
        #expect(report["platform"] as? String == "openssl-default")
        let verdicts = try #require(report["verdicts"] as? [[String: Any]])
        let rsa = verdicts.filter {
            $0["scenario"] as? String == "tls-v1-2-no-forward-secrecy" && $0["verdict"] as? String != "skipped"
        }
        #expect(rsa.count == 3 * 2)
        for v in rsa {
            #expect(v["verdict"] as? String == "policy", "\(v)")
            #expect(v["expected"] as? String == "accept")
            #expect(
                (v["reason"] as? String)?.hasPrefix("policy: static RSA key exchange") == true, "\(v["reason"] ?? "")")
        }
        let summary = try #require(report["summary"] as? [String: Int])
        #expect(
            summary["fail"] == 0 && summary["policy"] == 3 * 3 * 2,
            "no-forward-secrecy, weak-rsa-1024, sha1-signature: \(summary)")
        try await Self.validate(openssl.stdout, schema: ReportSchemas.json)

        let ats = try await CLI.run(base + ["--platform", "ats"] + Self.curl)
        #expect(ats.status == 1)
        let atsReport = try Self.json(ats.stdout)
        let failed = try #require(atsReport["verdicts"] as? [[String: Any]]).filter {
            $0["verdict"] as? String == "fail"
        }
        #expect(Set(failed.compactMap { $0["scenario"] as? String }) == ["tls-v1-2-no-forward-secrecy"])
        #expect(failed.count == 3 * 2)
        #expect(
            failed.allSatisfy { ($0["reason"] as? String)?.hasPrefix("platform ats refuses here") == true },
            "\(failed.first ?? [:])")

        // Every report format says policy, not deviation.
        let text = try await CLI.run(
            [
                "check", "--profiles", "none", "--scenarios", "tls-v1-2-no-forward-secrecy", "--platform",
                "openssl-default",
            ] + CLI.dirArgs + Self.curl)
        #expect(text.status == 0)
        #expect(text.stdout.contains("tls-v1-2-no-forward-secrecy  A PP"), "\(text.stdout)")
        #expect(
            text.stdout.contains("P tls-v1-2-no-forward-secrecy (2 cells: none × openssl, gnutls): policy: static RSA"),
            "\(text.stdout)")
        for (format, needle) in [
            ("html", "class=\"m policy\""), ("junit", "verdict: policy (not a pinning deviation)"),
            ("markdown", "A PP"),
        ] {
            let r = try await CLI.run(
                [
                    "check", "--profiles", "none", "--scenarios", "tls-v1-2-no-forward-secrecy", "--platform",
                    "openssl-default",
                    "--format", format,
                ] + CLI.dirArgs + Self.curl)
            #expect(r.status == 0)
            #expect(r.stdout.contains(needle), "\(format): \(r.stdout.prefix(3000))")
            #expect(!r.stdout.contains("<failure"), "\(format)")
        }
    }

    /// The whole catalogue, both engines, with curl applying its pins within their declared scope
    /// (Examples/Commands/curl-in-scope.sh), the client-certificate groups and `--resolve`: with
    /// `--platform openssl-default` it conforms (no cell fails; the static-RSA row and the revocation and CT cells
    /// curl does not declare are policy), and with `--platform ats` exactly the six static-RSA cells fail.
    /// curl's `--pinnedpubkey` pins the leaf's key only, so the CA-pin profiles are left out.
    @Test(.requires("curl"))
    func curlWithItsPinScopeConformsOnTheWholeCatalogue() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Examples/Commands/curl-in-scope.sh").path
        let command = [
            "--", "sh", script, "{host}", "{pins.domain}", "{pins.subdomains}", "{pins.curl}", "--",
            "-sf", "-o", "/dev/null", "--resolve", "{resolve}", "--cacert", "{ca}", "[--cert {client.cert}]",
            "[--key {client.key}]", "{url}",
        ]
        let base = ["check", "--profiles", "none,leaf-spki,leaf-spki+backup", "--format", "json"] + CLI.dirArgs
        let openssl = try await CLI.run(base + ["--platform", "openssl-default"] + command)
        #expect(openssl.status == 0, "\(openssl.stderr)")
        let summary = try #require(try Self.json(openssl.stdout)["summary"] as? [String: Int])
        #expect(summary["fail"] == 0 && summary["disagree"] == 0 && summary["error"] == 0, "\(summary)")
        #expect((summary["pass"] ?? 0) > 300, "\(summary)")
        let ats = try await CLI.run(base + ["--platform", "ats"] + command)
        #expect(ats.status == 1)
        let failed = try #require(try Self.json(ats.stdout)["verdicts"] as? [[String: Any]]).filter {
            $0["verdict"] as? String == "fail"
        }
        #expect(Set(failed.compactMap { $0["scenario"] as? String }) == ["tls-v1-2-no-forward-secrecy"])
        #expect(failed.count == 3 * 2)
    }

    /// GnuTLS does not build the path through the trusted twin root: its refusal of the unpinned name-collision-root
    /// cell is stricter than required, not a deviation; its acceptance of the baseline is as expected.
    @Test(.requires("gnutls-cli"))
    func gnutlsRefusalOfTheNameCollisionRootIsStricterThanRequired() async throws {
        try #require(Tool.path("gnutls-cli") != nil, "gnutls-cli is not on the PATH (apt-get install gnutls-bin)")
        let r = try await CLI.run(
            [
                "check", "--profiles", "none", "--scenarios", "baseline,name-collision-root", "--name", "gnutls-cli",
                "--format", "json",
            ] + CLI.dirArgs
                + [
                    "--", "sh", "-c",
                    "printf 'GET / HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n' | gnutls-cli --x509cafile {ca} --verify-hostname {host} --sni-hostname {host} -p {port} {ip}",
                ])
        #expect(r.status == 0, "\(r.stdout.prefix(3000))\(r.stderr)")
        let verdicts = try #require(try Self.json(r.stdout)["verdicts"] as? [[String: Any]]).filter {
            $0["verdict"] as? String != "skipped"
        }
        for v in verdicts where v["scenario"] as? String == "baseline" {
            #expect(v["verdict"] as? String == "pass", "\(v)")
        }
        let collision = verdicts.filter { $0["scenario"] as? String == "name-collision-root" }
        #expect(collision.count == 2)
        for v in collision {
            #expect(v["verdict"] as? String == "stricter", "\(v)")
            #expect(v["observed"] as? String == "refused")
            #expect(
                (v["reason"] as? String)?.hasPrefix("stricter than required: OpenSSL builds the path trusted-first")
                    == true, "\(v["reason"] ?? "")")
        }
    }

    /// The JDK as a command client (Tests/Jdk/JdkPinClient.java: JSSE's default PKIX trust manager, endpoint
    /// identification, SPKI pins checked against the path CertPathBuilder validates). The JDK takes the sent
    /// lab-intermediate-a as the leaf's issuer by name and never tries the trusted twin root: its refusal of the
    /// unpinned name-collision-root cell is stricter than required, on both engines; the pinned cells refuse, the
    /// baseline passes, and the run conforms (exit 0).
    @Test(.requires("javac", "java"))
    func jdkRefusalOfTheNameCollisionRootIsStricterThanRequired() async throws {
        let classes = TestScratch.root.appendingPathComponent("pinlab-jdk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: classes, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: classes) }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Jdk/JdkPinClient.java")
        let javac = await ChildProcess.run(
            ["javac", "-nowarn", "-d", classes.path, source.path], timeout: .seconds(180))
        try #require(javac.status == 0, "\(javac.output)")
        let r = try await CLI.run(
            [
                "check", "--profiles", "none,leaf-spki,intermediate-spki", "--scenarios",
                "baseline,name-collision-root", "--name", "jdk",
                "--timeout", "120", "--jobs", "2", "--format", "json",
            ] + CLI.dirArgs
                + [
                    "--", "java", "-cp", classes.path, "-Djdk.net.hosts.file={hosts.file}", "JdkPinClient", "{host}",
                    "{port}", "{ca}", "{pins}",
                ])
        #expect(r.status == 0, "\(r.stdout.prefix(3000))\(r.stderr)")
        let verdicts = try #require(try Self.json(r.stdout)["verdicts"] as? [[String: Any]]).filter {
            $0["verdict"] as? String != "skipped"
        }
        #expect(verdicts.count == 2 * 3 * 2)
        for v in verdicts where v["scenario"] as? String == "baseline" {
            #expect(v["verdict"] as? String == "pass", "\(v)")
        }
        let collision = verdicts.filter { $0["scenario"] as? String == "name-collision-root" }
        for v in collision where v["profile"] as? String == "none" {
            #expect(v["verdict"] as? String == "stricter", "\(v)")
            #expect(v["observed"] as? String == "refused")
            #expect(
                (v["reason"] as? String)?.contains("GnuTLS and the JDK take the sent lab-intermediate-a") == true,
                "\(v["reason"] ?? "")")
        }
        for v in collision where v["profile"] as? String != "none" {
            #expect(v["verdict"] as? String == "pass" && v["observed"] as? String == "refused", "\(v)")
        }
        #expect(collision.count == 3 * 2)
    }

    /// The batch document names the run's platform, so a harness that can play several configures itself for it.
    @Test(.requiresPython(module: "json"))
    func theBatchDocumentNamesThePlatform() async throws {
        let out = TestScratch.root.appendingPathComponent("pinlab-batch-platform-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try await CLI.run(
            ["check", "--batch", "--platform", "jdk", "--scenarios", "baseline", "--engine", "openssl"] + CLI.dirArgs
                + [
                    "--", "python3", "-c",
                    "import json,sys; open(sys.argv[1], 'w').write(json.load(sys.stdin).get('platform', 'none'))",
                    out.path,
                ])
        #expect(r.status == 1, "the harness answered no cell: \(r.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) == "jdk")
    }

    static func validate(_ document: String, schema: String) async throws {
        guard
            await ChildProcess.run(["python3", "-c", "import jsonschema"], timeout: .seconds(20)).status == 0
                || Tool.inCI
        else { return }
        let dir = TestScratch.root.appendingPathComponent("pinlab-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try document.write(to: dir.appendingPathComponent("doc.json"), atomically: true, encoding: .utf8)
        try schema.write(to: dir.appendingPathComponent("schema.json"), atomically: true, encoding: .utf8)
        let r = await ChildProcess.run(
            [
                "python3", "-c",
                "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
                dir.appendingPathComponent("doc.json").path, dir.appendingPathComponent("schema.json").path,
            ], timeout: .seconds(30))
        #expect(r.status == 0, "\(r.stderrText.suffix(2000))")
    }
}
