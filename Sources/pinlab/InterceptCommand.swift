import ArgumentParser
import Foundation
import PinningLab
import PinningLabControl
import PinningLabIntercept

struct InterceptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intercept",
        abstract: "An interception proxy (HTTP CONNECT) with a verdict per host against the pins you declare.",
        discussion: """
            Point a client, device or Simulator at the proxy (with proxy-root installed: `pinlab export \
            mobileconfig`), use the app, stop the proxy (Ctrl-C, --duration or --until-idle) and read the verdict \
            per host: "refused interception: good", "sent its request to an intercepting proxy: NOT PINNED", or for \
            hosts you did not declare pinned "not pinned, allowed through (as declared)". Exit status 1 when a host \
            deviates from the declaration.

            Host patterns (--pinned, --policy, --upstream) follow OkHttp's CertificatePinner: api.example.test (that \
            host), *.example.test (exactly one more label), **.example.test (the domain and every subdomain).

            Policies: mint (a leaf for the host from proxy-root, like Charles/mitmproxy/Burp), stuff (the same with \
            the genuine chain appended), collision (a leaf from twin-intermediate-a, a CA with lab-intermediate-a's \
            name and key identifier), foreign-host (a leaf from the genuine lab-intermediate-a for another host: \
            catches clients that pin a CA and skip the host-name check), passthrough (a plain TCP tunnel to the \
            upstream, not intercepted).

            --learn passes a host through once it refused an intercepted connection, so the app keeps working and \
            reveals its other hosts; --evidence writes the MASTG-TEST-0244 evidence (Markdown) a tester files; \
            --write-baseline records each host's verdict and --baseline fails only when one changes.

            --live 127.0.0.1:0 serves a page that shows each connection and each host's verdict as they happen, on a \
            loopback port of its own; open the address it prints (the token is in its #fragment).

            Example: pinlab intercept --pinned 'api.pinning.test,**.api.pinning.test' --policy stuff --until-idle 3
                     curl -x http://127.0.0.1:8080 --cacert proxy-root.pem https://api.pinning.test/
            """
    )

    @Option(help: "Hosts the client is declared to pin, comma-separated (api.x.test, *.x.test, **.x.test).")
    var pinned: String = ""

    @Option(help: "The address to listen on, 127.0.0.1:PORT (port 0 picks a free one).")
    var listen: String = "127.0.0.1:8080"

    @Flag(
        help:
            "Allow --listen on a non-loopback address (a device on the network); prints a warning. Needs --allow-peer.")
    var allowNonLoopback = false

    @Option(
        help:
            "Off loopback: a device address or block allowed to use the proxy (CIDR, e.g. 192.168.1.23/32); repeatable."
    )
    var allowPeer: [String] = []

    @Option(
        help:
            "mint, stuff, collision, foreign-host or passthrough, alone (the default) or HOST=POLICY; repeatable or comma-separated."
    )
    var policy: [String] = []

    @Option(
        help:
            "Where passthrough goes: HOST:PORT (every host) or PATTERN=HOST:PORT; repeatable. Default: the CONNECT authority, if it is a public address (a route also allows a loopback or private one)."
    )
    var upstream: [String] = []

    @Option(
        help:
            "What the stuff policy appends: a PEM file with a real server's chain, or 'upstream' (the chain the upstream presents, fetched once per host). Default: leaf-v1, lab-intermediate-a, lab-root."
    )
    var genuineChain: String?

    @Option(help: "openssl or gnutls: the engine that terminates TLS.")
    var engine: String = "openssl"

    @Option(
        help:
            "Report formats, comma-separated: text (standard output), json, junit, markdown, html (files in --output-dir)."
    )
    var report: String = "text"

    @Option(
        help:
            "The folder the json/junit/markdown/html reports are written to, each readable by you alone (they name the hosts and requests the proxy decrypted). Default: intercept/ in the PKI folder (--dir), which git ignores."
    )
    var outputDir: String?

    /// `--output-dir`, or `intercept/` in the PKI folder: never a folder of its own in the current directory, which a
    /// `git add -A` of the app's repository would pick up when the PKI lives elsewhere.
    var reportFolder: String {
        outputDir ?? URL(fileURLWithPath: pkiFolder.dir, isDirectory: true).appendingPathComponent("intercept").path
    }

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Option(help: "Stop once connections were seen and none has been open for this many seconds.")
    var untilIdle: Double?

    @Option(help: "Write the proxy's address (127.0.0.1:PORT) to this file once it listens (for scripts).")
    var readyFile: String?

    @OptionGroup var pkiFolder: PKIFolder

    @Option(
        help:
            "The root that mints leaves: proxy-root (NOT name-constrained, any host) or proxy-root-scoped (only the hosts of `pinlab pki proxy-root --scope`; a name covers itself and its subdomains)."
    )
    var proxyRoot: String = "proxy-root"

    @Flag(
        help:
            "Pass a host through to its upstream once it refused an intercepted connection (its verdict stays), so the app keeps working and reveals its other hosts."
    )
    var learn = false

    @Option(
        help:
            "Write the MASTG-TEST-0244 evidence (Markdown: test id, weakness, per-domain table, the command that reproduces it) to this file."
    )
    var evidence: String?

    @Option(
        help:
            "Compare each host's verdict with this file (written by --write-baseline): exit 1 only when a host's verdict changed, or a new host deviates."
    )
    var baseline: String?

    @Option(
        help: "Write every host's verdict to this file (JSON, one line per host), to commit and pass to --baseline.")
    var writeBaseline: String?

    @Option(
        help: ArgumentHelp(
            "Serve the live view (each connection and host verdict as they happen) on this loopback address, e.g. 127.0.0.1:0 (0: a free port); open the printed address, whose #token=… the page sends as its bearer token.",
            valueName: "address"))
    var live: String?

    @Option(help: "Print the JSON Schema of the json report and exit.")
    var printSchema: String?

    func validate() throws {
        if let duration, !(duration > 0) {
            throw ValidationError("--duration: \(duration) is not a positive number of seconds.")
        }
        if let untilIdle, !(untilIdle > 0) {
            throw ValidationError("--until-idle: \(untilIdle) is not a positive number of seconds.")
        }
    }

    func run() async throws {
        if let printSchema {
            guard printSchema == "json" else {
                throw ValidationError(
                    "--print-schema: only json has a schema here (the JUnit XSD is `pinlab check --print-schema junit`)."
                )
            }
            print(InterceptReport.jsonSchema)
            return
        }
        let formats = try parseFormats(report)
        requireWritable(evidence, option: "--evidence")
        requireWritable(writeBaseline, option: "--write-baseline")
        requireWritable(readyFile, option: "--ready-file")
        let writesFiles = formats.contains(where: { $0 != .text })
        if writesFiles, let outputDir { requireWritableFolder(outputDir, option: "--output-dir") }
        var knownVerdicts: InterceptBaseline?
        if let baseline {
            do {
                knownVerdicts = try InterceptBaseline.load(
                    contentsOf: URL(fileURLWithPath: baseline), displayName: baseline)
            } catch {
                fail("--baseline: \(error.description)")
            }
        }
        var configuration = InterceptProxy.Configuration(engine: engine)
        configuration.learn = learn
        do {
            configuration.pinned = try HostPattern.parseList(pinned, option: "--pinned")
            configuration.policies = try PolicyTable.parse(policy, option: "--policy")
            configuration.upstreams = try upstream.map { try UpstreamRoute.parse($0, option: "--upstream") }
            configuration.allowedPeers = try allowPeer.map { try AddressRange(parsing: $0, option: "--allow-peer") }
        } catch let error as InterceptError {
            throw ValidationError(error.description)
        }
        guard let (address, port) = splitHostPort(listen) else {
            throw ValidationError(
                "--listen: '\(listen)' is not ADDRESS:PORT (e.g. 127.0.0.1:8080, [::1]:8080, 127.0.0.1:0 for a free port)."
            )
        }
        configuration.listener.bindAddress = address
        configuration.listener.port = port
        configuration.listener.allowNonLoopback = allowNonLoopback
        if genuineChain == "upstream" {
            configuration.genuineChainFromUpstream = true
        } else if let genuineChain {
            guard let text = try? String(contentsOfFile: genuineChain, encoding: .utf8) else {
                throw ValidationError("--genuine-chain: cannot read \(genuineChain).")
            }
            let ders = PEM.decodeAll(text)
            guard !ders.isEmpty else {
                throw ValidationError(
                    "--genuine-chain: \(genuineChain) has no PEM certificate blocks (export the server's chain as PEM, e.g. with openssl s_client -showcerts)."
                )
            }
            configuration.genuineChainDER = ders
        }
        if configuration.pinned.isEmpty {
            FileHandle.standardError.write(
                Data("warning: no --pinned hosts declared: every intercepted host is judged as not pinned\n".utf8))
        }

        let pki = await pkiFolder.open()
        // The default folder is made once the PKI folder exists (private, ignored by git), before the session starts.
        if writesFiles, outputDir == nil { requireWritableFolder(reportFolder, option: "--output-dir") }
        do { configuration.proxyRoot = try pki.certificateAuthority(proxyRoot) } catch {
            throw ValidationError("--proxy-root: \(error)")
        }
        let proxy: InterceptProxy
        do {
            proxy = try InterceptProxy.start(pki: pki, configuration: configuration)
        } catch let error as InterceptError {
            throw ValidationError(error.description)
        }
        var liveView: LiveViewServer?
        if let live {
            do {
                liveView = try LiveViewServer.start(address: live, feed: .intercept(proxy))
            } catch {
                await proxy.stop()
                throw ValidationError("--live \(live): \(error.reason)")
            }
        }
        let started = Date()
        // SIGINT/SIGTERM end the session normally: the report is still printed.
        let stopper = TerminationSignals("pinlab.intercept.signals")
        let rootFile = ((try? pki.materialize(proxyRoot)) ?? pki.files(for: proxyRoot)).certificatePEM.path
        let labRootFile = (try? pki.materialize("lab-root"))?.certificatePEM.path ?? "(see pinlab pki show lab-root)"
        print(
            "pinlab intercept: listening on \(proxy.address) (\(engine)); the device trusts lab-root (\(TextEscaping.terminal(labRootFile))) and the installed proxy root (\(TextEscaping.terminal(rootFile)))"
        )
        print(
            "  policy: \(policySummary(configuration.policies)); pinned: \(configuration.pinned.isEmpty ? "(none)" : configuration.pinned.map(\.text).joined(separator: ", "))"
        )
        if !configuration.allowedPeers.isEmpty {
            print("  peers: this machine and \(configuration.allowedPeers.map(\.description).joined(separator: ", "))")
        }
        if let liveView {
            print("  live view: \(liveView.pageURL) (loopback only; the #token is the page's key: do not share it)")
        }
        fflush(nil)  // the address line must reach a pipe before any client starts
        if let readyFile {
            do {
                try (proxy.address + "\n").write(toFile: readyFile, atomically: true, encoding: .utf8)
            } catch {
                fail("--ready-file: cannot write \(readyFile): \(error.localizedDescription)")
            }
        }
        while true {
            try? await Task.sleep(for: .milliseconds(100))
            if stopper.fired { break }
            if let duration, Date().timeIntervalSince(started) >= duration { break }
            if let untilIdle, proxy.connectionsAccepted > 0, proxy.connectionsOpen == 0,
                Date().timeIntervalSince(proxy.lastActivity) >= untilIdle
            {
                break
            }
        }
        await liveView?.stop()
        await proxy.stop()
        stopper.cancel()
        let result = proxy.report(startedAt: started, durationSeconds: Date().timeIntervalSince(started))
        for format in formats {
            let text = try result.render(format, color: format == .text && stdoutIsTerminal)
            if format == .text {
                print(text, terminator: "")
                continue
            }
            let url = URL(fileURLWithPath: reportFolder, isDirectory: true).appendingPathComponent(
                "intercept.\(format.fileExtension)")
            writeOutputFile(Array(text.utf8), to: url.path, option: "--output-dir", mode: 0o600)
            print("wrote \(TextEscaping.terminal(url.path))")
        }
        if let evidence {
            let text = InterceptEvidence(report: result, commandLine: ["pinlab"] + CommandLine.arguments.dropFirst())
                .markdown()
            writeOrFail(text, to: evidence, prefix: "--evidence: ")
            print("wrote \(TextEscaping.terminal(evidence))")
        }
        if !formats.contains(.text) { print(result.summaryLine) }
        if let writeBaseline {
            writeOrFail(try InterceptBaseline(result).jsonString(), to: writeBaseline, prefix: "--write-baseline: ")
            print("wrote the baseline \(TextEscaping.terminal(writeBaseline)) (\(result.hosts.count) hosts)")
        }
        if let knownVerdicts, let baseline {
            print(knownVerdicts.text(for: result, file: baseline), terminator: "")
            if !knownVerdicts.changes(in: result).isEmpty { throw ExitCode(1) }
            return
        }
        if result.deviates { throw ExitCode(1) }
    }

    private func parseFormats(_ text: String) throws -> [ReportFormat] {
        var out: [ReportFormat] = []
        for item in parseList(text) {
            guard let f = ReportFormat(rawValue: item.lowercased()) else {
                throw ValidationError(
                    "--report: '\(item)' is not a format; use text, json, junit, markdown, html (comma-separated).")
            }
            if !out.contains(f) { out.append(f) }
        }
        return out.isEmpty ? [.text] : out
    }

    private func policySummary(_ t: PolicyTable) -> String {
        ([t.defaultPolicy.rawValue] + t.rules.map { "\($0.pattern)=\($0.policy)" }).joined(separator: ", ")
    }
}
