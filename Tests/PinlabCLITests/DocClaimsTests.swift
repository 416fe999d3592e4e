// The DocC articles' shell examples that claim an outcome are run as written — the lines read from the article, in an
// empty folder, with the debug `pinlab` first on the PATH — and the outcome they claim is checked: what the documents
// say is what the binary does.
import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("the articles' shell examples do what they say", .serialized)
struct DocClaimsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func article(_ name: String) throws -> String {
        try String(
            contentsOf: repository.appendingPathComponent("Sources/PinningLab/PinningLab.docc/\(name)"), encoding: .utf8
        )
    }

    /// The ```sh blocks of `article` between `heading` and the next `## ` heading, each as its lines.
    static func shellBlocks(_ name: String, section heading: String) throws -> [[String]] {
        let text = try article(name)
        let start = try #require(text.range(of: "\n\(heading)\n"), "\(name) has no section \(heading)")
        let rest = text[start.upperBound...]
        let section = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var blocks: [[String]] = []
        var current: [String]?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!)
                current = nil
            } else if current != nil {
                current!.append(String(line))
            }
        }
        return blocks
    }

    /// A fresh, empty folder of this test process.
    static func emptyFolder(_ name: String) throws -> URL {
        let dir = TestScratch.root.appendingPathComponent("doc-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        chmod(dir.path, 0o700)
        return dir
    }

    /// The environment of a reader's shell, with the debug `pinlab` first on the PATH.
    static func readerEnvironment() throws -> [String: String] {
        let bin = try #require(CLI.binary, "the pinlab binary was not found; run `swift build` first")
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = bin.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["NO_COLOR"] = "1"
        for v in EnvironmentShard.variableNames { env[v] = nil }
        return env
    }

    /// Runs one line of an article in `dir` as a reader's shell would.
    static func sh(_ line: String, in dir: URL) async throws -> ChildProcess.Result {
        await ChildProcess.run(
            ["sh", "-c", "cd '\(dir.path)' && \(line)"], environment: try readerEnvironment(),
            timeout: .seconds(300))
    }

    /// The exit status a line claims in its trailing comment (`# exit 60`).
    static func claimedExit(_ line: String) -> Int32? {
        guard let r = line.range(of: #"#\s*exit (\d+)\s*$"#, options: .regularExpression) else { return nil }
        return Int32(line[r].split(separator: " ").last!)
    }

    /// Exports.md, curl: the exported flags refuse `intercepting-proxy` with the exit status each line claims (60 as
    /// exported: trust.pem holds lab-root only; 90 with the scenario's trust file, whose path the article names).
    @Test(.requires("curl"))
    func exportsCurlInterceptingProxy() async throws {
        let blocks = try Self.shellBlocks("Exports.md", section: "## curl")
        try #require(blocks.count == 2, "\(blocks)")
        let export = try #require(blocks[0].first { $0.hasPrefix("pinlab export curl") })
        let claims = blocks[1].filter { Self.claimedExit($0) != nil }
        try #require(claims.count == 2, "the second block claims an exit status on each line: \(blocks[1])")
        let dir = try Self.emptyFolder("curl")
        let manifest = dir.appendingPathComponent("servers.json")
        let bin = try #require(CLI.binary)
        let server = try ChildProcess.spawnBackground(
            [
                "sh", "-c",
                "cd '\(dir.path)' && exec '\(bin.path)' serve --scenario intercepting-proxy --engine openssl --manifest servers.json",
            ],
            environment: try Self.readerEnvironment())
        defer { server.terminate() }
        var port: Int?
        let deadline = ContinuousClock.now + .seconds(120)  // the first command in an empty folder issues the lab PKI
        while port == nil, ContinuousClock.now < deadline {
            if let d = try? Data(contentsOf: manifest),
                let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any],
                let servers = o["servers"] as? [[String: Any]]
            {
                port = servers.first?["port"] as? Int
            } else {
                try await Task.sleep(for: .milliseconds(50))  // polls for the manifest; nothing is judged by time
            }
        }
        let p = try #require(port, "pinlab serve wrote no manifest")
        let made = try await Self.sh(export, in: dir)
        #expect(made.status == 0, "\(export): \(made.stderrText)")
        for line in claims {
            // the article's trust-file path is relative to the folder pinlab serve ran in
            let trust = line.range(of: #"--cacert (\S+)"#, options: .regularExpression).map {
                String(line[$0].dropFirst(9))
            }
            if let trust {
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(trust).path), "\(trust)")
            }
            let command = line.replacingOccurrences(of: "PORT", with: "\(p)")
            let r = try await Self.sh(command + " > /dev/null", in: dir)
            #expect(r.status == Self.claimedExit(line), "\(line) → exit \(r.status): \(r.stderrText)")
        }
    }

    /// Exports.md, OkHttp: the block, run as written in an empty folder, writes the files its `--out`s name.
    @Test func exportsOkHttpOutInAFreshFolder() async throws {
        let blocks = try Self.shellBlocks("Exports.md", section: "## OkHttp")
        let block = try #require(blocks.first)
        #expect(block.contains { $0.contains("--out src/PinningLabPins.java") }, "\(block)")
        let dir = try Self.emptyFolder("okhttp")
        for line in block where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let r = try await Self.sh(line, in: dir)
            #expect(r.status == 0, "\(line) → exit \(r.status): \(r.stderrText)")
            let command = line.components(separatedBy: " #").first ?? line
            if let out = command.range(of: #"--out (\S+)"#, options: .regularExpression).map({
                String(command[$0].dropFirst(6))
            }) {
                let text = (try? String(contentsOf: dir.appendingPathComponent(out), encoding: .utf8)) ?? ""
                #expect(text.contains("PinningLabPins") && text.contains("sha256/"), "\(out): \(text.prefix(300))")
            }
        }
    }

    /// A `pinlab serve --control` of this test: its process, URL and token.
    static func control(maxServers: Int) async throws -> (ChildProcess.Background, String, String) {
        let dir = try emptyFolder("control")
        let manifest = dir.appendingPathComponent("control.json")
        let bin = try #require(CLI.binary)
        let serve = try ChildProcess.spawnBackground(
            [
                bin.path, "serve", "--control", "127.0.0.1:0", "--control-max-servers", "\(maxServers)", "--manifest",
                manifest.path,
            ] + CLI.dirArgs,
            environment: try readerEnvironment())
        var control: [String: Any]?
        let deadline = ContinuousClock.now + .seconds(120)
        while control == nil, ContinuousClock.now < deadline {
            if let d = try? Data(contentsOf: manifest),
                let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any]
            {
                control = o["control"] as? [String: Any]
            } else {
                try await Task.sleep(for: .milliseconds(50))  // polls for the manifest; nothing is judged by time
            }
        }
        guard let c = control, let url = c["url"] as? String, let token = c["token"] as? String else {
            serve.terminate()
            throw DocClaimError("pinlab serve --control wrote no manifest")
        }
        return (serve, url, token)
    }

    struct DocClaimError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func call(_ method: String, _ url: String, token: String, body: String? = nil) async -> String {
        await ChildProcess.run(
            [
                "curl", "-s", "-X", method, "-H", "Authorization: Bearer \(token)", "-H",
                "Content-Type: application/json",
            ]
                + (body.map { ["-d", $0] } ?? []) + [url], timeout: .seconds(300)
        ).stdoutText
    }

    /// 1068 → "1,068", as the articles write numbers.
    static func spelled(_ n: Int) -> String {
        n >= 1000 ? "\(n / 1000)," + String(String(n % 1000 + 1000).dropFirst()) : "\(n)"
    }

    /// ControlAPI.md, BatchHarnesses.md and `serve --help`: the whole-catalogue batch (`POST /batch {}`) has the cells
    /// and needs the servers the articles say — the number its 409 names under the default limit, and the cells,
    /// served and `unsupported`, of the batch itself.
    @Test(.requires("curl"))
    func wholeCatalogueBatchSize() async throws {
        let (small, smallURL, smallToken) = try await Self.control(maxServers: 32)
        let refused = await Self.call("POST", smallURL + "batch", token: smallToken, body: "{}")
        small.terminate()
        let match = try #require(refused.range(of: #"needs (\d+) servers"#, options: .regularExpression), "\(refused)")
        let needed = try #require(Int(refused[match].split(separator: " ")[1]))

        let (serve, url, token) = try await Self.control(maxServers: needed)
        defer { serve.terminate() }
        let answer = await Self.call("POST", url + "batch", token: token, body: "{}")
        let batch = try #require(
            try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], "\(answer.prefix(500))")
        let served = try #require(batch["servers"] as? [Any], "\(answer.prefix(500))").count
        let unsupported = (batch["unsupported"] as? [Any])?.count ?? 0
        if let id = batch["batch"] as? String { _ = await Self.call("DELETE", url + "batch/" + id, token: token) }
        let cells = served + unsupported

        let controlAPI = try Self.article("ControlAPI.md").replacingOccurrences(
            of: #"\s+"#, with: " ", options: .regularExpression)
        let harnesses = try Self.article("BatchHarnesses.md").replacingOccurrences(
            of: #"\s+"#, with: " ", options: .regularExpression)
        for claim in [
            "\(Self.spelled(cells)) cells, of which \(Self.spelled(served)) get servers and \(unsupported) are `unsupported`",
            "**\(Self.spelled(needed)) servers**", "--control-max-servers \(needed)",
        ] {
            #expect(controlAPI.contains(claim), "ControlAPI.md does not say: \(claim)")
        }
        for claim in [
            "\(Self.spelled(cells)) cells", "(\(Self.spelled(served)) served, \(unsupported) `unsupported`)",
            "\(Self.spelled(needed)) servers in all",
        ] {
            #expect(harnesses.contains(claim), "BatchHarnesses.md does not say: \(claim)")
        }
        let help = try await CLI.run(["serve", "--help"])
        #expect(
            help.stdout.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression).contains(
                "needs \(needed)."),
            "serve --help does not say \(needed)")
    }
}
