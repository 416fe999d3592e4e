import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

#if canImport(Glibc)
    import Glibc
#endif

/// The control API from the attacker's side: what a web page in the developer's browser (DNS rebinding, a
/// cross-origin `no-cors` POST, a huge URL) or another local process can send is refused, quickly, and the API keeps
/// answering meanwhile.
@Suite("Control API hardening", .serialized)
struct ControlHardeningTests {
    static let bench = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Benchmarks/control/control_bench.py").path

    /// Every route of the route table, with placeholders for its parameters.
    static func concretePaths(_ control: ControlServer) -> [(method: String, path: String)] {
        control.routes.map { op in
            let parts = op.split(separator: " ", maxSplits: 1).map(String.init)
            let path = parts[1].split(separator: "/").map { $0.hasPrefix("{") ? "x" : String($0) }.joined(
                separator: "/")
            return (parts[0], path)
        }
    }

    /// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends `Host: evil.example:PORT`.
    /// Every route refuses it, even with the right token; the loopback names with the port are served.
    @Test(.requires("curl"))
    func aHostOfAnotherNameIsRefusedOnEveryRoute() async throws {
        try await ControlTestLab.withControl { control, _ in
            for (method, path) in Self.concretePaths(control) {
                for host in [
                    "evil.example", "evil.example:\(control.port)", "127.0.0.1.evil.example:\(control.port)",
                    "127.0.0.1:\(control.port + 1)",
                ] {
                    let r = try await Curl.request(
                        method, control.url + path, json: method == "POST" ? "{}" : nil,
                        headers: ["Host: \(host)"])
                    #expect(r.status == 403, "\(method) /\(path) with Host \(host): \(r.text)")
                    let body = try r.json()
                    #expect(
                        body["field"] as? String == "Host"
                            && (body["error"] as? String)?.contains("DNS rebinding") == true,
                        "\(body)")
                }
            }
            for host in [
                "127.0.0.1:\(control.port)", "localhost:\(control.port)", "LocalHost:\(control.port)",
                "[::1]:\(control.port)",
            ] {
                let r = try await Curl.request("GET", control.url + "scenarios", headers: ["Host: \(host)"])
                #expect(r.status == 200, "Host \(host): \(r.text)")
            }
            #expect(
                (try await Curl.get(control.url + "servers").json()["servers"] as? [Any])?.isEmpty == true,
                "no server was started")
        }
    }

    /// A request carrying a web page's `Origin` is refused (a `no-cors` POST included), unless that origin is
    /// allowed; an allowed origin gets CORS headers and its preflight answered.
    @Test(.requires("curl"))
    func aWebPagesOriginIsRefusedUnlessAllowed() async throws {
        try await ControlTestLab.withControl(.init(allowedOrigins: ["http://localhost:3000/"])) { control, _ in
            for origin in [
                "http://evil.example", "null", "http://127.0.0.1:\(control.port + 1)", "https://localhost:3000",
            ] {
                let post = try await Curl.request(
                    "POST", control.url + "servers", json: #"{"scenario": "baseline", "engine": "openssl"}"#,
                    headers: ["Origin: \(origin)"])
                #expect(post.status == 403, "Origin \(origin): \(post.text)")
                #expect(try post.json()["field"] as? String == "Origin")
                let get = try await Curl.request(
                    "GET", control.url + "identities/leaf-v1?format=key", headers: ["Origin: \(origin)"])
                #expect(get.status == 403, "Origin \(origin): \(get.text)")
            }
            #expect((try await Curl.get(control.url + "servers").json()["servers"] as? [Any])?.isEmpty == true)
            let allowed = await ChildProcess.run(
                [
                    "curl", "-s", "-D", "-", "-o", "/dev/null", "-H", "Origin: http://localhost:3000",
                    "-H", "Authorization: Bearer \(try #require(control.token))", control.url + "scenarios",
                ], timeout: .seconds(30))
            #expect(allowed.stdoutText.hasPrefix("HTTP/1.1 200"), "\(allowed.stdoutText)")
            #expect(
                allowed.stdoutText.contains("Access-Control-Allow-Origin: http://localhost:3000"),
                "\(allowed.stdoutText)")
            let preflight = await ChildProcess.run(
                [
                    "curl", "-s", "-D", "-", "-o", "/dev/null", "-X", "OPTIONS", "-H", "Origin: http://localhost:3000",
                    "-H", "Access-Control-Request-Method: POST", control.url + "servers",
                ], timeout: .seconds(30))
            #expect(preflight.stdoutText.hasPrefix("HTTP/1.1 204"), "\(preflight.stdoutText)")
            #expect(preflight.stdoutText.contains("Access-Control-Allow-Headers: Authorization, Content-Type"))
        }
        let pki = try await ControlTestLab.pki()
        await #expect(throws: ControlServerError.self) {
            let c = try await ControlServer.start(
                pki: pki, catalogue: try Catalogue.bundled(),
                options: .init(allowedOrigins: ["http://localhost:3000/app"]))
            await c.stop()
        }
    }

    /// The bodies a browser sends without a preflight (`text/plain`, forms) are refused with 415 and start nothing.
    @Test(.requires("curl"))
    func aBodyThatIsNotJSONGets415() async throws {
        try await ControlTestLab.withControl { control, _ in
            let token = try #require(control.token)
            for type in [
                "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                "multipart/form-data; boundary=x",
                "application/jsonp", "application/json-seq",
            ] {
                let r = await ChildProcess.run(
                    [
                        "curl", "-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Authorization: Bearer \(token)",
                        "-H", "Content-Type: \(type)", "--data-binary",
                        #"{"scenario": "baseline", "engine": "openssl"}"#,
                        control.url + "servers",
                    ], timeout: .seconds(30))
                #expect(r.stdoutText.hasSuffix("\n415"), "\(type): \(r.stdoutText)")
                #expect(r.stdoutText.contains("\"field\" : \"Content-Type\""), "\(r.stdoutText)")
            }
            let none = await ChildProcess.run(
                [
                    "curl", "-s", "-w", "\n%{http_code}", "-X", "POST", "-H", "Authorization: Bearer \(token)",
                    control.url + "servers",
                ],
                timeout: .seconds(30))
            #expect(none.stdoutText.hasSuffix("\n415"), "a POST without a media type: \(none.stdoutText)")
            #expect(
                (try await Curl.get(control.url + "servers").json()["servers"] as? [Any])?.isEmpty == true,
                "nothing started")
            let json = try await Curl.request(
                "POST", control.url + "servers", json: #"{"scenario": "baseline", "engine": "openssl"}"#,
                headers: ["Content-Type: application/json; charset=utf-8"])
            #expect(json.status == 201, "\(json.text)")
        }
    }

    /// The routes answered without the token: `GET /health` and the live view's page, script and style, which carry
    /// no lab data (the live view's data, `GET /live/events`, needs the token). A new open route must be added here.
    static let openPaths: Set<String> = ["health", "live", "live/app.js", "live/app.css"]

    /// No token or a wrong one: 401 with `WWW-Authenticate: Bearer`, on every route but the open ones.
    @Test(.requires("curl"))
    func theBearerTokenIsRequired() async throws {
        try await ControlTestLab.withControl { control, _ in
            let token = try #require(control.token)
            #expect(
                token.count == 43 && token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" },
                "\(token)")
            for (method, path) in Self.concretePaths(control) where !(method == "GET" && Self.openPaths.contains(path))
            {
                for header in [
                    nil, "Authorization: Bearer wrong", "Authorization: Bearer \(token.dropLast())",
                    "Authorization: Basic \(token)", "Authorization: Bearer \(token)x",
                ] as [String?] {
                    let r = await ChildProcess.run(
                        ["curl", "-s", "-D", "-", "-X", method, "-H", "Content-Type: application/json"]
                            + (method == "POST" ? ["--data", "{}"] : []) + (header.map { ["-H", $0] } ?? []) + [
                                control.url + path
                            ],
                        timeout: .seconds(30))
                    #expect(
                        r.stdoutText.hasPrefix("HTTP/1.1 401"),
                        "\(method) /\(path) with \(header ?? "no token"): \(r.stdoutText)")
                    #expect(r.stdoutText.contains("WWW-Authenticate: Bearer"), "\(r.stdoutText)")
                }
            }
            let right = await ChildProcess.run(
                [
                    "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                    "Authorization: bearer \(token)", control.url + "identities",
                ], timeout: .seconds(30))
            #expect(right.stdoutText == "200")
            let health = await ChildProcess.run(
                ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", control.url + "health"],
                timeout: .seconds(30))
            #expect(health.stdoutText == "200", "GET /health needs no token")
            for path in Self.openPaths.sorted() {
                let r = await ChildProcess.run(
                    ["curl", "-s", "-D", "-", "-o", "/dev/null", control.url + path], timeout: .seconds(30))
                #expect(r.stdoutText.hasPrefix("HTTP/1.1 200"), "GET /\(path) needs no token: \(r.stdoutText)")
                if path != "health" {
                    #expect(
                        r.stdoutText.contains("X-Frame-Options: DENY")
                            && r.stdoutText.contains("frame-ancestors 'none'"), "\(r.stdoutText)")
                }
            }
            #expect(Gate.constantTimeEqual(Array("abc".utf8), Array("abc".utf8)))
            #expect(!Gate.constantTimeEqual(Array("abc".utf8), Array("abd".utf8)))
            #expect(!Gate.constantTimeEqual(Array("abc".utf8), Array("ab".utf8)))
        }
        // The opt-out: no token asked; refused off loopback.
        try await ControlTestLab.withControl(.init(requireToken: false)) { control, _ in
            #expect(control.token == nil)
            let r = try await Curl.get(control.url + "identities")
            #expect(r.status == 200, "\(r.text)")
        }
        let pki = try await ControlTestLab.pki()
        do {
            let c = try await ControlServer.start(
                pki: pki, catalogue: try Catalogue.bundled(),
                options: .init(host: "0.0.0.0", allowRemoteBind: true, requireToken: false))
            await c.stop()
            Issue.record("a control API without a token started on 0.0.0.0")
        } catch let e as ControlServerError {
            #expect(e.reason.contains("without a token"), "\(e.reason)")
        }
    }

    /// A 1 MiB URL and a 1 MiB header are answered 431 at once (the head is capped at 8 KiB, scanned once), while
    /// `GET /health` from other connections keeps answering. "At once" is shown by events, not a stopwatch: a client
    /// that sends 9 KiB of an endless head and then nothing more gets 431 before its own timeout (8 s), which is
    /// shorter than the server's read timeout (10 s, after which it would say 408). The times are printed.
    @Test(.requires("python3"))
    func oversizedHeadsAre431AtOnceAndHealthKeepsAnswering() async throws {
        try await ControlTestLab.withControl { control, _ in
            let port = String(control.port)
            func run(_ args: [String]) async throws -> [String: Any] {
                let r = await ChildProcess.run(["python3", Self.bench] + args, timeout: TestTimeouts.command)
                try #require(r.status == 0, "\(r.output)")
                return try #require(
                    try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.output)")
            }
            let stalled = String(8 * 1024 + 1024)  // past the 8 KiB cap on the head
            let runs: [(String, [String])] = [
                ("URL", ["--sizes", "16384,1048576", "--repeat", "5", "--timeout", "30"]),
                ("header", ["--sizes", "16384,1048576", "--repeat", "5", "--header", "--timeout", "30"]),
                ("stalled URL", ["--sizes", "1048576", "--repeat", "3", "--stall", stalled, "--timeout", "8"]),
                (
                    "stalled header",
                    ["--sizes", "1048576", "--repeat", "3", "--header", "--stall", stalled, "--timeout", "8"]
                ),
            ]
            for (kind, args) in runs {
                let result = try await run(["oversized", port] + args)
                for (size, value) in result {
                    let r = try #require(value as? [String: Any])
                    #expect(r["statuses"] as? [Int] == [431], "\(kind) of \(size) bytes: \(r)")
                    print("431 for a \(size)-byte \(kind): median \(r["median"] ?? "?") ms, max \(r["max"] ?? "?") ms")
                }
            }
            // Ten clients send 1 MiB URLs for 3 s; /health from another connection is answered throughout (each within
            // the client's 10 s timeout, and more than once: a starved server answers none or one).
            let flood = try await run(["health-under-flood", port, "--clients", "10", "--seconds", "3"])
            let health = try #require(flood["health"] as? [String: Any])
            #expect(flood["statuses"] as? [Int] == [200], "\(flood)")
            #expect((health["n"] as? Int ?? 0) >= 3, "\(flood)")
            print("GET /health during a flood of 10 clients: \(health)")
            #expect(try await Curl.get(control.url + "health").status == 200)
        }
    }

    /// At start, `control/PID-…` folders of processes that no longer exist are removed; those of live processes
    /// are kept.
    @Test func startSweepsFoldersOfDeadProcessesOnly() async throws {
        let pki = try await ControlTestLab.pki()
        let folder = pki.directory.appendingPathComponent("control", isDirectory: true)
        let dead = try ChildProcess.spawnBackground(["true"])
        while dead.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        let live = try ChildProcess.spawnBackground(["sleep", "60"])
        defer { live.terminate() }
        let deadFolder = folder.appendingPathComponent("\(dead.pid)-deadf01d", isDirectory: true)
        let liveFolder = folder.appendingPathComponent("\(live.pid)-11vef01d", isDirectory: true)
        let other = folder.appendingPathComponent("not-a-pid-folder", isDirectory: true)
        for f in [deadFolder, liveFolder, other] {
            try FileManager.default.createDirectory(at: f, withIntermediateDirectories: true)
            try Data("key".utf8).write(to: f.appendingPathComponent("client.key"))
        }
        defer { for f in [deadFolder, liveFolder, other] { try? FileManager.default.removeItem(at: f) } }
        try await ControlTestLab.withControl { control, _ in
            #expect(!FileManager.default.fileExists(atPath: deadFolder.path), "the dead process's folder was swept")
            #expect(FileManager.default.fileExists(atPath: liveFolder.path), "a live process's folder is kept")
            #expect(FileManager.default.fileExists(atPath: other.path), "a folder not named PID-… is kept")
            #expect(FileManager.default.fileExists(atPath: control.workDirectory.path))
        }
    }
}
