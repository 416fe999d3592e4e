import ArgumentParser
import Foundation
import PinningLab

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the reference clients and the system curl through the whole catalogue on both engines.",
        discussion: """
            Builds the lab PKI if needed, starts one real TLS server per scenario and engine on 127.0.0.1, and runs \
            the correct client, five clients that each make one classic pinning mistake, and `curl --pinnedpubkey` \
            (if installed). For each it prints a one-line summary and one of the cells it got wrong: the correct \
            client conforms everywhere, each teaching client fails exactly where its mistake bites. --matrix prints \
            every client's whole verdict matrix too.
            """
    )

    @OptionGroup var source: CatalogueOptions

    @Option(help: "openssl, gnutls or both.")
    var engine: String = "both"

    @OptionGroup var platformOption: PlatformOption

    @Flag(help: "Print every client's whole verdict matrix (scenarios × profiles × engines), not only its summary.")
    var matrix = false

    @Flag(help: .hidden)
    var brief = false  // the default since 0.9.0; kept so that scripts which pass it still run

    @Flag(help: "Skip curl even if it is installed.")
    var noCurl = false

    @Option(help: "How many cells run at the same time (each server serves one cell at a time).")
    var jobs: Int = CheckOptions.defaultJobs

    func run() async throws {
        let start = ContinuousClock.now
        let catalogue = source.loadCatalogue()
        let fresh = !FileManager.default.fileExists(
            atPath: URL(fileURLWithPath: source.dir).appendingPathComponent("keys").path)
        if fresh {
            print("Creating the lab PKI in \(source.dir) (keys are made once and kept; later runs start at once)…")
        }
        let pki = await source.openPKI()
        let runner = CheckRunner(pki: pki, catalogue: catalogue)
        let platform = try platformOption.policy()
        let options = CheckOptions(engines: try Engines.named(engine), jobs: jobs, platform: platform)
        let color = stdoutIsTerminal
        func bold(_ s: String) -> String { color ? "\u{1B}[1m\(s)\u{1B}[0m" : s }

        var clients: [(ClientUnderTest, String)] = BuiltInClients.all.map {
            (.inProcess($0), BuiltInClients.explanation($0.name))
        }
        if !noCurl, ChildProcess.resolve("curl") != nil {
            clients.append(
                (
                    .command(try CommandClient.curl()),
                    "the system curl with --cacert and --pinnedpubkey (pins only the server's own key)"
                ))
        }
        print(
            bold("PinningLab demo")
                + ": \(catalogue.scenarios.count) scenarios × \(PinProfile.all.count) pin profiles × \(options.engines.map(\.name).joined(separator: " + ")), PKI in \(pki.directory.path)\n"
        )
        if let platform {
            let decided = catalogue.scenarios.filter { s in PinProfile.all.contains { s.decidedByPolicy($0) } }.map(
                \.id)
            print(
                "Platform \(platform) (\(platform.summary)): the cells of \(decided.joined(separator: ", ")) are judged by its policy and shown as P where a client does what it prescribes.\n"
            )
        }
        let width = clients.map(\.0.name.count).max() ?? 10
        let cells = catalogue.scenarios.count * PinProfile.all.count * options.engines.count
        func row(_ r: CheckReport, _ explanation: String) -> String {
            let m = r.deviates ? (color ? "\u{1B}[1;31m✗\u{1B}[0m" : "✗") : (color ? "\u{1B}[1;32m✓\u{1B}[0m" : "✓")
            var extra = ""
            if r.summary.skipped > 0 { extra += ", \(r.summary.skipped) skipped" }
            if r.summary.unsupported > 0 { extra += ", \(r.summary.unsupported) unsupported" }
            if r.summary.wrongReason > 0 { extra += ", \(r.summary.wrongReason) refused for another reason" }
            if r.summary.policy > 0 { extra += ", \(r.summary.policy) decided by the platform policy" }
            if r.summary.stricter > 0 { extra += ", \(r.summary.stricter) stricter than required" }
            let count = String(r.summary.deviations).leftPadded(to: 4)
            return
                "  \(m) \(r.client.padding(toLength: width, withPad: " ", startingAt: 0)) \(count) deviating\(extra) — \(explanation)"
        }
        let heading =
            bold("Summary") + " (cells where the client does not do what a correct client does, of \(cells) per client)"
        if !matrix { print(heading) }
        var rows: [String] = []
        for (client, explanation) in clients {
            let report = try await runner.run(client, options: options)
            if matrix {
                print(bold("── \(client.name)") + ": \(explanation)")
                print(report.renderText(color: color, maxDeviations: 6))
            } else {
                print(row(report, explanation))  // as soon as each client is done
                // A flaw first: a request sent where a correct client refuses.
                if let v = report.deviations.first(where: { $0.observed == .accepted }) ?? report.deviations.first {
                    let reason = v.reason.count > 110 ? String(v.reason.prefix(109)) + "…" : v.reason
                    print("      e.g. \(v.scenario)/\(v.profile) on \(v.engine): \(reason)")
                }
            }
            rows.append(row(report, explanation))
        }
        if matrix {
            print(heading)
            for r in rows { print(r) }
        }
        let d = ContinuousClock.now - start
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        print(
            String(
                format:
                    "\nDone in %.1f s. `pinlab explain ID` tells the story of any row; `pinlab check -- CMD` judges your own client; --matrix shows every cell.",
                seconds))
    }
}

extension String {
    func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
