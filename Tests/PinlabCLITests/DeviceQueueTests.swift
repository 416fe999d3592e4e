import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The device queue of `pinlab serve --control` driven by a farm of eight local devices (Tests/Devices/curl_device.sh:
/// a shell, curl and jq each), two of them killed mid-lease and the control API killed and restarted mid-run: the
/// queue's report equals a one-process `pinlab check` run of the same client, cell for cell.
@Suite("pinlab serve --control: the device queue", .serialized)
struct DeviceQueueTests {
    static let device = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Devices/curl_device.sh").path
    static let scenarios = ["baseline", "rekey", "emergency-rekey", "wrong-host", "intercepting-proxy"]
    static let profiles = ["none", "leaf-spki", "leaf-spki+backup"]

    /// A running `pinlab serve --control 127.0.0.1:0`: its process, URL and token.
    struct Serve {
        var process: ChildProcess.Background
        var url: String
        var token: String
    }

    static func startServe(_ folder: URL, _ n: Int) async throws -> Serve {
        let bin = try #require(CLI.binary)
        let manifest = folder.appendingPathComponent("serve-\(n).json")
        let process = try ChildProcess.spawnBackground(
            [bin.path, "serve", "--control", "127.0.0.1:0", "--manifest", manifest.path] + CLI.dirArgs,
            stdoutFile: folder.appendingPathComponent("serve-\(n).out").path,
            stderrFile: folder.appendingPathComponent("serve-\(n).err").path)
        guard let object = await CLI.manifest(manifest, waitingUpTo: TestTimeouts.startup),
            let control = object["control"] as? [String: Any], let url = control["url"] as? String,
            let token = control["token"] as? String
        else {
            process.terminate()
            let err = (try? String(contentsOf: folder.appendingPathComponent("serve-\(n).err"), encoding: .utf8)) ?? ""
            throw CurlFailure(description: "pinlab serve wrote no control address: \(err)")
        }
        return Serve(process: process, url: url, token: token)
    }

    struct CurlFailure: Error, CustomStringConvertible { var description: String }

    /// One request to the control API with curl: the status and the JSON body.
    static func api(_ serve: Serve, _ method: String, _ path: String, json: String? = nil) async throws -> (
        Int, [String: Any]
    ) {
        var args = [
            "curl", "-s", "-S", "--max-time", "30", "-X", method, "-w", "\n%{http_code}",
            "-H", "Authorization: Bearer \(serve.token)",
        ]
        if let json { args += ["-H", "Content-Type: application/json", "--data-binary", json] }
        let r = await ChildProcess.run(args + [serve.url + path], timeout: .seconds(40))
        let text = r.stdoutText
        guard r.status == 0, let newline = text.lastIndex(of: "\n"), let code = Int(text[text.index(after: newline)...])
        else {
            throw CurlFailure(description: "curl \(method) \(path): \(r.output)")
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(text[..<newline].utf8))) as? [String: Any] ?? [:]
        return (code, object)
    }

    /// Writes the file the devices read the API's address from (renamed into place: a device never reads half).
    static func writeAPIFile(_ file: URL, _ serve: Serve, queue: String) throws {
        let tmp = file.appendingPathExtension("tmp")
        try "URL='\(serve.url)'\nTOKEN='\(serve.token)'\nQUEUE='\(queue)'\n".write(
            to: tmp, atomically: false, encoding: .utf8)
        _ = rename(tmp.path, file.path)
    }

    /// Cell id → verdict of a report's JSON.
    static func verdicts(_ report: [String: Any]) -> [[String: Any]] { report["verdicts"] as? [[String: Any]] ?? [] }
    static func key(_ v: [String: Any]) -> String {
        "\(v["scenario"] as? String ?? "")/\(v["profile"] as? String ?? "")/\(v["engine"] as? String ?? "")"
    }

    @Test(.requires("curl", "jq", "bash"))
    func eightDevicesTwoKilledAndARestartEqualAOneProcessRun() async throws {
        let folder = TestScratch.root.appendingPathComponent("pinlab-devices-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // The one-process run of the same client: curl by the command template.
        let check = try await CLI.run(
            [
                "check", "--profiles", Self.profiles.joined(separator: ","), "--scenarios",
                Self.scenarios.joined(separator: ","), "--format", "json",
            ] + CLI.dirArgs
                + ["--", "curl", "-sf", "-o", "/dev/null", "--cacert", "{ca}", "[--pinnedpubkey {pins.curl}]", "{url}"])
        #expect(check.status == 0, "\(check.stderr)")
        let oneProcess = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        let expected = Dictionary(
            uniqueKeysWithValues: Self.verdicts(oneProcess).map { (Self.key($0), $0["verdict"] as? String ?? "") })
        let toAnswer = expected.values.filter { $0 != "skipped" }.count
        #expect(expected.count == Self.scenarios.count * 2 * PinProfile.all.count)
        #expect(toAnswer == Self.scenarios.count * 2 * Self.profiles.count)

        var serve = try await Self.startServe(folder, 1)
        var processes: [ChildProcess.Background] = [serve.process]
        defer { for p in processes { p.terminate() } }
        let body = try String(
            data: JSONSerialization.data(withJSONObject: [
                "client": "curl", "scenarios": Self.scenarios, "profiles": Self.profiles, "leaseSeconds": 5,
                "maxLeases": 16,
            ]), encoding: .utf8)
        let (created, queueObject) = try await Self.api(serve, "POST", "queues", json: body)
        try #require(created == 201, "\(queueObject)")
        let queue = try #require(queueObject["id"] as? String)
        let apiFile = folder.appendingPathComponent("api.sh")
        try Self.writeAPIFile(apiFile, serve, queue: queue)

        func device(_ n: Int, mode: String, pace: String = "0") throws -> ChildProcess.Background {
            var env = ProcessInfo.processInfo.environment
            env["PACE"] = pace
            return try ChildProcess.spawnBackground(
                [
                    "bash", Self.device, "device-\(n)", "Linux (curl)", apiFile.path, mode,
                    folder.appendingPathComponent("lease-\(n).json").path,
                ],
                stdoutFile: folder.appendingPathComponent("device-\(n).out").path,
                stderrFile: folder.appendingPathComponent("device-\(n).err").path, environment: env)
        }

        // Two devices take a lease each and are killed holding it.
        // Leases of 5 s: a live device on a loaded two-core machine (curl, jq and the answer, with other suites
        // running) outlasted leases of 2 s, so its cell was handed out again and answered twice.
        let doomed = [try device(7, mode: "die"), try device(8, mode: "die")]
        processes += doomed
        let markers = [7, 8].map { folder.appendingPathComponent("lease-\($0).json") }
        let leased = await eventually(TestTimeouts.startup) {
            markers.allSatisfy { FileManager.default.fileExists(atPath: $0.path) }
        }
        try #require(leased, "the two doomed devices never got a lease")
        for p in doomed { p.terminate() }
        let deadCells = try markers.map { url -> String in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            return try #require((object["cell"] as? [String: Any])?["id"] as? String)
        }

        // Six devices at a device's pace (two seconds between cells), so the run outlasts the dead leases.
        let live = try (1...6).map { try device($0, mode: "normal", pace: "2") }
        processes += live

        // Mid-run: once the dead leases expired and their cells were answered by live devices, the API is killed.
        var answeredBefore: [String: String] = [:]
        let reLeased = await eventually(TestTimeouts.command) {
            guard let (code, report) = try? await Self.api(serve, "GET", "queues/\(queue)/report"), code == 200 else {
                return false
            }
            let answered = Self.verdicts(report).filter { $0["device"] != nil }
            answeredBefore = Dictionary(
                answered.map { (Self.key($0), ($0["device"] as? [String: Any])?["name"] as? String ?? "") },
                uniquingKeysWith: { a, _ in a })
            return deadCells.allSatisfy { answeredBefore[$0] != nil }
        }
        try #require(reLeased, "the killed devices' cells were never answered by another device")
        for cell in deadCells {
            #expect(!["device-7", "device-8"].contains(answeredBefore[cell]), "\(cell): \(answeredBefore)")
        }
        #expect(
            answeredBefore.count < toAnswer,
            "the restart comes mid-run: \(answeredBefore.count) of \(toAnswer) answered")
        serve.process.terminate()

        serve = try await Self.startServe(folder, 2)
        processes.append(serve.process)
        try Self.writeAPIFile(apiFile, serve, queue: queue)
        let (code, afterRestart) = try await Self.api(serve, "GET", "queues/\(queue)/report")
        try #require(code == 200, "\(afterRestart)")
        let kept = Dictionary(
            Self.verdicts(afterRestart).filter { $0["device"] != nil }
                .map { (Self.key($0), ($0["device"] as? [String: Any])?["name"] as? String ?? "") },
            uniquingKeysWith: { a, _ in a })
        for (cell, name) in answeredBefore {
            #expect(kept[cell] == name, "\(cell) answered by \(name) before the restart: lost")
        }

        // Every live device runs to the end of the queue.
        let ended = await eventually(TestTimeouts.catalogue) { live.allSatisfy { !$0.isRunning } }
        let logs = (1...6).map {
            (try? String(contentsOf: folder.appendingPathComponent("device-\($0).out"), encoding: .utf8)) ?? ""
        }
        try #require(ended, "devices still running: \(logs)")
        for (i, p) in live.enumerated() { #expect(p.exitStatus == 0, "device-\(i + 1): \(logs[i])") }

        let (_, status) = try await Self.api(serve, "GET", "queues/\(queue)")
        #expect(status["finished"] as? Bool == true, "\(status)")
        #expect(
            (status["disagreements"] as? [Any])?.isEmpty == true,
            "no cell was answered twice: \(status["disagreements"] ?? "")")
        let reportFile = folder.appendingPathComponent("queue-report.json")
        let raw = await ChildProcess.run(
            [
                "curl", "-s", "-f", "-o", reportFile.path, "-H", "Authorization: Bearer \(serve.token)",
                serve.url + "queues/\(queue)/report",
            ], timeout: .seconds(40))
        #expect(raw.status == 0, "\(raw.output)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: reportFile)) as? [String: Any])
        let verdicts = Self.verdicts(report)
        #expect(verdicts.count == expected.count, "one verdict per cell: \(verdicts.count) of \(expected.count)")
        #expect(Set(verdicts.map(Self.key)).count == verdicts.count, "no cell twice")
        var differing: [String] = []
        for v in verdicts where expected[Self.key(v)] != v["verdict"] as? String {
            differing.append(
                "\(Self.key(v)): \(v["verdict"] ?? "") (device queue) vs \(expected[Self.key(v)] ?? "absent") (pinlab check)"
            )
        }
        #expect(differing.isEmpty, "\(differing)")
        let devices = Set(verdicts.compactMap { ($0["device"] as? [String: Any])?["name"] as? String })
        #expect(devices.isSubset(of: Set((1...6).map { "device-\($0)" })), "only live devices answered: \(devices)")
        #expect(verdicts.filter { $0["device"] != nil }.count == toAnswer)
        #expect(report["client"] as? String == "curl")

        // It is a check report by the schema `pinlab check --print-schema json` prints (the device field included).
        if await ChildProcess.run(["python3", "-c", "import jsonschema"], timeout: .seconds(20)).status == 0
            || Tool.inCI
        {
            let schema = folder.appendingPathComponent("check-report.schema.json")
            try (try await CLI.run(["check", "--print-schema", "json"])).stdout.write(
                to: schema, atomically: true, encoding: .utf8)
            let v = await ChildProcess.run(
                [
                    "python3", "-c",
                    "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
                    reportFile.path, schema.path,
                ], timeout: .seconds(30))
            #expect(v.status == 0, "\(v.output)")
        }

        // `pinlab report` renders it like any check report: as text, and as a site.
        let rendered = try await CLI.run(["report", "merge", reportFile.path])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.stdout.contains("curl") && rendered.stdout.contains("conforms"), "\(rendered.stdout)")
        let site = folder.appendingPathComponent("site")
        let siteRun = try await CLI.run(["report", "site", reportFile.path, "--out", site.path])
        #expect(siteRun.status == 0, "\(siteRun.stderr)")
        #expect(FileManager.default.fileExists(atPath: site.appendingPathComponent("index.html").path))

        let (deleted, _) = try await Self.api(serve, "DELETE", "queues/\(queue)")
        #expect(deleted == 200)
    }

    /// Four devices that run the Python batch harness (Examples/Batch/python/pinlab_batch.py) on each cell they lease
    /// (Tests/Devices/harness_device.sh) answer every cell as the harness does in one `pinlab check --batch` run.
    @Test(.requires("curl", "jq", "bash", "python3"))
    func harnessDevicesEqualTheHarnessInOneProcess() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let harness = repository.appendingPathComponent("Examples/Batch/python/pinlab_batch.py").path
        let wrapper = repository.appendingPathComponent("Tests/Devices/harness_device.sh").path
        let scenarios = ["baseline", "rekey", "intercepting-proxy"]
        let folder = TestScratch.root.appendingPathComponent("pinlab-harness-devices-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        let check = try await CLI.run(
            ["check", "--batch", "--scenarios", scenarios.joined(separator: ","), "--format", "json"]
                + CLI.dirArgs + ["--", "python3", harness])
        #expect(check.status == 0, "\(check.stderr)")
        let oneProcess = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        let client = try #require(oneProcess["client"] as? String)
        let expected = Dictionary(
            uniqueKeysWithValues: Self.verdicts(oneProcess).map { (Self.key($0), $0["verdict"] as? String ?? "") })
        #expect(expected.count == scenarios.count * 2 * PinProfile.all.count)

        let serve = try await Self.startServe(folder, 1)
        var processes = [serve.process]
        defer { for p in processes { p.terminate() } }
        let body = try String(
            data: JSONSerialization.data(withJSONObject: ["client": client, "scenarios": scenarios, "leaseSeconds": 60]
            ),
            encoding: .utf8)
        let (created, queueObject) = try await Self.api(serve, "POST", "queues", json: body)
        try #require(created == 201, "\(queueObject)")
        let queue = try #require(queueObject["id"] as? String)
        let apiFile = folder.appendingPathComponent("api.sh")
        try Self.writeAPIFile(apiFile, serve, queue: queue)
        let devices = try (1...4).map { n in
            try ChildProcess.spawnBackground(
                [
                    "bash", wrapper, "python-device-\(n)", "Linux (Python ssl)", client, apiFile.path, "--", "python3",
                    harness,
                ],
                stdoutFile: folder.appendingPathComponent("device-\(n).out").path,
                stderrFile: folder.appendingPathComponent("device-\(n).err").path)
        }
        processes += devices
        let ended = await eventually(TestTimeouts.catalogue) { devices.allSatisfy { !$0.isRunning } }
        let logs = (1...4).map {
            (try? String(contentsOf: folder.appendingPathComponent("device-\($0).err"), encoding: .utf8)) ?? ""
        }
        try #require(ended, "devices still running: \(logs)")
        for (i, p) in devices.enumerated() { #expect(p.exitStatus == 0, "python-device-\(i + 1): \(logs[i])") }

        let (_, report) = try await Self.api(serve, "GET", "queues/\(queue)/report")
        let verdicts = Self.verdicts(report)
        #expect(verdicts.count == expected.count && Set(verdicts.map(Self.key)).count == verdicts.count)
        var differing: [String] = []
        for v in verdicts where expected[Self.key(v)] != v["verdict"] as? String {
            differing.append(
                "\(Self.key(v)): \(v["verdict"] ?? "") (device queue) vs \(expected[Self.key(v)] ?? "absent") (one process)"
            )
        }
        #expect(differing.isEmpty, "\(differing)")
        #expect(
            verdicts.allSatisfy { $0["device"] != nil || $0["verdict"] as? String == "unsupported" },
            "every cell answered by a device")
        let (deleted, _) = try await Self.api(serve, "DELETE", "queues/\(queue)")
        #expect(deleted == 200)
    }
}
