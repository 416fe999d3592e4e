// Shards from the CI systems' environment: processes started as Bazel, GitLab, CircleCI and a Kubernetes Indexed Job
// start them each run their piece, and `pinlab report merge` gives back the unsharded report cell for cell.
import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("shards from the environment", .serialized)
struct EnvironmentShardTests {
    static let scenarios = "baseline,rekey,root-not-sent,sibling-intermediate"

    /// The binary run with the test's environment minus every shard variable, plus `variables`.
    static func pinlab(_ args: [String], _ variables: [String: String] = [:]) async throws -> CLI.Result {
        let bin = try #require(
            CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
        var env = ProcessInfo.processInfo.environment
        for v in EnvironmentShard.variableNames { env[v] = nil }
        env["NO_COLOR"] = "1"
        env.merge(variables) { _, new in new }
        let r = await ChildProcess.run([bin.path] + args, environment: env, timeout: TestTimeouts.catalogue)
        return CLI.Result(status: r.status, stdout: r.stdoutText, stderr: r.stderrText)
    }

    static func folder(_ name: String) throws -> URL {
        let url = TestScratch.root.appendingPathComponent("env-shard-\(UUID().uuidString.prefix(6))-\(name)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// scenario/profile/engine → verdict.
    static func cells(_ file: URL) throws -> [String: String] {
        let report = try CheckReport.decode(json: try Data(contentsOf: file), file: file.path)
        var out: [String: String] = [:]
        for v in report.verdicts { out["\(v.scenario)/\(v.profile.rawValue)/\(v.engine)"] = v.status.rawValue }
        #expect(out.count == report.verdicts.count, "a cell is twice in \(file.lastPathComponent)")
        return out
    }

    /// One CI system's way of numbering its pieces: the environment of piece `i` (from 0) of `n`.
    struct Starter: Sendable {
        var system: String
        var variables: String
        var count: Int
        var environment: @Sendable (_ i: Int, _ n: Int, _ folder: URL) -> [String: String]
    }

    static let starters: [Starter] = [
        Starter(system: "Bazel", variables: "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS", count: 3) { i, n, folder in
            [
                "TEST_SHARD_INDEX": "\(i)", "TEST_TOTAL_SHARDS": "\(n)",
                "TEST_SHARD_STATUS_FILE": folder.appendingPathComponent("status-\(i)").path,
            ]
        },
        Starter(system: "GitLab", variables: "CI_NODE_INDEX/CI_NODE_TOTAL", count: 4) { i, n, _ in
            ["CI_NODE_INDEX": "\(i + 1)", "CI_NODE_TOTAL": "\(n)"]
        },
        Starter(system: "CircleCI", variables: "CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL", count: 3) { i, n, _ in
            ["CIRCLE_NODE_INDEX": "\(i)", "CIRCLE_NODE_TOTAL": "\(n)"]
        },
        Starter(system: "Kubernetes", variables: "JOB_COMPLETION_INDEX/PINLAB_SHARD_TOTAL", count: 4) { i, n, _ in
            ["JOB_COMPLETION_INDEX": "\(i)", "PINLAB_SHARD_TOTAL": "\(n)"]
        },
    ]

    /// Starts the N pieces of `starter` at once, each writing `folder/piece-K.json` with `args(file)`; checks what
    /// each says on stderr and returns the files.
    static func runPieces(_ starter: Starter, folder: URL, args: @escaping @Sendable (URL) -> [String]) async throws
        -> [URL]
    {
        let files = (0..<starter.count).map { folder.appendingPathComponent("piece-\($0 + 1).json") }
        let results = try await withThrowingTaskGroup(of: (Int, CLI.Result).self) { group in
            for i in 0..<starter.count {
                group.addTask { (i, try await pinlab(args(files[i]), starter.environment(i, starter.count, folder))) }
            }
            var out: [Int: CLI.Result] = [:]
            for try await (i, r) in group { out[i] = r }
            return out
        }
        for i in 0..<starter.count {
            let r = try #require(results[i])
            #expect(r.status == 0, "\(starter.system) piece \(i): \(r.stdout) \(r.stderr)")
            let said = "pinlab: shard \(i + 1)/\(starter.count) from \(starter.system)'s \(starter.variables)"
            #expect(r.stderr.contains(said), "\(starter.system) piece \(i) did not say '\(said)': \(r.stderr)")
        }
        return files
    }

    static func merge(_ files: [URL], into merged: URL) async throws {
        let r = try await pinlab(
            ["report", "merge"] + files.map(\.path) + ["--format", "json", "--output", merged.path])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
    }

    @Test("pinlab check: Bazel, GitLab, CircleCI and Kubernetes pieces merge into the unsharded report, cell for cell")
    func checkPiecesMergeIntoTheWholeRun() async throws {
        let folder = try Self.folder("check")
        let whole = folder.appendingPathComponent("whole.json")
        let base =
            ["check"] + CLI.dirArgs + [
                "--client", "correct", "--scenarios", Self.scenarios, "--format", "json", "--output",
            ]
        let w = try await Self.pinlab(base + [whole.path])
        #expect(w.status == 0, "\(w.stdout) \(w.stderr)")
        #expect(!w.stderr.contains("pinlab: shard"), "a run with no shard variable says it is a shard: \(w.stderr)")
        let expected = try Self.cells(whole)
        #expect(expected.count == 4 * 6 * 2)
        for starter in Self.starters {
            let dir = try Self.folder(starter.system)
            let files = try await Self.runPieces(starter, folder: dir) { base + [$0.path] }
            var sizes: [Int] = []
            for f in files { sizes.append(try Self.cells(f).count) }
            #expect(sizes.allSatisfy { $0 < expected.count }, "\(starter.system): a piece ran every cell: \(sizes)")
            let merged = dir.appendingPathComponent("merged.json")
            try await Self.merge(files, into: merged)
            #expect(try Self.cells(merged) == expected, "\(starter.system): the merged pieces are not the whole run")
            if starter.system == "Bazel" {
                for i in 0..<starter.count {
                    let status = dir.appendingPathComponent("status-\(i)").path
                    #expect(
                        FileManager.default.fileExists(atPath: status), "Bazel's status file \(status) was not touched")
                }
            }
        }
    }

    @Test("pinlab lab check: pieces of a lab's cells (--report) merge into the unsharded lab run, cell for cell")
    func labCheckPiecesMergeIntoTheWholeRun() async throws {
        let folder = try Self.folder("lab")
        let whole = folder.appendingPathComponent("whole.json")
        let base = ["lab", "check", "2"] + CLI.dirArgs + ["--client", "correct", "--format", "json", "--report"]
        let w = try await Self.pinlab(base + [whole.path])
        #expect(w.status == 0, "\(w.stdout) \(w.stderr)")
        let expected = try Self.cells(whole)
        #expect(expected.values.filter { $0 != "skipped" }.count == 4 * 2 * 2, "lab 2's cells: \(expected)")
        for starter in [Self.starters[1], Self.starters[0]] {
            let dir = try Self.folder("lab-\(starter.system)")
            let files = try await Self.runPieces(starter, folder: dir) { base + [$0.path] }
            let merged = dir.appendingPathComponent("merged.json")
            try await Self.merge(files, into: merged)
            #expect(
                try Self.cells(merged) == expected, "\(starter.system): the merged lab pieces are not the whole lab")
        }
        // --shard on the command line too, and the grade says it is a part.
        let part = try await Self.pinlab(
            ["lab", "check", "2"] + CLI.dirArgs + ["--client", "correct", "--shard", "2/3"])
        #expect(part.status == 0, "\(part.stdout) \(part.stderr)")
        #expect(part.stdout.contains("Shard 2/3: only this part"), "\(part.stdout)")
    }

    @Test("pinlab check --batch reads its shard from the environment too", .requires("python3"))
    func batchPiecesMergeIntoTheWholeRun() async throws {
        let folder = try Self.folder("batch")
        let whole = folder.appendingPathComponent("whole.json")
        let python = BatchCLITests.python
        let args: @Sendable (URL) -> [String] = { out in
            ["check"] + CLI.dirArgs + [
                "--client-checks", "revocation=none,ct=none", "--scenarios", Self.scenarios,
                "--batch", "--format", "json", "--output", out.path, "--", "python3", python,
            ]
        }
        let w = try await Self.pinlab(args(whole))
        #expect(w.status == 0, "\(w.stdout) \(w.stderr)")
        let files = try await Self.runPieces(Self.starters[2], folder: folder, args: args)
        let merged = folder.appendingPathComponent("merged.json")
        try await Self.merge(files, into: merged)
        #expect(try Self.cells(merged) == (try Self.cells(whole)))
    }

    @Test("inconsistent shard variables are refused with exit 2, naming the variable and the fix")
    func inconsistentVariablesAreRefused() async throws {
        let cases: [([String: String], String)] = [
            (["CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"], "CI_NODE_INDEX=5 is not a shard of CI_NODE_TOTAL=4"),
            (["CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"], "GitLab counts from 1"),
            (
                ["TEST_SHARD_INDEX": "3", "TEST_TOTAL_SHARDS": "3"],
                "TEST_SHARD_INDEX=3 is not a shard of TEST_TOTAL_SHARDS=3"
            ),
            (["TEST_SHARD_INDEX": "0", "TEST_TOTAL_SHARDS": "0"], "TEST_TOTAL_SHARDS=0"),
            (["CIRCLE_NODE_INDEX": "two", "CIRCLE_NODE_TOTAL": "3"], "CIRCLE_NODE_INDEX='two' is not a number"),
            (["CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "3x"], "CIRCLE_NODE_TOTAL='3x' is not a number"),
            (["JOB_COMPLETION_INDEX": "1"], "JOB_COMPLETION_INDEX=1 is set but PINLAB_SHARD_TOTAL is not"),
            (["PINLAB_SHARD_TOTAL": "4"], "PINLAB_SHARD_TOTAL=4 is set but JOB_COMPLETION_INDEX is not"),
            (
                [
                    "TEST_SHARD_INDEX": "0", "TEST_TOTAL_SHARDS": "2",
                    "TEST_SHARD_STATUS_FILE": "/nonexistent-folder/status",
                ],
                "TEST_SHARD_STATUS_FILE=/nonexistent-folder/status cannot be touched"
            ),
        ]
        for (variables, problem) in cases {
            for command in [
                ["check", "--client", "correct", "--scenarios", "baseline"],
                ["lab", "check", "1", "--client", "correct"],
            ] {
                let r = try await Self.pinlab(command + CLI.dirArgs, variables)
                #expect(r.status == 2, "\(variables) \(command[0]): \(r.status) \(r.stderr)")
                #expect(r.stderr.contains(problem) && r.stderr.contains("Fix: "), "\(variables): \(r.stderr)")
            }
        }
    }

    @Test("--shard wins over the environment; empty variables and a total of 1 alone are no shard")
    func commandLineWinsAndEmptyIsUnset() async throws {
        let folder = try Self.folder("wins")
        let out = folder.appendingPathComponent("r.json")
        let base =
            ["check"] + CLI.dirArgs + [
                "--client", "correct", "--scenarios", "baseline", "--format", "json", "--output", out.path,
            ]
        let wins = try await Self.pinlab(base + ["--shard", "1/2"], ["CI_NODE_INDEX": "9", "CI_NODE_TOTAL": "4"])
        #expect(wins.status == 0, "\(wins.stderr)")
        #expect(wins.stderr.contains("shard 1/2 from --shard (CI_NODE_INDEX/CI_NODE_TOTAL not read)"), "\(wins.stderr)")
        #expect(try CheckReport.decode(json: Data(contentsOf: out), file: out.path).shard?.description == "1/2")
        for variables in [
            ["CI_NODE_INDEX": "", "CI_NODE_TOTAL": ""], ["CI_NODE_TOTAL": "1"],
            ["JOB_COMPLETION_INDEX": "", "PINLAB_SHARD_TOTAL": ""],
        ] {
            let r = try await Self.pinlab(base, variables)
            #expect(r.status == 0, "\(variables): \(r.stderr)")
            #expect(!r.stderr.contains("shard"), "\(variables): \(r.stderr)")
            #expect(try CheckReport.decode(json: Data(contentsOf: out), file: out.path).shard == nil, "\(variables)")
        }
    }
}
