import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabExports
import PinningLabPKI
import PinningLabReferenceClients

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Check the pin configurations an app ships, with the OWASP MASTG test each finding answers to.",
        discussion: """
            Reads Android's network_security_config.xml, an Info.plist with TrustKit (TSKConfiguration) or \
            NSPinnedDomains, a TrustKit Swift configuration (kTSKPinnedDomains literal, best effort), an OkHttp \
            CertificatePinner (.add("host", "sha256/…")) and PinningLab's pins.json. Reports expired or soon-expiring \
            pin sets, a single pin, a backup equal to the current pin, pins that match nothing in --against CHAIN.pem \
            (or the chain a server on this machine presents: --against 127.0.0.1:8443, with --sni NAME), \
            overridePins / debug overrides that reach release builds, cleartext permitted, and scopes that leave \
            subdomains unpinned — each with its file and line (or key path), severity, MASTG test id (or why none \
            applies) and a fix.

            Exit status: 0 no finding at or above --fail-on, 1 some, 2 bad input (the error names the file and line).

            Examples:
              pinlab audit app/src/main/res/xml/network_security_config.xml
              pinlab audit Info.plist --against chain.pem --format json --fail-on high
            """)

    @Argument(help: "The configuration files to audit.")
    var files: [String] = []

    @Option(help: "Report pin sets expiring within this many days (default 30).")
    var soon: Int = 30

    @Option(
        help:
            "A PEM file with the chain the server presents, or a server on this machine as HOST:PORT (127.0.0.1:8443, [::1]:8443, localhost:8443): report pin sets none of whose pins is in its chain."
    )
    var against: String?

    @Option(help: "With --against HOST:PORT: the server name to ask for (SNI); default: the host.")
    var sni: String?

    @Option(
        name: .customLong("dir"),
        help:
            "The lab PKI folder whose keys audit recognizes in the pins, to report a pin of a lab key a library cannot hash (TrustKit: ML-DSA, Ed25519, P-521 …). Default: the nearest .pinninglab/ in this folder or above, when there is one (none is made)."
    )
    var dir: String?

    @Option(help: "text or json.")
    var format: String = "text"

    @Option(
        name: .customLong("fail-on"),
        help: "Exit 1 when a finding is at or above this severity: info, low, medium, high.")
    var failOn: String = "medium"

    func run() async throws {
        func fail(_ message: String) -> ExitCode {
            FileHandle.standardError.write(Data("error: \(message)\n".utf8))
            return ExitCode(2)
        }
        guard !files.isEmpty else { throw fail("FILE: no file given. Fix: name the configuration files to audit.") }
        guard format == "text" || format == "json" else {
            throw fail("--format: '\(format)' is not a format. Fix: use text or json.")
        }
        let threshold = AuditSeverity(rawValue: failOn.lowercased())
        guard AuditSeverity.all.contains(threshold) else {
            throw fail("--fail-on: '\(failOn)' is not a severity. Fix: use info, low, medium or high.")
        }
        guard (0...3650).contains(soon) else {
            throw fail("--soon: \(soon) days is out of range. Fix: give 0 to 3650.")
        }
        var options = AuditOptions()
        options.soonDays = soon
        if let against, !FileManager.default.fileExists(atPath: against),
            let (ip, port, host) = Self.localServer(against)
        {
            // The chain a server on this machine presents, as `openssl s_client -showcerts` would print it.
            let name = sni ?? host
            let fetched = await onDedicatedThread(named: "pinlab.audit.fetch") {
                () -> Result<[[UInt8]], PresentedChainError> in
                Result { () throws(PresentedChainError) -> [[UInt8]] in
                    try PresentedChain.fetch(ip: ip, port: port, serverName: name)
                }
            }
            let ders: [[UInt8]]
            switch fetched {
            case .success(let chain): ders = chain
            case .failure(let e):
                throw fail(
                    "--against: no chain from \(e.description). Fix: start the server (e.g. pinlab serve) or give its chain as a PEM file."
                )
            }
            options.chainPins = try ders.enumerated().map { i, der in
                guard let p = try? Pins(certificateDER: der) else {
                    throw fail(
                        "--against: certificate \(i + 1) presented by \(against) is not a valid X.509 certificate.")
                }
                return p.spkiBase64
            }
            options.chainFile = "\(against) (SNI \(name))"
        } else if let against {
            if !FileManager.default.fileExists(atPath: against), against.contains(":"), Self.localServer(against) == nil
            {
                throw fail(
                    "--against: \(against) is neither a file nor a server on this machine. Fix: give a PEM file, or 127.0.0.1:PORT, [::1]:PORT or localhost:PORT (pinlab audit connects to loopback only)."
                )
            }
            // A chain is a few KB: a larger file is refused before it is decoded (a 50 MB "chain" cost a GB of memory).
            let data: Data
            switch PinAudit.readRegularFile(against, limit: Self.maxChainBytes) {
            case .success(let d): data = d
            case .failure(let problem) where problem.isTooLarge:
                throw fail(
                    "--against: \(against) \(problem), and a server's chain is a few KB. Fix: give the PEM of the chain the server presents (openssl s_client -showcerts prints it)."
                )
            case .failure(let problem):
                throw fail("--against: \(against) \(problem). Fix: give a PEM file with the server's chain.")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw fail(
                    "--against: \(against) is not text (not UTF-8). Fix: give the chain as PEM certificate blocks, as `openssl s_client -showcerts` prints them."
                )
            }
            let ders = PEM.decodeAll(text)
            guard !ders.isEmpty else {
                throw fail(
                    "--against: \(against) holds no PEM certificate. Fix: give the chain as PEM certificate blocks, as `openssl s_client -showcerts` prints them."
                )
            }
            var pins: [String] = []
            for (i, der) in ders.enumerated() {
                guard let p = try? Pins(certificateDER: der) else {
                    throw fail(
                        "--against: certificate \(i + 1) of \(against) is not a valid X.509 certificate. Fix: check it with openssl x509 -noout -text."
                    )
                }
                pins.append(p.spkiBase64)
            }
            options.chainPins = pins
            options.chainFile = against
        }
        options.labKeys = await labKeys()
        let report: AuditReport
        do {
            report = try PinAudit.run(files: files, options: options)
        } catch {
            throw fail("\(error)")
        }
        if format == "json" {
            print(try JSONOutput.string(report))
        } else {
            print(report.text, terminator: "")
        }
        if report.fails(at: threshold) { throw ExitCode(1) }
    }

    /// The keys of the lab PKI in --dir, or in the nearest `.pinninglab/` when there is one (none is made), by their
    /// SPKI pins; empty when there is none or it cannot be opened (said on standard error).
    func labKeys() async -> [String: AuditLabKey] {
        let folder: String
        if let dir {
            folder = dir
        } else if case .found(let p) = DefaultPKIFolder.find(
            from: FileManager.default.currentDirectoryPath, home: DefaultPKIFolder.homeDirectory())
        {
            folder = p
        } else {
            return [:]
        }
        let url = URL(fileURLWithPath: folder, isDirectory: true)
        guard FileManager.default.fileExists(atPath: url.appendingPathComponent("state.json").path) else {
            if dir != nil {
                FileHandle.standardError.write(
                    Data("note: --dir \(folder) holds no lab PKI: pins are not matched to lab keys\n".utf8))
            }
            return [:]
        }
        do {
            let pki = try await Lab.openPKI(directory: url, spec: try specForOpening(nil, directory: url).spec)
            return AuditLabKey.table(pki.identities)
        } catch {
            FileHandle.standardError.write(
                Data(
                    "note: the lab PKI in \(folder) cannot be opened (\(error)): pins are not matched to lab keys\n"
                        .utf8))
            return [:]
        }
    }

    /// The largest --against file read: a chain of a dozen certificates is under 30 KB.
    static let maxChainBytes = 1024 * 1024

    /// `127.0.0.1:8443`, `[::1]:8443` or `localhost:8443` → the address to dial, the port and the host as written;
    /// nil for anything else (audit fetches chains from this machine only).
    static func localServer(_ text: String) -> (ip: String, port: Int, host: String)? {
        guard let (host, port) = splitHostPort(text, ports: 1...65535) else { return nil }
        switch host.lowercased() {
        case "localhost": return ("127.0.0.1", port, "localhost")
        case "::1": return ("::1", port, host)
        default:
            let parts = host.split(separator: ".")
            guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }), parts[0] == "127" else { return nil }
            return (host, port, host)
        }
    }
}
