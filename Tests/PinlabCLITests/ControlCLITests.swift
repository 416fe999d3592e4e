import Foundation
import PinningLabTestSupport
import PinningLab
import Testing

/// `pinlab serve --control`: the control API from the command line, its address in the manifest, and its
/// refusals.
@Suite("pinlab serve --control", .serialized)
struct ControlCLITests {
    /// Port 0 gives an ephemeral port, printed and written to the manifest; the API answers there and starts a
    /// server that curl reaches. The static servers of --scenario keep their manifest entries.
    @Test(.enabled(if: Tool.runs(needing: "curl"), "curl is not installed (apt-get install curl)"))
    func controlPortIsInTheManifestAndAnswers() async throws {
        let curlPath = try #require(Tool.path("curl"))
        let bin = try #require(CLI.binary)
        let manifest = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-control-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: manifest) }
        let server = try ChildProcess.spawnBackground(
            [bin.path, "serve", "--scenario", "baseline", "--engine", "openssl", "--control", "127.0.0.1:0",
             "--manifest", manifest.path] + CLI.dirArgs)
        defer { server.terminate() }
        let object = try #require(await CLI.manifest(manifest, waitingUpTo: .seconds(120)), "no complete manifest after 120 s")
        #expect((object["servers"] as? [[String: Any]])?.first?["id"] as? String == "baseline")
        let control = try #require(object["control"] as? [String: Any])
        let port = try #require(control["port"] as? Int)
        #expect(port > 0)
        #expect(control["url"] as? String == "http://127.0.0.1:\(port)/")
        #expect(control["openapi"] as? String == "http://127.0.0.1:\(port)/openapi.yaml")

        func curl(_ args: [String]) async -> ChildProcess.Result {
            await ChildProcess.run([curlPath, "-s", "-S", "--max-time", "30"] + args, timeout: .seconds(40))
        }
        let health = await curl(["http://127.0.0.1:\(port)/health"])
        #expect(health.status == 0 && health.stdoutText.contains("\"ok\""), "\(health.output)")
        let started = await curl(["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"scenario":"baseline","engine":"gnutls"}"#,
                            "http://127.0.0.1:\(port)/servers"])
        let s = try #require(try JSONSerialization.jsonObject(with: Data(started.stdout)) as? [String: Any], "\(started.output)")
        let url = try #require(s["url"] as? String)
        let trust = try #require(s["trustFile"] as? String)
        #expect(await curl(["-o", "/dev/null", "--cacert", trust, url]).status == 0)
    }

    @Test func nonLoopbackControlAddressIsRefused() async throws {
        for address in ["0.0.0.0:0", "192.0.2.2:8080", "[::]:0"] {
            let r = try await CLI.run(["serve", "--control", address] + CLI.dirArgs)
            #expect(r.status != 0, "\(address)")
            #expect(r.stderr.contains("--control") && r.stderr.contains("loopback") && r.stderr.contains("--control-allow-remote"),
                    "\(address): \(r.stderr)")
        }
        let bad = try await CLI.run(["serve", "--control", "localhost"] + CLI.dirArgs)
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--control") && bad.stderr.contains("HOST:PORT"), "\(bad.stderr)")
        let stray = try await CLI.run(["serve", "--identity", "leaf-v1", "--control-allow-remote"] + CLI.dirArgs)
        #expect(stray.status != 0)
        #expect(stray.stderr.contains("--control-allow-remote applies to --control"), "\(stray.stderr)")
    }
}
