import Foundation
import PinningLabReports

/// The evidence a tester files after an interception run, in the shape of the OWASP MASTG's dynamic pinning test:
/// MASTG-TEST-0244 "Missing Certificate Pinning in Network Traffic" (weakness MASWE-0047, Insecure Identity
/// Pinning; MASVS-NETWORK-2). The test "fails if any relevant domain was intercepted"; here the relevant domains are
/// the ones declared pinned (`--pinned`), and "intercepted" means the client sent its request through the proxy's
/// TLS session — what ``HostVerdict/Status/notPinned`` records.
public struct InterceptEvidence: Sendable {
    public static let testID = "MASTG-TEST-0244"
    public static let testTitle = "Missing Certificate Pinning in Network Traffic"
    public static let weakness = "MASWE-0047 (Insecure Identity Pinning), MASVS-NETWORK-2"

    public var report: InterceptReport
    /// The command line that produced the run (shown under "Reproduce").
    public var commandLine: [String]

    public init(report: InterceptReport, commandLine: [String]) {
        self.report = report
        self.commandLine = commandLine
    }

    /// Relevant domains (declared pinned) whose request reached the proxy.
    public var interceptedRelevant: [HostVerdict] { report.hosts.filter { $0.status == .notPinned } }

    /// `fail` when a relevant domain was intercepted, `pass` when every relevant domain the client reached refused,
    /// `inconclusive` when no relevant domain was reached (nothing was tested).
    public var result: String {
        if !interceptedRelevant.isEmpty { return "fail" }
        return report.hosts.contains { $0.declaredPinned && $0.status == .refused } ? "pass" : "inconclusive"
    }

    /// The evidence as Markdown.
    ///
    /// Every value that came from the wire or a command line (a host, a request line, how a client refused) goes
    /// through `TextEscaping` (PinningLab): a client cannot add a row, a heading or HTML to the evidence.
    public func markdown() -> String {
        let r = report
        let md = TextEscaping.markdown
        let code = TextEscaping.markdownCode
        let iso = ISO8601DateFormatter()
        var m = "# \(Self.testID): \(Self.testTitle) — evidence\n\n"
        m += "| | |\n|---|---|\n"
        m += "| Test | \(Self.testID) (Android; the iOS counterpart is MASTG-TEST-0068's dynamic part) |\n"
        m += "| Weakness | \(Self.weakness) |\n"
        m += "| Result | **\(result.uppercased())** |\n"
        m += "| Date | \(iso.string(from: r.startedAt)), \(String(format: "%.1f", r.durationSeconds)) s |\n"
        m += "| Proxy | \(code(r.proxy)) (\(md(r.engine))), policy \(md(policyText(r.policies))) |\n"
        m +=
            "| Relevant domains (declared pinned) | \(r.pinned.isEmpty ? "(none declared)" : r.pinned.map(code).joined(separator: ", ")) |\n\n"

        m += "## Observation\n\n"
        m +=
            "Domains for which the interception was successful (the client sent its request through the proxy's TLS "
            + "session):\n\n"
        let intercepted = r.hosts.filter { $0.requestsSent > 0 }
        if intercepted.isEmpty {
            m += "- none\n"
        } else {
            for h in intercepted {
                m +=
                    "- \(code(h.host)) — \(h.declaredPinned ? "relevant (declared pinned by \(code(h.pinnedBy ?? "")))" : "not declared pinned") — "
                    + "\(h.requestsSent) request(s), e.g. \(code(h.requestLines.first ?? "?"))\n"
            }
        }
        m +=
            "\n| domain | relevant | intercepted with | connections | handshakes completed | requests sent | how the client refused | verdict |\n"
        m += "|---|---|---|---|---|---|---|---|\n"
        for h in r.hosts {
            let refused =
                h.refusals.isEmpty
                ? ""
                : h.refusals.joined(separator: "; ")
                    + (h.passedThroughAfterRefusal > 0
                        ? "; then \(h.passedThroughAfterRefusal) connection(s) passed through (--learn)" : "")
            m +=
                "| \(code(h.host)) | \(h.declaredPinned ? "yes" : "no") | \(h.policy) | \(h.connections) | \(h.handshakesCompleted) | "
                + "\(h.requestsSent) | \(md(refused)) | \(h.status.isDeviation ? "**\(h.message)**" : h.message) |\n"
        }
        if r.hosts.isEmpty { m += "| (no client connected through the proxy) | | | | | | | |\n" }
        let badNames = r.serverNamesRefused
        if !badNames.isEmpty {
            m +=
                "\nRefused before any certificate was made: \(badNames.count) connection(s) whose ClientHello named a server "
                + "name that is not a host name (RFC 6066: letters, digits and hyphens in dot-separated labels): "
                + r.serverNameExamples.map(code).joined(separator: ", ")
                + ". They are not domains and get no verdict.\n"
        }

        m += "\n## Evaluation\n\n"
        switch result {
        case "fail":
            m +=
                "The test case fails: the relevant domain(s) "
                + interceptedRelevant.map { code($0.host) }.joined(separator: ", ")
                + " were intercepted — the client accepted a certificate from a CA it trusts only because the proxy "
                + "root was installed, and sent its request.\n"
        case "pass":
            m +=
                "The test case passes for the relevant domains the client reached: each refused every intercepted "
                + "connection (see how above) and sent no request through the proxy.\n"
        default:
            m +=
                "Inconclusive: the client reached no relevant domain through the proxy. Exercise the app's features "
                + "that talk to the declared hosts and run again.\n"
        }
        let unexpected = r.hosts.filter { $0.status == .unexpectedRefusal }
        if !unexpected.isEmpty {
            m +=
                "\nNot a MASTG failure, but a deviation from the declaration: "
                + unexpected.map { code($0.host) }.joined(separator: ", ")
                + " refused interception although not declared pinned (the app pins more than declared, or the "
                + "proxy root is not installed on the device).\n"
        }

        // The fence is longer than any run of backticks in the line, so an argument cannot close it.
        let line = shellLine(commandLine)
        let fence = String(repeating: "`", count: max(3, Self.longestRun(of: "`", in: line) + 1))
        m += "\n## Reproduce\n\n\(fence)sh\n" + line + "\n\(fence)\n\n"
        m +=
            "Install the proxy root on the device (`pinlab export mobileconfig` for iOS, `pinlab pki show proxy-root` "
            + "for its PEM), set the device's HTTP proxy to the address above, use the app, then stop the proxy "
            + "(Ctrl-C, `--duration` or `--until-idle`). The JSON report (`--report json`) holds every connection.\n"
        return m
    }

    private func policyText(_ t: PolicyTable) -> String {
        ([t.defaultPolicy.rawValue] + t.rules.map { "\($0.pattern)=\($0.policy)" }).joined(separator: ", ")
    }

    /// The arguments as one POSIX shell line, each quoted when it needs to be; an argument holding a control
    /// character (a line break, ESC) is written `$'…'` with the character escaped, so the line stays one line and
    /// runs the same command.
    func shellLine(_ arguments: [String]) -> String {
        arguments.map { a in
            let safe = CharacterSet(
                charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+")
            if !a.isEmpty && a.unicodeScalars.allSatisfy({ safe.contains($0) }) { return a }
            if a.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                var out = "$'"
                for u in a.unicodeScalars {
                    switch u {
                    case "\\": out += "\\\\"
                    case "'": out += "\\'"
                    case _ where u.value < 0x20 || u.value == 0x7F:
                        let hex = String(u.value, radix: 16, uppercase: true)
                        out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
                    default: out.unicodeScalars.append(u)
                    }
                }
                return out + "'"
            }
            return "'" + a.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    /// The longest run of `c` in `s`.
    static func longestRun(of c: Character, in s: String) -> Int {
        var longest = 0
        var run = 0
        for x in s {
            run = x == c ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }
}
