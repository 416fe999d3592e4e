import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab intercept`'s evidence for a tester (issue 24): how each host refused, `--learn`, the `foreign-host`
/// policy and the MASTG-TEST-0244 evidence file — with real curl and Python clients through the real binary.
@Suite("pinlab intercept: evidence, --learn, foreign-host", .serialized)
struct InterceptEvidenceCLITests {
    typealias S = InterceptCLITests

    /// `--learn`: curl pinning leaf-v1's key refuses the minted leaf on api.pinning.test (exit 90); the proxy then
    /// passes api through to its upstream route (a fixture server serving the genuine leaf-v1), so the same curl
    /// succeeds the second time — while api's verdict stays "refused" (it was earned on the intercepted
    /// connection) and the evidence file says PASS, how it refused, and the command that reproduces it.
    /// Without `--learn` the second curl is intercepted again and refuses again (exit 90).
    @Test(.requires("curl"))
    func learnPassesARefusingHostThroughAndTheEvidenceSaysHow() async throws {
        let pki = try Lab.pki(directory: CLI.pkiDirectory)
        let server = try await FixtureServer.start(
            engine: Engines.openssl, configuration: .makeServerConfiguration(try #require(pki["leaf-v1"])),
            label: "learn-upstream")
        defer { Task { await server.stop() } }
        let leaf = try S.spki("leaf-v1")
        var codes: [Int32] = []
        let evidence = try S.tempDir("evidence").appendingPathComponent("evidence.md")
        let learned = try await S.session(
            [
                "--pinned", "api.pinning.test", "--learn", "--evidence", evidence.path,
                "--upstream", "api.pinning.test=127.0.0.1:\(server.port)",
            ], label: "learn"
        ) { port, dir in
            let trust = try S.trustFile(in: dir)
            codes.append(await S.curl(port, trust, "api.pinning.test", pin: leaf))
            // The first connection must be recorded before the second arrives. The proxy records a connection as it
            // ends it (ProxyConnection.finish closes the socket, then records, in one step on its worker): wait until
            // the proxy holds no connection from a client any more (none established, none the client closed alone).
            let ended = await eventually(TestTimeouts.exchange) {
                !TCPConnections.involving(port: port).contains {
                    $0.localPort == port && ($0.isEstablished || $0.state == 8)
                }
            }
            #expect(ended, "the proxy still holds the first connection: \(TCPConnections.involving(port: port))")
            codes.append(await S.curl(port, trust, "api.pinning.test", pin: leaf))
        }
        #expect(
            codes == [90, 0], "refused the minted leaf, then reached the genuine server: \(codes)\n\(learned.stdout)")
        #expect(learned.verdicts == ["api.pinning.test": "refused"], "\(learned.stdout)")
        let host = try #require((learned.report["hosts"] as? [[String: Any]])?.first)
        #expect(host["passedThroughAfterRefusal"] as? Int == 1)
        let refusals = host["refusals"] as? [String] ?? []
        // curl ends a pin mismatch with close_notify after the handshake; the report names it so (issue 37's wording).
        #expect(
            refusals.count == 1
                && refusals.allSatisfy {
                    $0.hasPrefix("sent the alert") || $0.contains("sent nothing") || $0.contains("without an alert")
                        || $0.hasPrefix("completed the handshake, then closed cleanly (close_notify)")
                }, "\(refusals)")
        #expect(learned.stdout.contains("1 passed through after (--learn)"), "\(learned.stdout)")
        let seen = await server.settle() ?? []
        #expect(
            seen.count == 1 && seen.first?.applicationDataReceived == true,
            "the upstream saw \(seen.count) connection(s)")
        try await S.checkReportFiles(learned)

        let text = try String(contentsOf: evidence, encoding: .utf8)
        #expect(text.contains("# MASTG-TEST-0244: Missing Certificate Pinning in Network Traffic"))
        #expect(text.contains("MASWE-0047") && text.contains("| Result | **PASS** |"), "\(text)")
        #expect(
            text.contains("| `api.pinning.test` | yes | mint | 2 | ")
                && text.contains("then 1 connection(s) passed through (--learn)"), "\(text)")
        #expect(
            text.contains("pinlab intercept ") && text.contains("--learn") && text.contains("--evidence"),
            "the reproduce line: \(text)")

        // Without --learn every connection is intercepted.
        codes = []
        let plain = try await S.session(["--pinned", "api.pinning.test"], label: "no-learn") { port, dir in
            let trust = try S.trustFile(in: dir)
            codes.append(await S.curl(port, trust, "api.pinning.test", pin: leaf))
            codes.append(await S.curl(port, trust, "api.pinning.test", pin: leaf))
        }
        #expect(codes == [90, 90] && plain.verdicts == ["api.pinning.test": "refused"], "\(codes) \(plain.stdout)")
    }

    /// The evidence of a client that pins nothing: api was intercepted, so MASTG-TEST-0244 fails and the
    /// observation lists api with its request line.
    @Test(.requires("curl"))
    func evidenceOfAnUnpinnedClientFails() async throws {
        let evidence = try S.tempDir("evidence-fail").appendingPathComponent("e.md")
        let s = try await S.session(
            ["--pinned", "api.pinning.test", "--evidence", evidence.path], label: "evidence-fail"
        ) { port, dir in
            let trust = try S.trustFile(in: dir)
            #expect(await S.curl(port, trust, "api.pinning.test") == 0)
        }
        #expect(s.status == 1)
        let text = try String(contentsOf: evidence, encoding: .utf8)
        #expect(
            text.contains("| Result | **FAIL** |")
                && text.contains(
                    "- `api.pinning.test` — relevant (declared pinned by `api.pinning.test`) — 1 request(s), e.g. `GET / HTTP/1.1`"
                ), "\(text)")
        #expect(text.contains("The test case fails: the relevant domain(s) `api.pinning.test` were intercepted"))
    }

    /// `foreign-host`: a leaf from the genuine lab-intermediate-a for foreign-host.pinning.test, sent for
    /// api.pinning.test. Every CA pin of the lab matches it; only the host-name check refuses it:
    /// - curl trusting lab-root checks the name → exit 60 (CURLE_PEER_FAILED_VERIFICATION), host refused;
    /// - Python `ssl` trusting lab-root with `check_hostname = False` (a client that pins a CA and skips the name)
    ///   sends its request → NOT PINNED.
    @Test(.requires("curl"), .requires("python3"))
    func foreignHostCatchesClientsThatSkipTheHostName() async throws {
        let pki = try Lab.pki(directory: CLI.pkiDirectory)
        let checks = try await S.session(
            ["--pinned", "api.pinning.test", "--policy", "foreign-host"], label: "foreign-curl"
        ) { port, dir in
            let root = dir.appendingPathComponent("lab-root.pem")
            try PEM.encode([try #require(pki["lab-root"]).certificateDER]).write(
                to: root, atomically: true, encoding: .utf8)
            #expect(await S.curl(port, root.path, "api.pinning.test") == 60)
        }
        #expect(checks.verdicts == ["api.pinning.test": "refused"], "\(checks.stdout)")

        let script = """
            import socket, ssl, sys
            port, root = int(sys.argv[1]), sys.argv[2]
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(b"CONNECT api.pinning.test:443 HTTP/1.1\\r\\nHost: api.pinning.test:443\\r\\n\\r\\n")
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += s.recv(1)
            ctx = ssl.create_default_context(cafile=root)
            ctx.check_hostname = False  # the mistake under test: the chain is verified, the name is not
            t = ctx.wrap_socket(s, server_hostname="api.pinning.test")
            t.sendall(b"GET / HTTP/1.1\\r\\nHost: api.pinning.test\\r\\n\\r\\n")
            print(t.getpeercert()["subjectAltName"], t.recv(100)[:12])
            """
        var output = ""
        let skips = try await S.session(
            ["--pinned", "api.pinning.test", "--policy", "foreign-host"], label: "foreign-python"
        ) { port, dir in
            let root = dir.appendingPathComponent("lab-root.pem")
            try PEM.encode([try #require(pki["lab-root"]).certificateDER]).write(
                to: root, atomically: true, encoding: .utf8)
            let r = await ChildProcess.run(["python3", "-c", script, String(port), root.path], timeout: .seconds(40))
            output = r.output
            #expect(r.status == 0, "\(r.output)")
        }
        #expect(output.contains("foreign-host.pinning.test"), "the leaf names another host: \(output)")
        #expect(skips.verdicts == ["api.pinning.test": "not-pinned"], "\(skips.stdout)")
    }
}

/// `pinlab intercept --write-baseline` / `--baseline`: a known unpinned host stays green; a host whose verdict
/// changes (api pinned, then not) fails with the change named; a bad baseline file is a usage error naming it.
@Suite("pinlab intercept --baseline", .serialized)
struct InterceptBaselineCLITests {
    typealias S = InterceptCLITests

    @Test(.requires("curl"))
    func aBaselineFailsOnlyWhenAVerdictChanges() async throws {
        let leaf = try S.spki("leaf-v1")
        let dir = try S.tempDir("baseline")
        let file = dir.appendingPathComponent("intercept-baseline.json")
        // The app pins api and sends to cdn (declared pinned too, so cdn is NOT PINNED: a known deviation).
        let written = try await S.session(
            ["--pinned", "api.pinning.test,cdn.pinning.test", "--write-baseline", file.path], label: "bl-write"
        ) { port, d in
            let trust = try S.trustFile(in: d)
            #expect(await S.curl(port, trust, "api.pinning.test", pin: leaf) == 90)
            #expect(await S.curl(port, trust, "cdn.pinning.test") == 0)
        }
        #expect(written.status == 1, "cdn deviates: \(written.stdout)")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(
            text.contains("\"api.pinning.test\" : \"refused\"")
                && text.contains("\"cdn.pinning.test\" : \"not-pinned\""), "\(text)")

        // Same behaviour against the baseline: exit 0, no host changed.
        let same = try await S.session(
            ["--pinned", "api.pinning.test,cdn.pinning.test", "--baseline", file.path], label: "bl-same"
        ) { port, d in
            let trust = try S.trustFile(in: d)
            #expect(await S.curl(port, trust, "api.pinning.test", pin: leaf) == 90)
            #expect(await S.curl(port, trust, "cdn.pinning.test") == 0)
        }
        #expect(same.status == 0 && same.stdout.contains("no host changed"), "\(same.stdout)")

        // The app lost its pin on api: exit 1, the change named.
        let changed = try await S.session(
            ["--pinned", "api.pinning.test,cdn.pinning.test", "--baseline", file.path], label: "bl-changed"
        ) { port, d in
            let trust = try S.trustFile(in: d)
            #expect(await S.curl(port, trust, "api.pinning.test") == 0)
        }
        #expect(changed.status == 1, "\(changed.stdout)")
        #expect(changed.stdout.contains("api.pinning.test: refused → not-pinned"), "\(changed.stdout)")
        #expect(changed.stdout.contains("not reached in this run (not counted): cdn.pinning.test"), "\(changed.stdout)")
    }

    @Test func aBadBaselineIsAUsageErrorNamingTheFile() async throws {
        let dir = try S.tempDir("baseline-bad")
        let file = dir.appendingPathComponent("b.json")
        try #"{"format":"pinlab-baseline","formatVersion":1,"client":"x","cells":{}}"#.write(
            to: file, atomically: true, encoding: .utf8)
        let r = try await CLI.run(["intercept", "--baseline", file.path, "--duration", "1"] + CLI.dirArgs)
        #expect(r.status == 64 || r.status == 2, "\(r.status)")
        #expect(
            r.stderr.contains("--baseline: baseline \(file.path): the field 'format' is 'pinlab-baseline'")
                && r.stderr.contains("`pinlab check` baseline"), "\(r.stderr)")
        try #"{"format":"pinlab-intercept-baseline","formatVersion":1,"pinned":[],"hosts":{"a.test":"great"}}"#.write(
            to: file, atomically: true, encoding: .utf8)
        let r2 = try await CLI.run(["intercept", "--baseline", file.path, "--duration", "1"] + CLI.dirArgs)
        #expect(r2.stderr.contains("the host 'a.test' has a verdict that is not one of refused"), "\(r2.stderr)")
    }
}
