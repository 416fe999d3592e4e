import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// `pinlab check --batch`, `--shard`, `pinlab report merge` and the progress line, through the built binary, with the
/// Python and OkHttp harnesses of Examples/Batch judged against the same clients run per cell.
@Suite("pinlab check --batch", .serialized)
struct BatchCLITests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let python = repository.appendingPathComponent("Examples/Batch/python/pinlab_batch.py").path
    static let java = repository.appendingPathComponent("Examples/Batch/okhttp/PinlabBatch.java").path
    static let okhttpJars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]
    /// OkHttp's CertificatePinner takes SPKI pins only.
    static let okhttpProfiles = "none,leaf-spki,leaf-spki+backup,intermediate-spki,root-spki"

    /// Runs the binary with a long time limit (a whole catalogue of JVMs per cell takes minutes on a loaded machine).
    static func pinlab(_ args: [String], timeout: Duration = TestTimeouts.catalogue) async throws -> CLI.Result {
        let bin = try #require(
            CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        let r = await ChildProcess.run([bin.path] + args, environment: env, timeout: timeout)
        return CLI.Result(status: r.status, stdout: r.stdoutText, stderr: r.stderrText)
    }

    static func temporary(_ name: String) -> URL {
        TestScratch.root.appendingPathComponent("pinlab-batch-\(UUID().uuidString.prefix(6))-\(name)")
    }

    static func report(_ path: URL) throws -> CheckReport {
        try CheckReport.decode(json: try Data(contentsOf: path), file: path.path)
    }

    /// The batch run and the per-cell run of one client must reach the same verdict in every cell.
    static func expectSameVerdicts(_ batch: CheckReport, _ perCell: CheckReport, profiles: Int) {
        #expect(batch.verdicts.count == perCell.verdicts.count)
        #expect(batch.verdicts.count == (try? Catalogue.bundled().scenarios.count).map { $0 * 6 * 2 })
        #expect(
            batch.verdicts.filter { $0.status != .skipped }.count
                == perCell.verdicts.filter { $0.status != .skipped }.count)
        #expect(batch.verdicts.filter { $0.status != .skipped }.count == batch.verdicts.count / 6 * profiles)
        for (b, p) in zip(batch.verdicts, perCell.verdicts) {
            let cell = "\(b.scenario) \(b.profile) \(b.engine)"
            #expect(b.scenario == p.scenario && b.profile == p.profile && b.engine == p.engine)
            #expect(
                b.status == p.status, "\(cell): batch \(b.status) (\(b.reason)), per cell \(p.status) (\(p.reason))")
            #expect(b.observed == p.observed, "\(cell)")
            #expect(
                b.claim == p.claim,
                "\(cell): batch claims \(String(describing: b.claim)), per cell \(String(describing: p.claim))")
        }
        #expect(
            !batch.verdicts.contains { $0.status == .error },
            "\(batch.verdicts.filter { $0.status == .error }.map(\.reason).prefix(3))")
    }

    @Test func printSchemaPrintsTheBatchSchemas() async throws {
        let input = try await CLI.run(["check", "--print-schema", "batch-in"])
        #expect(input.status == 0 && input.stdout == BatchSchemas.input + "\n")
        let output = try await CLI.run(["check", "--print-schema", "batch-out"])
        #expect(output.status == 0 && output.stdout == BatchSchemas.output + "\n")
        let bad = try await CLI.run(["check", "--print-schema", "batch"])
        #expect(bad.status != 0 && bad.stderr.contains("batch-in or batch-out"), "\(bad.stderr)")
    }

    @Test func badBatchAndShardOptionsAreClearErrors() async throws {
        let placeholders = try await CLI.run(["check", "--batch", "--", "curl", "{url}"])
        #expect(
            placeholders.status != 0 && placeholders.stderr.contains("'{url}' has no value"), "\(placeholders.stderr)")
        let client = try await CLI.run(["check", "--batch", "--client", "correct"])
        #expect(client.status != 0 && client.stderr.contains("--batch runs a command"), "\(client.stderr)")
        let shard = try await CLI.run(["check", "--client", "correct", "--shard", "5/4"])
        #expect(shard.status != 0 && shard.stderr.contains("1 ≤ K ≤ N"), "\(shard.stderr)")
        let missing = try await CLI.run(
            ["check"] + CLI.dirArgs + ["--batch", "--scenarios", "baseline", "--", "no-such-harness-command"])
        #expect(missing.status == 2 && missing.stderr.contains("could not be started"), "\(missing.stderr)")
        #expect(missing.stdout.isEmpty, "no cell is graded for a harness that cannot start: \(missing.stdout)")
        // Seconds that are infinite or beyond a day trapped (exit 132) when made a Duration: now exit 2, named.
        for (args, option) in [
            (["--client", "correct", "--timeout", "inf"], "--timeout"),
            (["--client", "correct", "--timeout", "1e300"], "--timeout"),
            (["--client", "correct", "--timeout", "nan"], "--timeout"),
            (["--batch", "--cell-timeout", "inf", "--", "true"], "--cell-timeout"),
            (["--batch", "--batch-timeout", "1e300", "--", "true"], "--batch-timeout"),
        ] {
            let r = try await CLI.run(
                ["check"] + CLI.dirArgs + ["--scenarios", "baseline", "--engine", "openssl"] + args)
            #expect(
                r.status == 2 && r.stderr.contains("\(option): ") && r.stderr.contains("is not a number of seconds"),
                "\(args): exit \(r.status): \(r.stderr)")
        }
    }

    @Test(
        "the Python harness in one process gets the verdicts of the same client run per cell, whole catalogue",
        .requires("python3"))
    func pythonBatchMatchesPerCell() async throws {
        let batchJSON = Self.temporary("python-batch.json")
        let perCellJSON = Self.temporary("python-cell.json")
        defer { for f in [batchJSON, perCellJSON] { try? FileManager.default.removeItem(at: f) } }
        // The harness checks neither revocation nor Certificate Transparency, and says so: the cells that depend on
        // those checks are then judged by what such a client must do (the scenarios' expect-if rows).
        let checks = ["--client-checks", "revocation=none,ct=none"]
        let batch = try await Self.pinlab(
            ["check"] + CLI.dirArgs + checks + [
                "--batch", "--format", "json", "--output", batchJSON.path,
                "--", "python3", Self.python,
            ])
        #expect(batch.stderr.isEmpty, "no harness problem: \(batch.stderr)")
        let perCell = try await Self.pinlab(
            ["check"] + CLI.dirArgs + checks + [
                "--format", "json", "--output", perCellJSON.path, "--timeout", "30", "--",
                "python3", Self.python, "--cell", "{url}", "{ca}", "{profile}", "[--pins {pins}]",
                "[--cert {client.cert}]", "[--key {client.key}]", "[--pin-domain {pins.domain}]",
                "[--pin-subdomains {pins.subdomains}]",
            ],
            timeout: TestTimeouts.cataloguePerCell)
        #expect(perCell.status == batch.status, "\(perCell.stdout) \(perCell.stderr)")
        let b = try Self.report(batchJSON)
        let p = try Self.report(perCellJSON)
        Self.expectSameVerdicts(b, p, profiles: 6)
        // The documented harness pins the validated chain, for the hosts in the pins' scope, at App Transport
        // Security's TLS floor: every cell of the catalogue passes, ats-floor's included (its only suite,
        // ECDHE-RSA-AES128-SHA, is one Python >= 3.10's default context leaves out; the harness sets ATS's suites).
        // The scenarios of several connections are reported unsupported (one connection per cell), never judged.
        // Python's ssl is OpenSSL: it ends the rollover path at the trusted new root (verifier variance, "stricter").
        let failing = b.verdicts.filter {
            $0.status != .pass && $0.status != .unsupported
                && !($0.status == .stricter
                    && ["root-rollover-new-root-trusted", "root-rollover-new-root-trusted-gen-y"].contains($0.scenario)
                    && $0.profile == .rootSPKI)
        }
        #expect(
            failing.isEmpty, "\(failing.prefix(5).map { "\($0.scenario) \($0.profile) \($0.engine): \($0.reason)" })")
        // GnuTLS cannot send SCTs in the TLS extension (no hook for TLS 1.3 certificate-entry extensions); no engine
        // of this build serves ECH acceptance or ML-DSA keys.
        let unsupported = Set(b.verdicts.filter { $0.status == .unsupported }.map(\.scenario))
        let unservable = [
            "ct-tls-extension-valid", "ech-accepted", "ech-rejected-retry-configs", "dual-certificates-ecdsa-mldsa",
            "post-quantum-rekey", "post-quantum-rekey-pq-root",
        ]
        #expect(
            unsupported == Set(try Catalogue.bundled().scenarios.filter(\.isMultiStep).map(\.id) + unservable),
            "\(unsupported)")
        #expect(b.verdicts.count == p.verdicts.count && !b.verdicts.isEmpty)
        print("python: batch \(b.durationSeconds) s, per cell \(p.durationSeconds) s")
    }

    @Test(
        "the OkHttp harness in one JVM gets the verdicts of the same client run per cell, whole catalogue",
        .enabled(
            if: Tool.runs(needing: "javac")
                && (Tool.inCI || FileManager.default.fileExists(atPath: "/usr/share/java/okhttp.jar"))))
    func okhttpBatchMatchesPerCell() async throws {
        let classes = Self.temporary("okhttp-classes")
        let batchJSON = Self.temporary("okhttp-batch.json")
        let perCellJSON = Self.temporary("okhttp-cell.json")
        defer { for f in [classes, batchJSON, perCellJSON] { try? FileManager.default.removeItem(at: f) } }
        let cp = Self.okhttpJars.joined(separator: ":")
        let javac = await ChildProcess.run(["javac", "-cp", cp, "-d", classes.path, Self.java], timeout: .seconds(300))
        try #require(javac.status == 0, "javac: \(javac.output)")
        let java = ["java", "-cp", classes.path + ":" + cp, "PinlabBatch"]
        let batch = try await Self.pinlab(
            ["check"] + CLI.dirArgs + [
                "--batch", "--profiles", Self.okhttpProfiles, "--format", "json",
                "--output", batchJSON.path, "--",
            ] + java)
        #expect(batch.stderr.isEmpty, "no harness problem: \(batch.stderr)")
        let perCell = try await Self.pinlab(
            ["check"] + CLI.dirArgs + [
                "--profiles", Self.okhttpProfiles, "--format", "json", "--output", perCellJSON.path,
                "--timeout", "60", "--jobs", "4", "--",
            ] + java + [
                "--cell", "{url}", "{ca}", "--ip", "{ip}", "[--pins {pins.okhttp}]", "[--pin-domain {pins.domain}]",
                "[--pin-subdomains {pins.subdomains}]", "[--p12 {client.p12}]", "[--password {client.password}]",
            ],
            timeout: TestTimeouts.cataloguePerCell)
        #expect(perCell.status == batch.status, "\(perCell.stderr)")
        let b = try Self.report(batchJSON)
        let p = try Self.report(perCellJSON)
        Self.expectSameVerdicts(b, p, profiles: 5)
        // The JDK's default algorithm constraints accept an RSA-1024 leaf and a SHA-1-signed leaf under a non-JDK
        // root: both runs must see that, cell for cell (a finding about the client, not about the harness).
        #expect(b.summary.pass > b.verdicts.count / 2)
        // The JDK's PKIX takes the sent lab-intermediate-a as the twin leaf's issuer by name and refuses the unpinned
        // name-collision-root cell, and ends the rollover path at the trusted new root: both are "stricter than
        // required" (verifier variance), never deviations.
        for engine in ["openssl", "gnutls"] {
            for (scenario, profile) in [
                ("name-collision-root", PinProfile.none), ("root-rollover-new-root-trusted", .rootSPKI),
                ("root-rollover-new-root-trusted-gen-y", .rootSPKI),
            ] {
                let v = b.verdicts.first { $0.scenario == scenario && $0.profile == profile && $0.engine == engine }
                #expect(v?.status == .stricter, "\(scenario) × \(profile) × \(engine): \(v?.reason ?? "missing")")
            }
        }
        print("okhttp: batch \(b.durationSeconds) s, per cell \(p.durationSeconds) s; \(b.summaryLine)")
    }

    @Test(
        "OkHttp across steps: one client per cell resumes the JSSE session and still checks the pins it holds (--batch-steps)",
        .enabled(
            if: Tool.runs(needing: "javac")
                && (Tool.inCI || FileManager.default.fileExists(atPath: "/usr/share/java/okhttp.jar"))))
    func okhttpAcrossSteps() async throws {
        let classes = Self.temporary("okhttp-steps-classes")
        let json = Self.temporary("okhttp-steps.json")
        defer { for f in [classes, json] { try? FileManager.default.removeItem(at: f) } }
        let cp = Self.okhttpJars.joined(separator: ":")
        let javac = await ChildProcess.run(["javac", "-cp", cp, "-d", classes.path, Self.java], timeout: .seconds(300))
        try #require(javac.status == 0, "javac: \(javac.output)")
        let scenarios = [
            "resumption-genuine", "resumption-after-unpinned-handshake", "resumption-cross-host",
            "h2-coalescing-pinned-host",
        ]
        let run = try await Self.pinlab(
            ["check"] + CLI.dirArgs + [
                "--batch", "--batch-steps", "--scenarios", scenarios.joined(separator: ","), "--profiles",
                Self.okhttpProfiles,
                "--format", "json", "--output", json.path, "--", "java", "-cp", classes.path + ":" + cp, "PinlabBatch",
            ])
        #expect(run.stderr.isEmpty, "no harness problem: \(run.stderr)")
        let report = try Self.report(json)
        // Predicted from OkHttp 3's documented design: the certificate pinner is part of a connection's Address, so a
        // pinned step never reuses the unpinned step's pooled connection; a new connection's handshake (resumed or
        // not) is checked with CertificatePinner.check against the session's peer certificates. OkHttp coalesces an
        // HTTP/2 connection for another host only when that host's pins accept it (square/okhttp #3207), so the
        // pinned api step of h2-coalescing-pinned-host is refused too — and without pins it does coalesce (below).
        // Every cell passes.
        let judged = report.verdicts.filter { $0.status != .skipped }
        #expect(judged.count == scenarios.count * 5 * 2)
        for v in judged { #expect(v.status == .pass, "\(v.scenario) \(v.profile) \(v.engine): \(v.reason)") }
        // And the JDK did resume: the second connection to the genuine server carried no certificate.
        for v in judged where v.scenario == "resumption-genuine" {
            #expect(v.steps?.last?.evidence?.resumption != nil, "\(v.profile) \(v.engine): step 2 did not resume")
        }
        // OkHttp spoke HTTP/2 to the interceptor (ALPN h2 on JDK 17) in every accepted step of the coalescing scenario,
        // and without pins it sent step 2's request for api.pinning.test on step 1's connection (opened for
        // cdn.pinning.test): the harness holds one Address per host and pin set, as an app with one OkHttpClient
        // does, so OkHttp's coalescing really ran, and the batch runner found the request as a stream on that
        // connection.
        for v in judged where v.scenario == "h2-coalescing-pinned-host" {
            for step in v.steps ?? [] where step.observed == .accepted {
                #expect(
                    step.evidence?.requestLine?.hasPrefix("GET / HTTP/2") == true,
                    "\(v.profile) \(v.engine) step \(step.step): \(step.evidence?.requestLine ?? "no request")")
            }
            if v.profile == .none {
                #expect(
                    v.steps?.last?.evidence?.requestLine?.contains("on connection 1, opened in an earlier step")
                        == true,
                    "\(v.engine): OkHttp did not coalesce step 2: \(v.steps?.last?.reason ?? v.reason)")
            }
        }
        // The bypass scenario's pinned step 2 resumed the interceptor's session and sent nothing.
        for v in judged where v.scenario == "resumption-after-unpinned-handshake" && v.profile != .none {
            #expect(
                v.steps?.last?.evidence?.resumption != nil && v.steps?.last?.evidence?.applicationDataReceived == false,
                "\(v.profile) \(v.engine)")
        }
    }

    @Test func shardsMergeIntoTheWholeRun() async throws {
        let whole = Self.temporary("whole.json")
        let a = Self.temporary("a.json")
        let b = Self.temporary("b.json")
        let merged = Self.temporary("merged.json")
        defer { for f in [whole, a, b, merged] { try? FileManager.default.removeItem(at: f) } }
        let common =
            ["check"] + CLI.dirArgs + [
                "--client", "correct", "--scenarios", "baseline,rekey,chain-stuffing", "--format", "json",
            ]
        #expect(try await CLI.run(common + ["--output", whole.path]).status == 0)
        #expect(try await CLI.run(common + ["--shard", "1/2", "--output", a.path]).status == 0)
        #expect(try await CLI.run(common + ["--shard", "2/2", "--output", b.path]).status == 0)
        let r = try await CLI.run(["report", "merge", a.path, b.path, "--format", "json", "-o", merged.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("36 cells"), "\(r.stdout)")
        let m = try Self.report(merged)
        let w = try Self.report(whole)
        let ra = try Self.report(a)
        let rb = try Self.report(b)
        #expect(
            ra.verdicts.count + rb.verdicts.count == w.verdicts.count && !ra.verdicts.isEmpty && !rb.verdicts.isEmpty)
        #expect(
            m.verdicts.map { "\($0.scenario)/\($0.profile)/\($0.engine)" }
                == w.verdicts.map { "\($0.scenario)/\($0.profile)/\($0.engine)" })
        #expect(m.verdicts.map(\.status) == w.verdicts.map(\.status))
        let text = try await CLI.run(["report", "merge", a.path, b.path])
        #expect(text.status == 0 && text.stdout.contains("chain-stuffing"))
        let overlap = try await CLI.run(["report", "merge", whole.path, whole.path])
        #expect(
            overlap.status == 2 && overlap.stderr.contains("overlap") && overlap.stderr.contains(whole.path),
            "\(overlap.stderr)")
        let mixed = try await CLI.run(["report", "merge", a.path, whole.path])
        #expect(
            mixed.status == 2 && mixed.stderr.contains("a whole run") && mixed.stderr.contains(whole.path),
            "\(mixed.stderr)")
        // A shard whose report never came (its CI job failed first): refused, not "conforms" over half the cells.
        let missing = try await CLI.run(["report", "merge", a.path])
        #expect(missing.status == 2 && missing.stderr.contains("shard 2/2 is missing"), "\(missing.stderr)")
        let alone = try await CLI.run(["report", "merge", "--partial", a.path, "--format", "json"])
        #expect(alone.status == 0 && alone.stdout.contains("\"shard\" : \"1/2\""), "\(alone.stdout.prefix(300))")
        let notJSON = try await CLI.run(["report", "merge", Self.python])
        #expect(notJSON.status == 2 && notJSON.stderr.contains("not JSON"), "\(notJSON.stderr)")
    }

    @Test("progress is drawn on a terminal and absent when piped", .requires("script"))
    func progressOnATerminalOnly() async throws {
        let bin = try #require(CLI.binary)
        let args =
            ["check"] + CLI.dirArgs + ["--client", "correct", "--scenarios", "baseline,rekey", "--format", "json"]
        let piped = try await CLI.run(args)
        #expect(!piped.stderr.contains("cells,"), "quiet when not a terminal: \(piped.stderr)")
        let command = ([bin.path] + args).map { "'\($0)'" }.joined(separator: " ") + " >/dev/null"
        let tty = await ChildProcess.run(["script", "-qec", command, "/dev/null"], timeout: TestTimeouts.command)
        #expect(tty.stdoutText.contains("24/24 cells"), "\(tty.stdoutText)")
    }
}
