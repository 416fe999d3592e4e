import Foundation
import PinningLabCore
import PinningLabModel

/// JUnit XML: one `<testsuite>` per engine, one `<testcase>` per cell. Deviations are `<failure>`, harness
/// errors `<error>`, skipped and unsupported cells `<skipped>`. Validates against `ReportSchemas.junitXSD`.
enum JUnitReport {
    static func render(_ r: CheckReport) -> String {
        let s = r.summary
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"\(xml("pinlab check: " + r.client))\" tests=\"\(s.total)\" "
        let known = r.verdicts.filter { $0.baselined == true }
        let knownFailures = known.filter { $0.status == .fail || $0.status == .disagree }.count
        out += "failures=\"\(s.fail + s.disagree - knownFailures)\" errors=\"\(s.error - (known.count - knownFailures))\" skipped=\"\(s.skipped + s.unsupported + known.count)\" "
        out += "time=\"\(seconds(r.durationSeconds))\">\n"
        let engines = r.engines.isEmpty ? orderedUnique(r.verdicts.map(\.engine)) : r.engines
        let stamp = ISO8601DateFormatter().string(from: r.startedAt).replacingOccurrences(of: "Z", with: "")
        for (i, engine) in engines.enumerated() {
            let vs = r.verdicts.filter { $0.engine == engine }
            let es = VerdictSummary(vs)
            let ek = vs.filter { $0.baselined == true }
            let ekFailures = ek.filter { $0.status == .fail || $0.status == .disagree }.count
            let time = vs.reduce(0) { $0 + $1.timings.clientMilliseconds } / 1000
            out += "  <testsuite name=\"\(xml("\(r.client).\(engine)"))\" package=\"pinlab\" id=\"\(i)\" "
            out += "tests=\"\(es.total)\" failures=\"\(es.fail + es.disagree - ekFailures)\" errors=\"\(es.error - (ek.count - ekFailures))\" "
            out += "skipped=\"\(es.skipped + es.unsupported + ek.count)\" time=\"\(seconds(time))\" timestamp=\"\(stamp)\" hostname=\"localhost\">\n"
            out += "    <properties>\n"
            out += "      <property name=\"client\" value=\"\(xml(r.client))\"/>\n"
            out += "      <property name=\"engine\" value=\"\(xml(engine))\"/>\n"
            if let p = r.platform { out += "      <property name=\"platform\" value=\"\(xml(p.rawValue))\"/>\n" }
            out += "    </properties>\n"
            for v in vs {
                out += "    <testcase classname=\"\(xml("pinlab.\(engine).\(v.scenario)"))\" name=\"\(xml("\(v.scenario) [\(v.profile)]"))\" "
                out += "time=\"\(seconds(v.timings.clientMilliseconds / 1000))\""
                let body = detail(v)
                if v.baselined == true {
                    // A known divergence the committed baseline records: reported, not failed.
                    out += ">\n      <skipped message=\"\(xml("baselined \(v.status): \(v.reason)"))\"/>\n    </testcase>\n"
                    continue
                }
                switch v.status {
                case .pass, .policy, .stricter:
                    out += ">\n      <system-out>\(xml(body))</system-out>\n    </testcase>\n"
                case .fail, .disagree:
                    out += ">\n      <failure type=\"\(v.status)\" message=\"\(xml(v.reason))\">\(xml(body))</failure>\n    </testcase>\n"
                case .skipped, .unsupported:
                    out += ">\n      <skipped message=\"\(xml("\(v.status): \(v.reason)"))\"/>\n    </testcase>\n"
                default:
                    out += ">\n      <error type=\"\(v.status)\" message=\"\(xml(v.reason))\">\(xml(body))</error>\n    </testcase>\n"
                }
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    static func detail(_ v: Verdict) -> String {
        var lines = ["expected: \(v.expected)", "observed: \(v.observed?.rawValue ?? "not run")"]
        if let c = v.claim { lines.append("client claims: \(c.rawValue)") }
        if let c = v.category { lines.append("category: \(c)") }
        if let a = v.alert { lines.append("alert: \(a)") }
        if let d = v.clientDetail, !d.isEmpty { lines.append("client: \(d)") }
        if v.status == .policy || v.status == .stricter { lines.append("verdict: \(v.status) (not a pinning deviation)") }
        lines.append("reason: \(v.reason)")
        return lines.joined(separator: "\n")
    }

    static func seconds(_ s: Double) -> String { String(format: "%.3f", s) }
}

/// Escapes text for XML attributes and content, dropping characters XML 1.0 forbids.
package func xml(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.count)
    for u in s.unicodeScalars {
        switch u {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        case "\n", "\t", "\r": out.unicodeScalars.append(u)
        default:
            if u.value < 0x20 || (0xD800...0xDFFF).contains(u.value) || u.value == 0xFFFE || u.value == 0xFFFF {
                out += "\u{FFFD}"
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out
}
