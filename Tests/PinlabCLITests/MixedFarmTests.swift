import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// A farm of devices of four real clients — curl, the OkHttp harness, the Go harness (crypto/tls) and the Node harness
/// (tls.connect) — pulling cells from one control API (`pinlab serve --control`), and `pinlab report site` drawing
/// the queues' reports by device and OS. The device scripts are Tests/Devices/curl_device.sh and harness_device.sh
/// (the Go, Node and OkHttp harnesses of Examples/Batch, run on each leased cell).
@Suite("pinlab serve --control: a farm of curl, OkHttp, Go and Node devices", .serialized)
struct MixedFarmTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static func path(_ relative: String) -> String { repository.appendingPathComponent(relative).path }
    static let curlDevice = path("Tests/Devices/curl_device.sh")
    static let harnessDevice = path("Tests/Devices/harness_device.sh")
    static let dyingHarness = path("Tests/Devices/dying_harness.sh")
    static let okhttpJars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]
    /// The bounded part of the catalogue the farm runs: 4 scenarios × 2 engines × 6 profiles = 48 cells a client, of
    /// which curl answers 24 (3 profiles), OkHttp 40 (5: SPKI pins only), Go and Node 48 each: 160 leases in all.
    static let scenarios = ["baseline", "rekey", "wrong-host", "intercepting-proxy"]

    /// One client of the farm: its one-process run and what its devices run on each leased cell.
    struct Kind {
        var name: String
        var os: String
        var profiles: [String]
        /// What follows `pinlab check --scenarios … --profiles …`: the command template, or `--batch` and the harness.
        var check: [String]
        /// The harness a device runs on each cell it leases (harness_device.sh); nil: curl_device.sh.
        var harness: [String]?
    }

    /// SIGKILL to a device's whole process group (the script, its heartbeat, its client), then reaped.
    static func stop(_ p: ChildProcess.Background) {
        kill(-p.pid, SIGKILL)
        p.terminate()
    }

    static func json(_ data: Data) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    static func device(_ v: [String: Any]) -> (name: String, os: String)? {
        guard let d = v["device"] as? [String: Any], let name = d["name"] as? String, let os = d["os"] as? String
        else { return nil }
        return (name, os)
    }

    @Test(
        "eight devices (2 curl, 2 OkHttp, 2 Go, 2 Node), two killed mid-lease: every queue's report equals its client's one-process run",
        .requires("curl", "jq", "bash", "javac", "java", "go", "node"),
        .requiresFile("/usr/share/java/okhttp.jar", package: "libokhttp-java"))
    func eightDevicesOfFourClientsTwoKilledEqualOneProcessRuns() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let folder = TestScratch.root.appendingPathComponent("pinlab-mixed-farm-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // The OkHttp and Go harnesses are compiled once; Node runs its source.
        let classes = folder.appendingPathComponent("classes")
        let cp = Self.okhttpJars.joined(separator: ":")
        let javac = await ChildProcess.run(
            ["javac", "-nowarn", "-cp", cp, "-d", classes.path, Self.path("Examples/Batch/okhttp/PinlabBatch.java")],
            timeout: TestTimeouts.compile)
        try #require(javac.status == 0, "javac: \(javac.output)")
        let goBinary = folder.appendingPathComponent("pinlab-batch-go").path
        let goBuild = await ChildProcess.run(
            ["sh", "-c", "cd \"$1\" && go build -o \"$2\" .", "sh", Self.path("Examples/Batch/go"), goBinary],
            timeout: TestTimeouts.compile)
        try #require(goBuild.status == 0, "go build: \(goBuild.output)")
        let java = [
            "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classes.path + ":" + cp, "PinlabBatch",
        ]
        let node = ["node", Self.path("Examples/Batch/node/pinlab_batch.mjs")]
        let every = PinProfile.all.map(\.rawValue)
        let kinds = [
            Kind(
                name: "curl", os: "Linux (curl)", profiles: ["none", "leaf-spki", "leaf-spki+backup"],
                check: [
                    "--", "curl", "-sf", "-o", "/dev/null", "--cacert", "{ca}", "[--pinnedpubkey {pins.curl}]", "{url}",
                ], harness: nil),
            Kind(
                name: "okhttp", os: "Linux (OkHttp 3 on the JDK)",
                profiles: ["none", "leaf-spki", "leaf-spki+backup", "intermediate-spki", "root-spki"],
                check: ["--batch", "--"] + java, harness: java),
            Kind(
                name: "go", os: "Linux (Go crypto/tls)", profiles: every, check: ["--batch", "--", goBinary],
                harness: [goBinary]),
            Kind(
                name: "node", os: "Linux (Node tls)", profiles: every, check: ["--batch", "--"] + node, harness: node),
        ]

        // The one-process run of each client: its cell → (verdict, claim), and its name in the report.
        var expected: [String: [String: String]] = [:]
        var client: [String: String] = [:]
        var toAnswer: [String: Int] = [:]
        for kind in kinds {
            let check = try await CLI.run(
                [
                    "check", "--scenarios", Self.scenarios.joined(separator: ","), "--profiles",
                    kind.profiles.joined(separator: ","), "--format", "json",
                ] + CLI.dirArgs + kind.check)
            #expect(check.status == 0, "\(kind.name) conforms on these scenarios in one process: \(check.stderr)")
            #expect(check.stderr.isEmpty, "\(kind.name): no harness problem: \(check.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
            let verdicts = DeviceQueueTests.verdicts(report)
            #expect(verdicts.count == Self.scenarios.count * 2 * PinProfile.all.count, "\(kind.name)")
            expected[kind.name] = Dictionary(
                uniqueKeysWithValues: verdicts.map {
                    (DeviceQueueTests.key($0), "\($0["verdict"] as? String ?? "") \($0["claim"] as? String ?? "-")")
                })
            client[kind.name] = try #require(report["client"] as? String)
            toAnswer[kind.name] = verdicts.filter { $0["verdict"] as? String != "skipped" }.count
            #expect(toAnswer[kind.name] == Self.scenarios.count * 2 * kind.profiles.count, "\(kind.name)")
        }
        #expect(client["curl"] == "curl", "curl_device.sh leases for the client curl")
        #expect(Set(client.values).count == kinds.count, "one queue, one client name each: \(client)")
        let oneProcessSeconds = (clock.now - started) / .seconds(1)

        // One control API, a queue per client.
        let serve = try await DeviceQueueTests.startServe(folder, 1)
        defer { serve.process.terminate() }
        var queue: [String: String] = [:]
        var apiFile: [String: URL] = [:]
        for kind in kinds {
            // Leases of 10 s: a live device renews its lease every second while it works (a JVM per cell on a loaded
            // machine takes seconds), and a dead device's cell goes back to the queue 10 s after its last renewal.
            let body = try String(
                data: JSONSerialization.data(withJSONObject: [
                    "client": client[kind.name] ?? "", "scenarios": Self.scenarios, "profiles": kind.profiles,
                    "leaseSeconds": 10, "maxLeases": 16,
                ]), encoding: .utf8)
            let (created, object) = try await DeviceQueueTests.api(serve, "POST", "queues", json: body)
            try #require(created == 201, "\(kind.name): \(object)")
            queue[kind.name] = try #require(object["id"] as? String)
            let file = folder.appendingPathComponent("api-\(kind.name).sh")
            try DeviceQueueTests.writeAPIFile(file, serve, queue: queue[kind.name] ?? "")
            apiFile[kind.name] = file
        }

        var devices: [ChildProcess.Background] = []
        defer { for d in devices { Self.stop(d) } }
        func start(_ kind: Kind, _ name: String, dyingMarker: URL? = nil) throws -> ChildProcess.Background {
            let api = apiFile[kind.name]?.path ?? ""
            var args: [String]
            if let harness = kind.harness {
                args = ["bash", Self.harnessDevice, name, kind.os, client[kind.name] ?? "", api, "--"]
                args += dyingMarker.map { ["bash", Self.dyingHarness, $0.path] + harness } ?? harness
            } else {
                args =
                    ["bash", Self.curlDevice, name, kind.os, api]
                    + (dyingMarker.map { ["die", $0.path] } ?? ["normal"])
            }
            let d = try ChildProcess.spawnBackground(
                args, stdoutFile: folder.appendingPathComponent("\(name).out").path,
                stderrFile: folder.appendingPathComponent("\(name).err").path, newProcessGroup: true)
            devices.append(d)
            return d
        }

        // A Go and a Node device lease a cell each, run their client on it (its server sees the connection) and are
        // killed before they answer: their leases expire and their cells go back to the queue.
        let doomed = [("go", "go-2"), ("node", "node-2")]
        let markers = doomed.map { folder.appendingPathComponent("\($0.1).lease.json") }
        let dying = try zip(doomed, markers).map { d, marker in
            try start(try #require(kinds.first { $0.name == d.0 }), d.1, dyingMarker: marker)
        }
        let leased = await eventually(TestTimeouts.startup) {
            markers.allSatisfy { FileManager.default.fileExists(atPath: $0.path) }
        }
        try #require(leased, "the doomed devices never got a lease")
        for d in dying { Self.stop(d) }
        var deadCells: [String: String] = [:]
        for ((kind, _), marker) in zip(doomed, markers) {
            let cells = Self.json(try Data(contentsOf: marker))["cells"] as? [[String: Any]]
            deadCells[kind] = try #require(cells?.first?["id"] as? String)
        }

        // The six live devices run to the end of their queues.
        let live =
            [("curl", "curl-1"), ("curl", "curl-2"), ("okhttp", "okhttp-1"), ("okhttp", "okhttp-2")]
            + [("go", "go-1"), ("node", "node-1")]
        let running = try live.map { k, name in try start(try #require(kinds.first { $0.name == k }), name) }
        let ended = await eventually(TestTimeouts.catalogue) { running.allSatisfy { !$0.isRunning } }
        let logs = live.map {
            "\($0.1): "
                + ((try? String(contentsOf: folder.appendingPathComponent("\($0.1).err"), encoding: .utf8)) ?? "")
        }
        try #require(ended, "devices still running: \(logs)")
        for (d, log) in zip(running, logs) { #expect(d.exitStatus == 0, "\(log)") }
        let farmSeconds = (clock.now - started) / .seconds(1) - oneProcessSeconds

        // Every queue: finished, nothing judged twice, nothing lost, cell for cell its client's one-process run.
        var reportFiles: [String] = []
        var answeredTotal = 0
        for kind in kinds {
            let id = queue[kind.name] ?? ""
            let (_, status) = try await DeviceQueueTests.api(serve, "GET", "queues/\(id)")
            #expect(status["finished"] as? Bool == true, "\(kind.name): \(status)")
            #expect(
                (status["disagreements"] as? [Any])?.isEmpty == true,
                "\(kind.name): no cell answered twice: \(status["disagreements"] ?? "")")
            let (code, report) = try await DeviceQueueTests.api(serve, "GET", "queues/\(id)/report")
            try #require(code == 200, "\(report)")
            let verdicts = DeviceQueueTests.verdicts(report)
            let want = expected[kind.name] ?? [:]
            #expect(
                verdicts.count == want.count, "\(kind.name): one verdict per cell: \(verdicts.count) of \(want.count)")
            #expect(Set(verdicts.map(DeviceQueueTests.key)).count == verdicts.count, "\(kind.name): no cell twice")
            var differing: [String] = []
            for v in verdicts {
                let got = "\(v["verdict"] as? String ?? "") \(v["claim"] as? String ?? "-")"
                if want[DeviceQueueTests.key(v)] != got {
                    differing.append(
                        "\(DeviceQueueTests.key(v)): \(got) (devices) vs \(want[DeviceQueueTests.key(v)] ?? "absent") (one process)"
                    )
                }
            }
            #expect(differing.isEmpty, "\(kind.name): \(differing)")
            let answered = verdicts.filter { Self.device($0) != nil }
            #expect(answered.count == toAnswer[kind.name], "\(kind.name): every cell to run answered by a device")
            answeredTotal += answered.count
            let names = Set(answered.compactMap { Self.device($0)?.name })
            let liveNames = Set(live.filter { $0.0 == kind.name }.map(\.1))
            #expect(names.isSubset(of: liveNames), "\(kind.name): only live devices answered: \(names)")
            #expect(answered.allSatisfy { Self.device($0)?.os == kind.os })
            if let dead = deadCells[kind.name] {
                let v = verdicts.first { DeviceQueueTests.key($0) == dead }
                #expect(
                    v.flatMap(Self.device).map { liveNames.contains($0.name) } == true,
                    "\(kind.name): the killed device's cell \(dead) was answered by a live device: \(v ?? [:])")
            }
            let file = folder.appendingPathComponent("queue-\(kind.name).json")
            try JSONSerialization.data(withJSONObject: report).write(to: file)
            reportFiles.append(file.path)
        }
        #expect(answeredTotal == 160)

        // `pinlab report site` draws the four queues by device and OS, and every row adds up.
        let site = folder.appendingPathComponent("site")
        let siteRun = try await CLI.run(["report", "site"] + reportFiles + ["--out", site.path])
        #expect(siteRun.status == 0, "\(siteRun.stderr)")
        try Self.expectDeviceTables(site, reports: reportFiles)
        print(
            "mixed farm: one-process runs \(String(format: "%.1f", oneProcessSeconds)) s, devices \(String(format: "%.1f", farmSeconds)) s, in all \(String(format: "%.1f", (clock.now - started) / .seconds(1))) s"
        )
    }

    /// `pinlab report site` on a device queue's report: the index's table by device and by OS and `devices.html`
    /// (device × scenario) count each device's cells as the report's verdicts do, and every row adds up. Two curl
    /// devices on two OSes answer a queue that includes `intermediate-spki`, which curl (leaf pins only) fails, so
    /// the deviating column is not all zeros.
    @Test(.requires("curl", "jq", "bash"))
    func reportSiteDrawsTheMatrixByDevice() async throws {
        let folder = TestScratch.root.appendingPathComponent("pinlab-device-site-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let serve = try await DeviceQueueTests.startServe(folder, 1)
        defer { serve.process.terminate() }
        let body = try String(
            data: JSONSerialization.data(withJSONObject: [
                "client": "curl", "scenarios": ["baseline", "wrong-host", "rekey"],
                "profiles": ["none", "leaf-spki", "intermediate-spki"], "leaseSeconds": 30,
            ]), encoding: .utf8)
        let (created, object) = try await DeviceQueueTests.api(serve, "POST", "queues", json: body)
        try #require(created == 201, "\(object)")
        let queue = try #require(object["id"] as? String)
        let apiFile = folder.appendingPathComponent("api.sh")
        try DeviceQueueTests.writeAPIFile(apiFile, serve, queue: queue)
        var devices: [ChildProcess.Background] = []
        defer { for d in devices { Self.stop(d) } }
        for (name, os) in [("phone-1", "Android 15 (curl)"), ("phone-2", "iOS 18 (curl)")] {
            devices.append(
                try ChildProcess.spawnBackground(
                    ["bash", Self.curlDevice, name, os, apiFile.path, "normal"],
                    stdoutFile: folder.appendingPathComponent("\(name).out").path,
                    stderrFile: folder.appendingPathComponent("\(name).err").path, newProcessGroup: true))
        }
        let ended = await eventually(TestTimeouts.catalogue) { devices.allSatisfy { !$0.isRunning } }
        try #require(ended, "the devices never finished the queue")
        let (code, report) = try await DeviceQueueTests.api(serve, "GET", "queues/\(queue)/report")
        try #require(code == 200, "\(report)")
        let verdicts = DeviceQueueTests.verdicts(report)
        #expect(verdicts.filter { Self.device($0) != nil }.count == 18, "3 scenarios × 2 engines × 3 profiles")
        #expect(
            verdicts.contains { $0["verdict"] as? String == "fail" },
            "curl pins the leaf only: intermediate-spki deviates")
        let file = folder.appendingPathComponent("queue.json")
        try JSONSerialization.data(withJSONObject: report).write(to: file)
        let site = folder.appendingPathComponent("site")
        let run = try await CLI.run(["report", "site", file.path, "--out", site.path])
        #expect(run.status == 0, "\(run.stderr)")
        try Self.expectDeviceTables(site, reports: [file.path])
    }

    /// The text of each body row of the table `id` in `html`, cell by cell, tags stripped.
    static func rows(_ html: String, table id: String) -> [[String]] {
        guard let start = html.range(of: "<table class=\"grid\" id=\"\(id)\">"),
            let end = html.range(of: "</table>", range: start.upperBound..<html.endIndex),
            let body = html.range(of: "<tbody>", range: start.upperBound..<end.lowerBound)
        else { return [] }
        let table = String(html[body.upperBound..<end.lowerBound])
        return table.components(separatedBy: "</tr>").dropLast().map { row in
            row.components(separatedBy: "</td>").dropLast().map { cell in
                cell.replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
    }

    /// Checks the site's device tables against the reports' verdicts: a row per device and client with its counts
    /// (cells = as expected + deviating + policy + stricter), a row per OS that sums its devices, and a device ×
    /// scenario row per device whose scenario cells add up to the device's cells.
    static func expectDeviceTables(_ site: URL, reports: [String]) throws {
        // What the reports say, per device and client: cells, as expected, deviating.
        var want: [String: [Int]] = [:]
        var osOf: [String: String] = [:]
        for path in reports {
            let report = json(try Data(contentsOf: URL(fileURLWithPath: path)))
            let client = report["client"] as? String ?? ""
            for v in DeviceQueueTests.verdicts(report) {
                guard let d = device(v) else { continue }
                let status = v["verdict"] as? String ?? ""
                var counts = want["\(d.name) \(client)", default: [0, 0, 0]]
                counts[0] += 1
                if status == "pass" { counts[1] += 1 }
                if ["fail", "disagree", "error"].contains(status) { counts[2] += 1 }
                want["\(d.name) \(client)"] = counts
                osOf[d.name] = d.os
            }
        }
        let total = want.values.reduce(0) { $0 + $1[0] }
        #expect(total > 0)
        let index = try String(contentsOf: site.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(index.contains("<h2 id=\"devices\">Devices</h2>") && index.contains("href=\"devices.html\""))

        // By device: device, OS, client, cells, as expected, deviating, another reason, policy, stricter.
        let byDevice = rows(index, table: "by-device")
        #expect(byDevice.count == want.count, "a row per device and client: \(byDevice)")
        var cellsOfOS: [String: Int] = [:]
        for row in byDevice {
            let n = row.dropFirst(3).compactMap { Int($0) }
            guard row.count == 9, n.count == 6 else {
                Issue.record("a device row of 9 cells: \(row)")
                continue
            }
            #expect(n[0] == n[1] + n[2] + n[4] + n[5], "a device row that does not add up: \(row)")
            #expect(n[3] <= n[1], "refused for another reason is a part of as expected: \(row)")
            #expect(Array(n[0...2]) == want["\(row[0]) \(row[2])"], "\(row) vs the report: \(want)")
            #expect(osOf[row[0]] == row[1], "\(row)")
            cellsOfOS[row[1], default: 0] += n[0]
        }
        #expect(byDevice.compactMap { Int($0.count > 3 ? $0[3] : "") }.reduce(0, +) == total)

        // By OS: OS, devices, cells, …; each sums its devices' rows.
        let byOS = rows(index, table: "by-os")
        #expect(byOS.count == Set(osOf.values).count, "a row per OS: \(byOS)")
        for row in byOS {
            let n = row.dropFirst(1).compactMap { Int($0) }
            guard row.count == 8, n.count == 7 else {
                Issue.record("an OS row of 8 cells: \(row)")
                continue
            }
            #expect(n[0] == osOf.values.filter { $0 == row[0] }.count, "devices on \(row[0]): \(row)")
            #expect(n[1] == cellsOfOS[row[0]], "\(row[0]): its devices' cells \(cellsOfOS)")
            #expect(n[1] == n[2] + n[3] + n[5] + n[6], "an OS row that does not add up: \(row)")
        }
        #expect(byOS.compactMap { Int($0.count > 2 ? $0[2] : "") }.reduce(0, +) == total)

        // devices.html: device × scenario; each row's scenario cells ("✓ n", "✗ d/n") add up to its cells.
        let page = try String(contentsOf: site.appendingPathComponent("devices.html"), encoding: .utf8)
        let links = page.components(separatedBy: "href=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        #expect(links.contains("style.css") && links.contains { $0.hasPrefix("scenarios/") })
        for link in links {
            #expect(
                FileManager.default.fileExists(atPath: site.appendingPathComponent(link).path),
                "devices.html: \(link) does not resolve")
        }
        let matrix = rows(page, table: "device-scenarios")
        #expect(matrix.count == want.count, "\(matrix)")
        for row in matrix where row.count > 6 {
            let scenarioCells = row.dropFirst(3).dropLast(3)
            var cells = 0
            var deviating = 0
            for c in scenarioCells where !c.isEmpty {
                let numbers = c.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
                if c.hasPrefix("✗"), numbers.count == 2 {
                    deviating += numbers[0]
                    cells += numbers[1]
                } else if c.hasPrefix("✓"), numbers.count == 1 {
                    cells += numbers[0]
                } else {
                    Issue.record("a device × scenario cell that is neither ✓ n nor ✗ d/n: \(c)")
                }
            }
            let n = row.suffix(3).compactMap { Int($0) }
            #expect(n.count == 3 && n[0] == cells && n[2] == deviating, "\(row)")
            #expect(n.count == 3 && [n[0], n[1], n[2]] == want["\(row[0]) \(row[2])"], "\(row) vs \(want)")
        }
    }
}
