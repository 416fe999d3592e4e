import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure PinningLab side by side with the tools people use instead; prints medians and ratios.",
        subcommands: [PKI.self, Batch.self, Intercept.self]
    )
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let t = DispatchTime.now().uptimeNanoseconds
    let c = cpuMilliseconds()
    try body()
    lastCPU = cpuMilliseconds() - c
    return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6
}

/// CPU time (user + system, all threads) of this process, in ms.
func cpuMilliseconds() -> Double {
    var u = rusage()
    #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &u)
    #else
        getrusage(RUSAGE_SELF, &u)
    #endif
    return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000 + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000
}

/// The CPU time of the last `milliseconds` measurement.
nonisolated(unsafe) var lastCPU: Double = 0  // only touched by the benchmark's one thread

/// Runs a command to completion; returns its wall time in ms and its standard output.
func timedProcess(_ args: [String]) throws -> (ms: Double, out: String, status: Int32) {
    let r = ChildProcess.runBlocking(args, timeout: .seconds(600))
    return (r.milliseconds, r.stdoutText, r.status)
}

extension BenchCommand {
    struct PKI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lab PKI generation: pinlab vs trustme (in-process and whole process) vs an openssl CLI script.",
            discussion: """
                Every tool builds the same tree of P-256 certificates (the lab PKI with every key made P-256).
                Run from the repository root with a release build: swift run -c release pinlab bench pki
                Needs python3 with trustme (pip install trustme) and the openssl CLI; a missing tool is skipped.
                """)
        @Option(help: "Repetitions of each in-process measurement.") var runs = 15
        @Option(help: "Repetitions of each whole-process measurement (the openssl script gets a third).")
        var processRuns = 9
        @Option(help: "Folder holding trustme_lab.py and openssl_lab.sh.") var scripts = "Benchmarks/pki"

        func run() async throws {
            // A folder of this run's own (random name, 0700): a predictable one could be planted with classes or
            // scripts that the benchmark would then run.
            let work = try ScratchFolders.make("pinlab-bench")
            defer { ScratchFolders.remove(work) }

            // The lab spec with every key P-256 (SHA-1 needs RSA, so that one leaf is signed with SHA-256 here).
            var text = try String(contentsOf: Lab.builtInSpecURL, encoding: .utf8)
            for t in ["rsa1024", "rsa2048", "rsa3072", "rsa4096", "ed25519", "p384"] {
                text = text.replacingOccurrences(of: "keyType: \(t)", with: "keyType: p256")
            }
            text = text.replacingOccurrences(of: "signature: sha1", with: "")
            let specURL = work.appendingPathComponent("lab-p256.yaml")
            try text.write(to: specURL, atomically: true, encoding: .utf8)
            let spec = try PKISpec.load(contentsOf: specURL)
            let shapeJSON = work.appendingPathComponent("shape.json")
            let jsonShape = spec.entities.map { e -> [String: Any] in
                ["name": e.name, "role": e.role.rawValue, "issuer": e.issuer, "hosts": e.hosts]
            }
            try JSONSerialization.data(withJSONObject: jsonShape).write(to: shapeJSON)
            let shapeTSV = work.appendingPathComponent("shape.tsv")
            try spec.entities.map { "\($0.name)\t\($0.role)\t\($0.issuer)\t\($0.hosts.joined(separator: ","))" }.joined(
                separator: "\n"
            )
            .appending("\n").write(to: shapeTSV, atomically: true, encoding: .utf8)
            let keys = Set(spec.entities.map(\.keyName)).count
            print(
                "Lab PKI, all P-256: \(spec.entities.count) certificates, \(keys) keys (pinlab shares keys between generations; the others make one key per certificate)."
            )
            print(
                "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores. Medians of \(runs) in-process and \(processRuns) whole-process runs.\n"
            )

            // pinlab in process, with the options library users get (client .p12 written, leaf .p12 on demand).
            var cold: [Double] = []
            var warm: [Double] = []
            var load: [Double] = []
            var warmAllP12: [Double] = []
            var coldCPU: [Double] = []
            var warmCPU: [Double] = []
            var coldFiles: [Double] = []
            var coldFilesCPU: [Double] = []
            for i in 0..<runs {
                let dir = work.appendingPathComponent("inproc-\(i)")
                let options = Lab.libraryPKIOptions(directory: dir)
                cold.append(try milliseconds { _ = try LabPKI.open(spec: spec, options: options) })
                coldCPU.append(lastCPU)
                var again = options
                again.reissue = true
                warm.append(try milliseconds { _ = try LabPKI.open(spec: spec, options: again) })
                warmCPU.append(lastCPU)
                load.append(try milliseconds { _ = try LabPKI.open(spec: spec, options: options) })
                var all = Lab.pkiOptions(directory: dir)
                all.reissue = true
                warmAllP12.append(try milliseconds { _ = try LabPKI.open(spec: spec, options: all) })
                // Cold again, writing every identity's files as trustme writes its PEM files (no .p12), in a folder
                // of its own. Nothing is removed until every run is over (trustme's runs remove nothing either): on
                // ext4, files created just after hundreds were deleted pay for the allocator's skipping of the
                // recently deleted inodes (`recently_deleted` under `open` in `perf record -g`, when this loop
                // removed its folders: ~60 % of this process's CPU samples), which measures the previous run's
                // `rm -rf`, not the writes.
                var files = Lab.libraryPKIOptions(directory: work.appendingPathComponent("files-\(i)"))
                files.writeIdentityFiles = true
                coldFiles.append(try milliseconds { _ = try LabPKI.open(spec: spec, options: files) })
                coldFilesCPU.append(lastCPU)
            }
            // The real lab spec (RSA, Ed25519, P-384 keys included), warm.
            var warmFull: [Double] = []
            do {
                let dir = work.appendingPathComponent("inproc-full")
                var o = Lab.libraryPKIOptions(directory: dir)
                let full = try Lab.builtInSpec()
                _ = try LabPKI.open(spec: full, options: o)
                o.reissue = true
                for _ in 0..<runs { warmFull.append(try milliseconds { _ = try LabPKI.open(spec: full, options: o) }) }
            }

            // trustme in process.
            var trustmeIn: [Double] = []
            var trustmeCPU: [Double] = []
            let trustmeScript = "\(scripts)/trustme_lab.py"
            let haveTrustme =
                (try? timedProcess(["python3", "-c", "import trustme"]).status) == 0
                && FileManager.default.fileExists(atPath: trustmeScript)
            if haveTrustme {
                let r = try timedProcess([
                    "python3", trustmeScript, shapeJSON.path, work.appendingPathComponent("trustme-in").path, "\(runs)",
                ])
                let lines = r.out.split(separator: "\n").map { $0.split(separator: " ").compactMap { Double($0) } }
                trustmeIn = lines.compactMap(\.first)
                trustmeCPU = lines.compactMap { $0.count > 1 ? $0[1] : nil }
            }

            // Whole processes.
            let me = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
            var pinlabProc: [Double] = []
            var trustmeProc: [Double] = []
            var opensslProc: [Double] = []
            for i in 0..<processRuns {
                let d = work.appendingPathComponent("proc-\(i)")
                pinlabProc.append(
                    try timedProcess([
                        me, "pki", "init", "--spec", specURL.path, "--dir", d.appendingPathComponent("pinlab").path,
                    ]).ms)
                if haveTrustme {
                    trustmeProc.append(
                        try timedProcess([
                            "python3", trustmeScript, shapeJSON.path, d.appendingPathComponent("trustme").path, "1",
                        ]).ms)
                }
                if i % 3 == 0, FileManager.default.fileExists(atPath: "\(scripts)/openssl_lab.sh") {
                    opensslProc.append(
                        try timedProcess([
                            "bash", "\(scripts)/openssl_lab.sh", shapeTSV.path,
                            d.appendingPathComponent("openssl").path,
                        ]).ms)
                }
            }

            func f(_ x: Double) -> String { x.isNaN ? "n/a" : String(format: x < 10 ? "%.2f ms" : "%.1f ms", x) }
            /// `a`'s time over `b`'s: "1.4x the time" (above 1: `a` is slower).
            func ratio(_ a: Double, _ b: Double) -> String {
                a.isNaN || b.isNaN ? "n/a" : String(format: "%.2fx", a / b)
            }
            var rows = [["measurement", "median", "pinlab's time / this one's (above 1: pinlab is slower)"]]
            rows.append([
                "pinlab in-process, cold, library use: keys + certificates + state file",
                f(median(cold)) + " (CPU " + f(median(coldCPU)) + ")", "",
            ])
            rows.append([
                "pinlab in-process, cold, every identity's files written (PEM, DER, chains, key, pins)",
                f(median(coldFiles)) + " (CPU " + f(median(coldFilesCPU)) + ")", "",
            ])
            rows.append([
                "trustme in-process: keys + certificates + PEM files",
                f(median(trustmeIn)) + " (CPU " + f(median(trustmeCPU)) + ")",
                "files written " + ratio(median(coldFiles), median(trustmeIn)) + " (CPU "
                    + ratio(median(coldFilesCPU), median(trustmeCPU)) + "); "
                    + "library use " + ratio(median(cold), median(trustmeIn)),
            ])
            rows.append([
                "pinlab in-process, warm, library use: keys kept, every certificate re-issued",
                f(median(warm)) + " (CPU " + f(median(warmCPU)) + ")", "",
            ])
            rows.append([
                "pinlab in-process, warm, every file and every .p12 (as `pki init`)", f(median(warmAllP12)), "",
            ])
            rows.append([
                "pinlab in-process, warm, library use, the real lab spec (RSA/Ed25519/P-384)", f(median(warmFull)), "",
            ])
            rows.append(["pinlab in-process, certificates fresh: load only", f(median(load)), ""])
            rows.append(["pinlab pki init, whole process, cold (every .p12)", f(median(pinlabProc)), ""])
            rows.append([
                "python3 trustme, whole process", f(median(trustmeProc)),
                "pki init " + ratio(median(pinlabProc), median(trustmeProc)),
            ])
            rows.append([
                "openssl CLI script, whole process", f(median(opensslProc)),
                "pki init " + ratio(median(pinlabProc), median(opensslProc)),
            ])
            print(table(rows), terminator: "")
            if !haveTrustme { print("\n(trustme not found: pip install trustme)") }
        }
    }
}
