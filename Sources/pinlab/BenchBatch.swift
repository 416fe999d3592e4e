import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI

extension BenchCommand {
    struct Batch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The whole catalogue with clients that are slow to start: per-cell command templates vs --batch.",
            discussion: """
                Side by side in one run, on both engines: the OkHttp harness (Examples/Batch/okhttp) per cell and in \
                one JVM, the Python harness (Examples/Batch/python) per cell and in one process, and — when \
                --swift-batch names the built Examples/.build/…/swift-batch — the Swift harness in the runner's own \
                process. Prints every run, the medians and the ratios. OkHttp runs without leaf-cert (it pins SPKIs only).
                Run from the repository root: swift run -c release pinlab bench batch --swift-batch Examples/.build/release/swift-batch
                """)
        @Option(help: "Repetitions of each batch measurement.") var runs = 5
        @Option(help: "Repetitions of each per-cell measurement (a per-cell OkHttp run takes minutes).")
        var perCellRuns = 1
        @Option(help: "Cells at a time in per-cell runs.") var jobs = 2
        @OptionGroup var pkiFolder: PKIFolder
        @Option(help: "Examples/Batch of this repository.") var harnesses = "Examples/Batch"
        @Option(help: "The built swift-batch executable of the Examples package (skipped when absent).") var swiftBatch:
            String?
        @Option(
            help:
                "JVM options of both OkHttp runs (per cell and batch): a short-lived JVM spends less CPU with C1 alone and the serial collector."
        )
        var jvmOptions = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        @Option(help: "Scenario ids to run (comma-separated); default: the whole catalogue.") var scenarios: String?

        func validate() throws { _ = try parseScenarioList(scenarios) }

        func run() async throws {
            // A folder of this run's own (random name, 0700): a predictable one could be planted with classes or
            // scripts that the benchmark would then run.
            let work = try ScratchFolders.make("pinlab-bench-batch")
            defer { ScratchFolders.remove(work) }
            let pki = await pkiFolder.open()
            let runner = CheckRunner(pki: pki, catalogue: try Catalogue.bundled())
            let cp = "\(work.path):/usr/share/java/okhttp.jar:/usr/share/java/okio.jar"
            let javac = try timedProcess(["javac", "-cp", cp, "-d", work.path, "\(harnesses)/okhttp/PinlabBatch.java"])
            guard javac.status == 0 else { fail("javac failed (is libokhttp-java installed?)") }
            let java = ["java"] + jvmOptions.split(separator: " ").map(String.init) + ["-cp", cp, "PinlabBatch"]
            let python = ["python3", "\(harnesses)/python/pinlab_batch.py"]
            let only = try parseScenarioList(scenarios) ?? []
            let okhttpProfiles: Set<PinProfile> = [.none, .leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI]

            struct Row {
                var name: String
                var seconds: [Double] = []
                var summary = ""
            }
            var rows = [
                Row(name: "OkHttp, per-cell template (one JVM per cell, --jobs \(jobs))"),
                Row(name: "OkHttp, --batch (one JVM)"),
                Row(name: "Python ssl, per-cell template (--jobs \(jobs))"),
                Row(name: "Python ssl, --batch (one process)"),
                Row(name: "Swift swift-nio-ssl, in-process batch"),
            ]
            func perCell(_ args: [String], _ profiles: Set<PinProfile>?) async throws -> CheckReport {
                let template = try CommandTemplate(args)
                return try await runner.run(
                    .command(CommandClient(template: template, timeout: .seconds(120))),
                    options: CheckOptions(profiles: profiles, scenarios: only, jobs: jobs, timeout: .seconds(120)))
            }
            func batch(_ args: [String], _ profiles: Set<PinProfile>?) async throws -> CheckReport {
                let r = try await runner.runBatch(
                    .command(name: nil, arguments: args), options: CheckOptions(profiles: profiles, scenarios: only))
                if !r.problems.isEmpty { fail("harness problems: \(r.problems.joined(separator: "; "))") }
                return r.report
            }
            func record(_ i: Int, _ report: CheckReport, wall: Double) {
                rows[i].seconds.append(wall)
                rows[i].summary = report.summary.line
                print(String(format: "%@: %.2f s (%@)", rows[i].name, wall, report.summary.line))
            }
            for round in 0..<max(runs, perCellRuns) {
                if round < perCellRuns {
                    var t = ContinuousClock.now
                    var r = try await perCell(
                        java + [
                            "--cell", "{url}", "{ca}", "--ip", "{ip}", "[--pins {pins.okhttp}]",
                            "[--pin-domain {pins.domain}]", "[--pin-subdomains {pins.subdomains}]",
                            "[--p12 {client.p12}]",
                            "[--password {client.password}]",
                        ], okhttpProfiles)
                    record(0, r, wall: seconds(ContinuousClock.now - t))
                    t = ContinuousClock.now
                    r = try await perCell(
                        python + [
                            "--cell", "{url}", "{ca}", "{profile}", "[--pins {pins}]",
                            "[--cert {client.cert}]", "[--key {client.key}]", "[--pin-domain {pins.domain}]",
                            "[--pin-subdomains {pins.subdomains}]",
                        ], nil)
                    record(2, r, wall: seconds(ContinuousClock.now - t))
                }
                if round < runs {
                    var t = ContinuousClock.now
                    var r = try await batch(java, okhttpProfiles)
                    record(1, r, wall: seconds(ContinuousClock.now - t))
                    t = ContinuousClock.now
                    r = try await batch(python, nil)
                    record(3, r, wall: seconds(ContinuousClock.now - t))
                    if let swiftBatch, FileManager.default.isExecutableFile(atPath: swiftBatch) {
                        let p = try timedProcess([swiftBatch, "--in-process", "--dir", pkiFolder.dir])
                        if let line = p.out.split(separator: "\n").first(where: { $0.contains(" cells: ") }) {
                            let secs = line.split(separator: "—").last.flatMap {
                                Double($0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: " s", with: ""))
                            }
                            rows[4].seconds.append(secs ?? .nan)
                            rows[4].summary = String(line)
                            print("\(rows[4].name): \(line)")
                        }
                    }
                }
            }
            func f(_ xs: [Double]) -> String { xs.isEmpty ? "n/a" : String(format: "%.2f s", median(xs)) }
            func ratio(_ slow: [Double], _ fast: [Double]) -> String {
                slow.isEmpty || fast.isEmpty ? "" : String(format: "%.1f× faster", median(slow) / median(fast))
            }
            print(
                "\nMachine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(loadAverage()). \(only.isEmpty ? "Whole catalogue" : "\(only.count) scenarios"), both engines. Medians of \(runs) batch and \(perCellRuns) per-cell runs. JVM: \(java.joined(separator: " "))\n"
            )
            print(
                table([
                    ["measurement", "median", "vs per-cell", "cells"],
                    [rows[0].name, f(rows[0].seconds), "", rows[0].summary],
                    [rows[1].name, f(rows[1].seconds), ratio(rows[0].seconds, rows[1].seconds), rows[1].summary],
                    [rows[2].name, f(rows[2].seconds), "", rows[2].summary],
                    [rows[3].name, f(rows[3].seconds), ratio(rows[2].seconds, rows[3].seconds), rows[3].summary],
                    [
                        rows[4].name + " (runner time, reported by swift-batch)", f(rows[4].seconds), "",
                        rows[4].seconds.isEmpty ? "not run (--swift-batch)" : "",
                    ],
                ]), terminator: "")
        }
    }
}

private func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(
        separator: " ")
}

private func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
