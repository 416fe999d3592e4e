import ArgumentParser
import Foundation
import PinningLabExports
import PinningLabPKI

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Check the pin configurations an app ships, with the OWASP MASTG test each finding answers to.",
        discussion: """
            Reads Android's network_security_config.xml, an Info.plist with TrustKit (TSKConfiguration) or \
            NSPinnedDomains, a TrustKit Swift configuration (kTSKPinnedDomains literal, best effort), an OkHttp \
            CertificatePinner (.add("host", "sha256/…")) and PinningLab's pins.json. Reports expired or soon-expiring \
            pin sets, a single pin, a backup equal to the current pin, pins that match nothing in --against CHAIN.pem, \
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

    @Option(help: "A PEM file with the chain the server presents: report pin sets none of whose pins is in it.")
    var against: String?

    @Option(help: "text or json.")
    var format: String = "text"

    @Option(name: .customLong("fail-on"), help: "Exit 1 when a finding is at or above this severity: info, low, medium, high.")
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
        guard (0...3650).contains(soon) else { throw fail("--soon: \(soon) days is out of range. Fix: give 0 to 3650.") }
        var options = AuditOptions()
        options.soonDays = soon
        if let against {
            guard let text = try? String(contentsOf: URL(fileURLWithPath: against), encoding: .utf8) else {
                throw fail("--against: \(against) cannot be read. Fix: give a PEM file with the server's chain.")
            }
            let ders = PEM.decodeAll(text)
            guard !ders.isEmpty else {
                throw fail("--against: \(against) holds no PEM certificate. Fix: give the chain as PEM certificate blocks, as `openssl s_client -showcerts` prints them.")
            }
            var pins: [String] = []
            for (i, der) in ders.enumerated() {
                guard let p = try? Pins(certificateDER: der) else {
                    throw fail("--against: certificate \(i + 1) of \(against) is not a valid X.509 certificate. Fix: check it with openssl x509 -noout -text.")
                }
                pins.append(p.spkiBase64)
            }
            options.chainPins = pins
            options.chainFile = against
        }
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
}
