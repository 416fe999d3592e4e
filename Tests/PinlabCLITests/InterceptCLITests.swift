import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// `pinlab intercept` as a user runs it: the binary in the background, real clients pointed at it with their own
/// proxy settings (curl `-x`, a JVM `java.net.Proxy`), the verdicts read from its reports. Each expected row is
/// written by reasoning about what the client checks.
@Suite("pinlab intercept (command line)", .serialized)
struct InterceptCLITests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Intercept")
    static let jars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]
    static var javaReady: Bool {
        Tool.path("javac") != nil && Tool.path("java") != nil
            && jars.allSatisfy { FileManager.default.fileExists(atPath: $0) }
    }

    struct Session {
        var status: Int32
        var stdout: String
        var report: [String: Any]
        var dir: URL
        /// Host → status from the JSON report.
        var verdicts: [String: String] {
            Dictionary(
                uniqueKeysWithValues: ((report["hosts"] as? [[String: Any]]) ?? []).map {
                    ($0["host"] as! String, $0["status"] as! String)
                })
        }
    }

    static func tempDir(_ label: String) throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-intercept-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// The roots of a device with the proxy's root installed: lab-root and proxy-root, as one PEM file.
    static func trustFile(in dir: URL) throws -> String {
        let pki = try Lab.pki(directory: CLI.pkiDirectory)
        let url = dir.appendingPathComponent("trust.pem")
        try PEM.encode([try #require(pki["lab-root"]).certificateDER, try #require(pki["proxy-root"]).certificateDER])
            .write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static func spki(_ name: String) throws -> String {
        try #require(try Lab.pki(directory: CLI.pkiDirectory)[name]).pins.spkiBase64
    }

    /// Runs `pinlab intercept ARGS` in the background, runs `clients(port)` once it listens, ends the session with
    /// SIGTERM (as a user's Ctrl-C would) and returns its output and JSON report. (`--until-idle 1.5` ended sessions
    /// between two curl runs on a loaded machine; it stays only as a fallback.)
    /// With `defaultReportFolder` the session runs in its folder without `--output-dir`, and the reports are read
    /// where pinlab puts them by default.
    static func session(
        _ args: [String], label: String, defaultReportFolder: Bool = false, _ clients: (Int, URL) async throws -> Void
    ) async throws -> Session {
        let bin = try #require(CLI.binary, "run `swift build` first")
        let dir = try tempDir(label)
        let ready = dir.appendingPathComponent("ready").path
        let out = dir.appendingPathComponent("stdout").path
        let status = dir.appendingPathComponent("status").path
        let reports = defaultReportFolder ? CLI.pkiDirectory.appendingPathComponent("intercept") : dir
        // Through sh to keep the exit status (the background handle reaps without it).
        let command =
            "cd '\(dir.path)' && "
            + ([
                bin.path, "intercept", "--listen", "127.0.0.1:0", "--ready-file", ready, "--until-idle", "120",
                "--report", "text,json,junit,html",
            ] + (defaultReportFolder ? [] : ["--output-dir", dir.path]) + args + CLI.dirArgs)
            .map { "'\($0)'" }.joined(separator: " ")
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        let proxy = try ChildProcess.spawnBackground(
            ["sh", "-c", "\(command) > '\(out)' 2>&1; echo $? > '\(status)'"], environment: env)
        defer { proxy.terminate() }
        var address = ""
        for _ in 0..<600 where address.isEmpty {  // up to 60 s: the PKI may be issued first
            address = ((try? String(contentsOfFile: ready, encoding: .utf8)) ?? "").trimmingCharacters(
                in: .whitespacesAndNewlines)
            if address.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        let port = try #require(
            Int(address.split(separator: ":").last ?? ""),
            "pinlab intercept did not start: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")")
        try await clients(port, dir)
        // Only the pinlab process (its command line starts with the binary; the sh around it does not).
        _ = await ChildProcess.run(
            ["pkill", "-TERM", "-f", "^\(bin.path) intercept .*\(dir.lastPathComponent)"], timeout: .seconds(10))
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: status) {
            try await Task.sleep(for: .milliseconds(100))
        }
        let code =
            Int32(
                ((try? String(contentsOfFile: status, encoding: .utf8)) ?? "").trimmingCharacters(
                    in: .whitespacesAndNewlines)) ?? -1
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let json = try Data(contentsOf: reports.appendingPathComponent("intercept.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        return Session(status: code, stdout: stdout, report: report, dir: dir)
    }

    static func curl(_ port: Int, _ trust: String, _ host: String, pin: String? = nil) async -> Int32 {
        var args = [
            "curl", "-s", "-o", "/dev/null", "--max-time", "30", "-x", "http://127.0.0.1:\(port)", "--cacert", trust,
        ]
        if let pin { args += ["--pinnedpubkey", "sha256//\(pin)"] }
        return await ChildProcess.run(args + ["https://\(host)/"], timeout: .seconds(40)).status
    }

    /// The reports name what the proxy decrypted. By default they go to `intercept/` in the PKI folder (private,
    /// ignored by git), never into the folder the command runs in — an app's repository, where `git add -A` staged
    /// them when the PKI lived elsewhere; each is readable by its owner alone; and a request's query (an OAuth code,
    /// a token) is not kept, its path is.
    @Test(.requires("curl"))
    func reportsStayPrivateAndKeepNoQuery() async throws {
        let folder = CLI.pkiDirectory.appendingPathComponent("intercept")
        try? FileManager.default.removeItem(at: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = "SECRET\(Int.random(in: 100_000...999_999))"
        let s = try await Self.session(
            ["--pinned", "api.pinning.test"], label: "default-folder", defaultReportFolder: true
        ) { port, dir in
            let trust = try Self.trustFile(in: dir)
            #expect(await Self.curl(port, trust, "api.pinning.test/oauth/callback?code=\(secret)&state=1") == 0)
        }
        #expect(s.verdicts["api.pinning.test"] == "not-pinned", "\(s.stdout)")
        let made = Set(try FileManager.default.contentsOfDirectory(atPath: s.dir.path))
        #expect(
            made == ["ready", "stdout", "status", "trust.pem"], "nothing of pinlab's in the folder it ran in: \(made)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(Set(files).isSuperset(of: ["intercept.json", "intercept.html"]), "\(files)")
        for f in files {
            let path = folder.appendingPathComponent(f).path
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode == 0o600, "\(f) is mode \(String(mode, radix: 8))")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(!text.contains(secret), "\(f) keeps the request's query")
        }
        let json = try String(contentsOf: folder.appendingPathComponent("intercept.json"), encoding: .utf8)
        #expect(json.contains("GET /oauth/callback?… HTTP/1.1"), "the path stays: \(json)")
    }

    /// curl without a pin trusts the installed proxy root and sends everywhere; curl with `--pinnedpubkey` on
    /// leaf-v1 (curl checks the leaf's key only) refuses the minted leaf on api — even when the genuine leaf-v1
    /// is stuffed behind it, because curl looks at the leaf the session uses, not at extra certificates.
    @Test(.requires("curl"))
    func curlThroughTheProxy() async throws {
        let leaf = try Self.spki("leaf-v1")
        let unpinned = try await Self.session(
            ["--pinned", "api.pinning.test", "--policy", "stuff"], label: "curl-none"
        ) { port, dir in
            let trust = try Self.trustFile(in: dir)
            #expect(await Self.curl(port, trust, "api.pinning.test") == 0)
            #expect(await Self.curl(port, trust, "cdn.pinning.test") == 0)
        }
        #expect(
            unpinned.verdicts["api.pinning.test"] == "not-pinned" && unpinned.verdicts["cdn.pinning.test"] == "allowed")
        #expect(unpinned.status == 1, "exit 1 when a host deviates: \(unpinned.stdout)")
        #expect(
            unpinned.stdout.contains("api.pinning.test")
                && unpinned.stdout.contains("sent its request to an intercepting proxy: NOT PINNED"))

        let pinned = try await Self.session(
            ["--pinned", "api.pinning.test", "--policy", "stuff"], label: "curl-pinned"
        ) { port, dir in
            let trust = try Self.trustFile(in: dir)
            // CURLE_SSL_PINNEDPUBKEYNOTMATCH
            #expect(await Self.curl(port, trust, "api.pinning.test", pin: leaf) == 90)
            #expect(await Self.curl(port, trust, "cdn.pinning.test") == 0)
        }
        #expect(pinned.verdicts == ["api.pinning.test": "refused", "cdn.pinning.test": "allowed"], "\(pinned.stdout)")
        #expect(pinned.status == 0, "\(pinned.stdout)")
        #expect(
            pinned.stdout.contains("refused interception: good")
                && pinned.stdout.contains("not pinned, allowed through (as declared)"))
        try await Self.checkReportFiles(pinned)
    }

    /// The JSON report validates against the schema `--print-schema json` prints; JUnit has one failure per
    /// deviating host; HTML names every host.
    static func checkReportFiles(_ s: Session) async throws {
        let schema = s.dir.appendingPathComponent("schema.json")
        let printed = try await CLI.run(["intercept", "--print-schema", "json"])
        try printed.stdout.write(to: schema, atomically: true, encoding: .utf8)
        if await ChildProcess.run(["python3", "-c", "import jsonschema"], timeout: .seconds(20)).status == 0
            || Tool.inCI
        {
            let v = await ChildProcess.run(
                [
                    "python3", "-c",
                    "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
                    s.dir.appendingPathComponent("intercept.json").path, schema.path,
                ], timeout: .seconds(30))
            #expect(v.status == 0, "\(v.output)")
        }
        let junit = try String(contentsOf: s.dir.appendingPathComponent("intercept.xml"), encoding: .utf8)
        let deviating = s.verdicts.values.filter { $0 == "not-pinned" || $0 == "unexpected-refusal" }.count
        #expect(junit.components(separatedBy: "<failure ").count - 1 == deviating)
        let html = try String(contentsOf: s.dir.appendingPathComponent("intercept.html"), encoding: .utf8)
        for host in s.verdicts.keys { #expect(html.contains(host)) }
    }

    /// A JVM app through a `java.net.Proxy`, pinning lab-intermediate-a on api.pinning.test:
    /// - no pins (HttpsURLConnection): sends everywhere → api NOT PINNED;
    /// - OkHttp's CertificatePinner checks the cleaned chain (minted leaf → proxy-root): no int-a → refuses on
    ///   api under both mint and stuff;
    /// - a TrustManager that looks for the pin in the chain the server sent: refuses the plain minted leaf
    ///   (looks pinned) but finds the appended genuine int-a under stuff → caught: NOT PINNED.
    @Test(.enabled(if: Self.javaReady, "javac/java or /usr/share/java/okhttp.jar, okio.jar missing"))
    func jvmClientsThroughTheProxy() async throws {
        let dir = try Self.tempDir("javac")
        let cp = Self.jars.joined(separator: ":")
        let javac = await ChildProcess.run(
            [
                "javac", "-nowarn", "-cp", cp, "-d", dir.path,
                Self.fixtures.appendingPathComponent("InterceptClient.java").path,
            ],
            timeout: .seconds(180))
        try #require(javac.status == 0, "javac: \(javac.output)")
        let pin = try Self.spki("lab-intermediate-a")
        let hosts = ["api.pinning.test", "cdn.pinning.test"]
        func java(_ mode: String, _ port: Int, _ trust: String) async -> String {
            let r = await ChildProcess.run(
                [
                    "java", "-cp", dir.path + ":" + cp, "InterceptClient", mode, String(port), trust, pin,
                    "api.pinning.test",
                ] + hosts,
                timeout: TestTimeouts.command)
            return r.output
        }
        let expected: [(String, String, [String: String])] = [
            ("none", "mint", ["api.pinning.test": "not-pinned", "cdn.pinning.test": "allowed"]),
            ("okhttp", "mint", ["api.pinning.test": "refused", "cdn.pinning.test": "allowed"]),
            ("okhttp", "stuff", ["api.pinning.test": "refused", "cdn.pinning.test": "allowed"]),
            ("presented", "mint", ["api.pinning.test": "refused", "cdn.pinning.test": "allowed"]),
            ("presented", "stuff", ["api.pinning.test": "not-pinned", "cdn.pinning.test": "allowed"]),
        ]
        for (mode, policy, rows) in expected {
            var output = ""
            let s = try await Self.session(["--pinned", "api.pinning.test", "--policy", policy], label: "jvm-\(mode)") {
                port, d in
                output = await java(mode, port, try Self.trustFile(in: d))
            }
            #expect(s.verdicts == rows, "\(mode) under \(policy): \(output)\n\(s.stdout)")
        }
    }

    /// Passthrough is no relay (issue 20): curl asking the proxy for a loopback service (a fixture server standing
    /// for the control API), by address or by `localhost`, gets 403 and the service sees nothing; the same service
    /// named by an `--upstream` route is reached (curl verifies leaf-v1 through the tunnel).
    @Test(.requires("curl"))
    func passthroughIsNoRelay() async throws {
        let pki = try Lab.pki(directory: CLI.pkiDirectory)
        let server = try await FixtureServer.start(
            engine: Engines.openssl, configuration: .makeServerConfiguration(try #require(pki["leaf-v1"])),
            label: "loopback-service")
        func curlConnect(_ port: Int, _ trust: String, _ url: String) async -> (status: Int32, connect: String) {
            let r = await ChildProcess.run(
                [
                    "curl", "-s", "-o", "/dev/null", "-w", "%{http_connect}", "--max-time", "20", "-x",
                    "http://127.0.0.1:\(port)",
                    "--cacert", trust, url,
                ], timeout: .seconds(30))
            return (r.status, r.stdoutText)
        }
        let refused = try await Self.session(["--policy", "passthrough"], label: "no-relay") { port, dir in
            let trust = try Self.trustFile(in: dir)
            for url in ["https://127.0.0.1:\(server.port)/", "https://localhost:\(server.port)/"] {
                let r = await curlConnect(port, trust, url)
                #expect(r.connect == "403" && r.status != 0, "\(url): \(r)")
            }
        }
        let seenRefused = await server.settle() ?? []
        #expect(seenRefused.isEmpty, "the loopback service was reached through the proxy: \(seenRefused)")
        #expect(
            refused.stdout.contains(
                "2 connection(s) asked for a destination on this machine or a local network and were refused"),
            "\(refused.stdout)")
        #expect((refused.report["summary"] as? [String: Any])?["destinationsRefused"] as? Int == 2)
        try await Self.checkReportFiles(refused)

        let routed = try await Self.session(
            ["--policy", "passthrough", "--upstream", "api.pinning.test=127.0.0.1:\(server.port)"], label: "routed"
        ) { port, dir in
            let r = await curlConnect(port, try Self.trustFile(in: dir), "https://api.pinning.test/")
            #expect(r.connect == "200" && r.status == 0, "\(r)")
        }
        let seenRouted = await server.settle() ?? []
        await server.stop()
        #expect(routed.verdicts == ["api.pinning.test": "passed-through"], "\(routed.stdout)")
        #expect(seenRouted.count == 1 && seenRouted.first?.applicationDataReceived == true)
    }

    @Test func badOptionsNameTheOptionAndTheFix() async throws {
        func failing(_ args: [String]) async throws -> String {
            let r = try await CLI.run(["intercept"] + args + CLI.dirArgs)
            #expect(r.status != 0 && r.status != 1, "\(args): exit \(r.status)")
            return r.stderr
        }
        #expect(try await failing(["--pinned", "a.*.test"]).contains("--pinned: 'a.*.test' has a wildcard"))
        #expect(try await failing(["--policy", "mitm"]).contains("--policy: 'mitm' is not a policy"))
        #expect(try await failing(["--listen", "8080"]).contains("--listen: '8080' is not ADDRESS:PORT"))
        #expect(try await failing(["--listen", "0.0.0.0:0"]).contains("--allow-non-loopback"))
        // Off loopback an allow-list is required, and the refusal comes before anything is bound.
        let open = try await failing(["--listen", "0.0.0.0:0", "--allow-non-loopback"])
        #expect(
            open.contains("--allow-peer: refusing to listen on 0.0.0.0")
                && open.contains("add --allow-peer 192.168.1.23/32"), "\(open)")
        #expect(
            try await failing(["--allow-peer", "300.1.2.3/8"]).contains(
                "--allow-peer: '300.1.2.3/8' is not an IPv4 or IPv6 address block"))
        #expect(try await failing(["--upstream", "nowhere"]).contains("--upstream: 'nowhere' is not HOST:PORT"))
        #expect(try await failing(["--report", "pdf"]).contains("--report: 'pdf' is not a format"))
        #expect(try await failing(["--genuine-chain", "/nonexistent.pem"]).contains("--genuine-chain: cannot read"))
        #expect(try await failing(["--duration", "-1"]).contains("--duration"))
    }
}
