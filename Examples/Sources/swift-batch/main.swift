// The Swift batch harness as a program.
//
//   pinlab check --batch -- Examples/.build/debug/swift-batch     the harness as a command: the document from
//                                                                 $PINLAB_BATCH (or standard input), one answer line
//                                                                 per cell on standard output
//   swift-batch --in-process [--runs N] [--dir PKI]               PinningLab's runner and the harness in one process:
//                                                                 the whole catalogue on both engines, N times; prints
//                                                                 each run's summary and the median (the benchmark)
import Foundation
import PinningLab
import SwiftBatchHarness

let args = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    args.firstIndex(of: name).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil }
}

if args.first == "--in-process" {
    let runs = Int(option("--runs") ?? "1") ?? 1
    let pki =
        try option("--dir").map { try Lab.pki(directory: URL(fileURLWithPath: $0, isDirectory: true)) } ?? Lab.pki()
    let runner = CheckRunner(pki: pki, catalogue: try Catalogue.bundled())
    var seconds: [Double] = []
    var deviates = false
    for _ in 0..<runs {
        let run = try await runner.runBatch(
            .inProcess(name: "swift-nio-ssl (batch)") { document in
                let lines = (try? await SwiftBatchHarness.answers(for: try document.jsonData())) ?? []
                return lines.compactMap { try? JSONDecoder().decode(BatchResult.self, from: Data($0.utf8)) }
            })
        print(run.report.summaryLine)
        for p in run.problems { print("problem: \(p)") }
        seconds.append(run.report.durationSeconds)
        deviates = deviates || run.deviates
    }
    let sorted = seconds.sorted()
    print(String(format: "median of %d runs: %.3f s", runs, sorted[sorted.count / 2]))
    exit(deviates ? 1 : 0)
}

let path = ProcessInfo.processInfo.environment["PINLAB_BATCH"]
let json =
    try path.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } ?? FileHandle.standardInput.readDataToEndOfFile()
for line in try await SwiftBatchHarness.answers(for: json) { print(line) }
