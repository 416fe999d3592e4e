import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// A web page in a real browser (headless Chromium) attacks the control API the way the issue measured it: a
/// cross-origin `no-cors` POST that would start a server, a DNS-rebinding read of a private key (the name
/// evil.example mapped to 127.0.0.1, as a rebinding attacker's DNS would), and 200 KB URLs that used to pin the CPU.
@Suite("Control API against a web page in Chromium", .serialized)
struct ControlBrowserTests {
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    static let inCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Serves `directory` over HTTP on 127.0.0.1 and a free port (the attacker's page), until terminated.
    static let pageServer = """
        import http.server, os, sys
        os.chdir(sys.argv[1])
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        with open(sys.argv[2] + ".tmp", "w") as f: f.write(str(server.server_address[1]))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        server.serve_forever()
        """

    static func page(controlPort: Int) -> String {
        """
        <!doctype html><html><body><pre id="out">running</pre><script>
        const api = "http://127.0.0.1:\(controlPort)";
        const results = {};
        async function attempt(name, f) {
          try { results[name] = await f(); } catch (e) { results[name] = "error: " + e; }
        }
        (async () => {
          const start = JSON.stringify({scenario: "baseline", engine: "openssl"});
          await attempt("noCorsPost", () => fetch(api + "/servers", {mode: "no-cors", method: "POST", body: start}).then(r => r.type));
          await attempt("noCorsPostForm", () => fetch(api + "/servers", {mode: "no-cors", method: "POST",
            headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: start}).then(r => r.type));
          await attempt("rebound", () => fetch("http://evil.example:\(controlPort)/identities/leaf-v1?format=key", {mode: "no-cors"}).then(r => r.type));
          const long = "/" + "a".repeat(200 * 1024);
          await attempt("longURLs", () => Promise.all([0, 1, 2].map(i =>
            fetch(api + long + i, {mode: "no-cors"}).then(r => r.type, e => "error: " + e))));
          document.getElementById("out").textContent = "done " + JSON.stringify(results);
        })();
        </script></body></html>
        """
    }

    @Test(.enabled(if: Self.chromium != nil || Self.inCI, "Chromium is not installed (apt-get install -y chromium)"))
    func aWebPageStartsNothingReadsNoKeyAndDoesNotSlowHealth() async throws {
        let chromium = try #require(Self.chromium, "CI installs Chromium; none was found")
        let dir = TestScratch.root.appendingPathComponent("pinlab-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try await ControlTestLab.withControl { control, _ in
            try Self.page(controlPort: control.port).write(
                to: dir.appendingPathComponent("attack.html"), atomically: true, encoding: .utf8)
            let portFile = dir.appendingPathComponent("port")
            let pages = try ChildProcess.spawnBackground(["python3", "-c", Self.pageServer, dir.path, portFile.path])
            defer { pages.terminate() }
            var pagePort: Int?
            await eventually(TestTimeouts.startup) {
                pagePort = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0) }
                return pagePort != nil
            }
            let port = try #require(pagePort, "the page server did not start")
            let browser = [
                "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(dir.path)/profile",
                "--host-resolver-rules=MAP evil.example 127.0.0.1", "--virtual-time-budget=20000", "--dump-dom",
            ]

            // /health from another client while the browser attacks: every 10 ms, for the whole attack.
            let bench = ControlHardeningTests.bench
            async let health = ChildProcess.run(
                ["python3", bench, "health-under-flood", String(control.port), "--clients", "0", "--seconds", "6"],
                timeout: .seconds(60))
            // The browser starts once the probes have begun (the control API has seen the client's connections).
            let probing = await eventually(TestTimeouts.startup) {
                !TCPConnections.clientPorts(ofServerOn: control.port).isEmpty
            }
            #expect(probing, "GET /health never reached the control API")
            // The attacker's page, from another loopback origin (and once more from the rebinding name itself).
            let attack = await ChildProcess.run(
                [chromium] + browser + ["http://127.0.0.1:\(port)/attack.html"], timeout: TestTimeouts.browser)
            let rebound = await ChildProcess.run(
                [chromium] + browser + ["http://evil.example:\(port)/attack.html"], timeout: TestTimeouts.browser)
            // A top-level navigation after rebinding: same origin, no Origin header, Host: evil.example:PORT.
            let navigation = await ChildProcess.run(
                [chromium] + browser + ["http://evil.example:\(control.port)/identities/leaf-v1?format=key"],
                timeout: TestTimeouts.browser)
            let measured = await health

            for run in [attack, rebound] {
                let out =
                    run.stdoutText.components(separatedBy: "<pre id=\"out\">").dropFirst().first?
                    .components(separatedBy: "</pre>").first ?? ""
                #expect(out.hasPrefix("done {"), "the page's script did not finish: \(run.output.suffix(2000))")
                print("browser page: \(out.prefix(600))")
            }
            #expect(
                !navigation.stdoutText.contains("PRIVATE KEY"),
                "a rebound page read leaf-v1's key: \(navigation.stdoutText.prefix(500))")
            #expect(navigation.stdoutText.contains("DNS rebinding"), "\(navigation.output.suffix(1000))")

            // Afterwards, through the API itself (with the token): nothing was started.
            let servers = try await Curl.get(control.url + "servers").json()
            #expect((servers["servers"] as? [Any])?.isEmpty == true, "a web page started servers: \(servers)")
            let h = try #require(
                try JSONSerialization.jsonObject(with: Data(measured.stdout)) as? [String: Any], "\(measured.output)")
            let summary = try #require(h["health"] as? [String: Any])
            #expect(h["statuses"] as? [Int] == [200], "\(h)")
            print("GET /health during the browser attack: \(summary)")
            // The bound is 50 ms, met on a quiet machine (BENCHMARKS.md: medians 5–32 ms). Here Chromium and
            // every other suite compete for 2 cores (a median of 553 ms was seen with builds running beside the
            // suite), so the test asserts what a wedged server cannot do: every probe answered 200 within seconds.
            // FlyingFox took seconds per request and stopped answering at all under three 200 KB URLs.
            #expect((summary["median"] as? Double ?? 1e9) < 1000, "\(summary)")
            #expect((summary["max"] as? Double ?? 1e9) < 5000, "\(summary)")
        }
    }
}
