import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `pinlab serve --control`: the control API from the command line, its address in the manifest, and its
/// refusals.
@Suite("pinlab serve --control", .serialized)
struct ControlCLITests {
    /// Port 0 gives an ephemeral port, printed and written to the manifest; the API answers there and starts a
    /// server that curl reaches. The static servers of --scenario keep their manifest entries.
    @Test(.requires("curl"))
    func controlPortIsInTheManifestAndAnswers() async throws {
        let curlPath = try #require(Tool.path("curl"))
        let bin = try #require(CLI.binary)
        let manifest = TestScratch.root.appendingPathComponent("pinlab-control-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: manifest) }
        let server = try ChildProcess.spawnBackground(
            [
                bin.path, "serve", "--scenario", "baseline", "--engine", "openssl", "--control", "127.0.0.1:0",
                "--manifest", manifest.path,
            ] + CLI.dirArgs)
        defer { server.terminate() }
        let object = try #require(
            await CLI.manifest(manifest, waitingUpTo: TestTimeouts.startup),
            "no complete manifest after \(TestTimeouts.startup)")
        #expect((object["servers"] as? [[String: Any]])?.first?["id"] as? String == "baseline")
        let control = try #require(object["control"] as? [String: Any])
        let port = try #require(control["port"] as? Int)
        #expect(port > 0)
        #expect(control["url"] as? String == "http://127.0.0.1:\(port)/")
        #expect(control["openapi"] as? String == "http://127.0.0.1:\(port)/openapi.yaml")
        let token = try #require(control["token"] as? String, "the manifest holds the token")
        let mode = try #require(
            try FileManager.default.attributesOfItem(atPath: manifest.path)[.posixPermissions] as? Int)
        #expect(
            mode == 0o600, "the manifest holds the token: readable by its owner only, not \(String(mode, radix: 8))")

        func curl(_ args: [String]) async -> ChildProcess.Result {
            await ChildProcess.run([curlPath, "-s", "-S", "--max-time", "30"] + args, timeout: .seconds(40))
        }
        let health = await curl(["http://127.0.0.1:\(port)/health"])
        #expect(health.status == 0 && health.stdoutText.contains("\"ok\""), "\(health.output)")
        let refused = await curl(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/servers"])
        #expect(refused.stdoutText == "401", "no token: \(refused.output)")
        let started = await curl([
            "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(token)",
            "--data", #"{"scenario":"baseline","engine":"gnutls"}"#, "http://127.0.0.1:\(port)/servers",
        ])
        let s = try #require(
            try JSONSerialization.jsonObject(with: Data(started.stdout)) as? [String: Any], "\(started.output)")
        let url = try #require(s["url"] as? String)
        let trust = try #require(s["trustFile"] as? String)
        #expect(await curl(["-o", "/dev/null", "--cacert", trust, url]).status == 0)
    }

    @Test func nonLoopbackControlAddressIsRefused() async throws {
        for address in ["0.0.0.0:0", "192.0.2.2:8080", "[::]:0"] {
            let r = try await CLI.run(["serve", "--control", address] + CLI.dirArgs)
            #expect(r.status != 0, "\(address)")
            #expect(
                r.stderr.contains("--control") && r.stderr.contains("loopback")
                    && r.stderr.contains("--control-allow-remote"),
                "\(address): \(r.stderr)")
        }
        let bad = try await CLI.run(["serve", "--control", "localhost"] + CLI.dirArgs)
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--control") && bad.stderr.contains("HOST:PORT"), "\(bad.stderr)")
        let stray = try await CLI.run(["serve", "--identity", "leaf-v1", "--control-allow-remote"] + CLI.dirArgs)
        #expect(stray.status != 0)
        #expect(stray.stderr.contains("--control-allow-remote applies to --control"), "\(stray.stderr)")
        let noToken = try await CLI.run(
            ["serve", "--control", "0.0.0.0:0", "--control-allow-remote", "--control-no-token"] + CLI.dirArgs)
        #expect(noToken.status != 0)
        #expect(
            noToken.stderr.contains("--control-no-token") && noToken.stderr.contains("off loopback"),
            "\(noToken.stderr)")
        let badOrigin = try await CLI.run(
            ["serve", "--control", "127.0.0.1:0", "--control-allow-origin", "*"] + CLI.dirArgs)
        #expect(badOrigin.status != 0)
        #expect(
            badOrigin.stderr.contains("--control-allow-origin") && badOrigin.stderr.contains("scheme://host"),
            "\(badOrigin.stderr)")
    }

    /// SIGTERM stops `pinlab serve --control` promptly (exit 143) while ten clients flood it with 1 MiB request
    /// lines; SIGINT exits 130.
    @Test(.requires("python3"))
    func signalsStopTheControlAPIDuringAFlood() async throws {
        let bench = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Benchmarks/control/control_bench.py").path
        let bin = try #require(CLI.binary)
        for (sig, expected) in [(SIGTERM, Int32(143)), (SIGINT, Int32(130))] {
            let manifest = TestScratch.root.appendingPathComponent("pinlab-control-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: manifest) }
            let server = try ChildProcess.spawnBackground(
                [bin.path, "serve", "--control", "127.0.0.1:0", "--manifest", manifest.path] + CLI.dirArgs)
            defer { server.terminate() }
            let object = try #require(
                await CLI.manifest(manifest, waitingUpTo: TestTimeouts.startup),
                "no complete manifest after \(TestTimeouts.startup)")
            let port = try #require((object["control"] as? [String: Any])?["port"] as? Int)
            let flood = try ChildProcess.spawnBackground([
                "python3", bench, "flood", String(port), "--clients", "10", "--seconds", "30",
            ])
            defer { flood.terminate() }
            // The flood is under way: the server has held connections from ten of its clients (an event, not a
            // fixed wait that a loaded machine can outlast while Python is still starting).
            var clientPorts = Set<Int>()
            let flooding = await eventually(TestTimeouts.startup) {
                clientPorts.formUnion(TCPConnections.clientPorts(ofServerOn: port))
                return clientPorts.count >= 10
            }
            try #require(flooding, "the flood never reached the control API: \(clientPorts.count) connection(s) seen")
            #expect(server.isRunning)
            kill(server.pid, sig)
            let signalled = ContinuousClock.now
            var status: Int32 = 0
            let reaped = await eventually(.seconds(15)) { waitpid(server.pid, &status, WNOHANG) == server.pid }
            let took = ContinuousClock.now - signalled
            try #require(reaped, "pinlab serve --control still runs 15 s after signal \(sig) during a flood")
            #expect(
                status & 0x7f == 0 && (status >> 8) & 0xff == expected,
                "signal \(sig): exit status \((status >> 8) & 0xff) (raw \(status)), expected \(expected)")
            #expect(took < .seconds(6), "stopping took \(took)")
            print("signal \(sig) during a flood: exited \((status >> 8) & 0xff) after \(took)")
        }
    }
}
