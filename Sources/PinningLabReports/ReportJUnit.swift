package import Foundation
import PinningLabCore
import PinningLabModel

/// A JUnit XML document, the one JUnit writer of every report (`pinlab check`, `pinlab intercept`): the counts of
/// each suite and of the whole document are derived from the cases, so they cannot disagree with them. Validates
/// against `ReportSchemas.junitXSD`.
package struct JUnitDocument {
    package struct TestCase {
        package enum Outcome {
            case passed
            case failure(type: String, message: String)
            case error(type: String, message: String)
            case skipped(message: String)
        }
        package var classname: String
        package var name: String
        package var seconds: Double
        package var outcome: Outcome
        /// The text of the `<failure>` or `<error>` element.
        package var detail: String
        /// What the case recorded besides (`<system-out>`), if anything.
        package var systemOut: String?

        package init(
            classname: String, name: String, seconds: Double, outcome: Outcome, detail: String = "",
            systemOut: String? = nil
        ) {
            (self.classname, self.name, self.seconds, self.outcome) = (classname, name, seconds, outcome)
            (self.detail, self.systemOut) = (detail, systemOut)
        }
    }

    package struct Suite {
        package var name: String
        package var seconds: Double
        package var timestamp: Date
        package var properties: [(name: String, value: String)]
        package var cases: [TestCase]

        package init(
            name: String, seconds: Double, timestamp: Date, properties: [(name: String, value: String)] = [],
            cases: [TestCase]
        ) {
            (self.name, self.seconds, self.timestamp, self.properties, self.cases) = (
                name, seconds, timestamp, properties, cases
            )
        }
    }

    package var name: String
    package var seconds: Double
    package var suites: [Suite]

    package init(name: String, seconds: Double, suites: [Suite]) {
        (self.name, self.seconds, self.suites) = (name, seconds, suites)
    }

    private static func counts(_ cases: [TestCase]) -> String {
        var (failures, errors, skipped) = (0, 0, 0)
        for c in cases {
            switch c.outcome {
            case .passed: break
            case .failure: failures += 1
            case .error: errors += 1
            case .skipped: skipped += 1
            }
        }
        return "tests=\"\(cases.count)\" failures=\"\(failures)\" errors=\"\(errors)\" skipped=\"\(skipped)\""
    }

    package func render() -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out +=
            "<testsuites name=\"\(xml(name))\" \(Self.counts(suites.flatMap(\.cases))) time=\"\(Self.seconds(seconds))\">\n"
        let formatter = ISO8601DateFormatter()
        for (i, suite) in suites.enumerated() {
            let stamp = formatter.string(from: suite.timestamp).replacingOccurrences(of: "Z", with: "")
            out +=
                "  <testsuite name=\"\(xml(suite.name))\" package=\"pinlab\" id=\"\(i)\" \(Self.counts(suite.cases)) "
            out += "time=\"\(Self.seconds(suite.seconds))\" timestamp=\"\(stamp)\" hostname=\"localhost\">\n"
            if !suite.properties.isEmpty {
                out += "    <properties>\n"
                for p in suite.properties {
                    out += "      <property name=\"\(xml(p.name))\" value=\"\(xml(p.value))\"/>\n"
                }
                out += "    </properties>\n"
            }
            for c in suite.cases {
                out +=
                    "    <testcase classname=\"\(xml(c.classname))\" name=\"\(xml(c.name))\" time=\"\(Self.seconds(c.seconds))\">\n"
                switch c.outcome {
                case .passed: break
                case .failure(let type, let message):
                    out +=
                        "      <failure type=\"\(xml(type))\" message=\"\(xml(message))\">\(xml(c.detail))</failure>\n"
                case .error(let type, let message):
                    out += "      <error type=\"\(xml(type))\" message=\"\(xml(message))\">\(xml(c.detail))</error>\n"
                case .skipped(let message):
                    out += "      <skipped message=\"\(xml(message))\"/>\n"
                }
                if let o = c.systemOut { out += "      <system-out>\(xml(o))</system-out>\n" }
                out += "    </testcase>\n"
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    static func seconds(_ s: Double) -> String { String(format: "%.3f", s) }
}

/// A check report in JUnit XML: one `<testsuite>` per engine, one `<testcase>` per cell. Deviations are `<failure>`,
/// harness errors `<error>`, skipped and unsupported cells (and baselined deviations) `<skipped>`.
enum JUnitReport {
    static func render(_ r: CheckReport) -> String {
        let engines = r.engines.isEmpty ? orderedUnique(r.verdicts.map(\.engine)) : r.engines
        let suites = engines.map { engine in
            let vs = r.verdicts.filter { $0.engine == engine }
            var properties = [(name: "client", value: r.client), (name: "engine", value: engine)]
            if let p = r.platform { properties.append((name: "platform", value: p.rawValue)) }
            return JUnitDocument.Suite(
                name: "\(r.client).\(engine)", seconds: vs.reduce(0) { $0 + $1.timings.clientMilliseconds } / 1000,
                timestamp: r.startedAt, properties: properties, cases: vs.map { testCase($0, engine: engine) })
        }
        return JUnitDocument(name: "pinlab check: " + r.client, seconds: r.durationSeconds, suites: suites).render()
    }

    static func testCase(_ v: Verdict, engine: String) -> JUnitDocument.TestCase {
        let body = detail(v)
        let outcome: JUnitDocument.TestCase.Outcome
        var systemOut: String? = nil
        if v.baselined == true {
            // A known divergence the committed baseline records: reported, not failed.
            outcome = .skipped(message: "baselined \(v.status): \(v.reason)")
        } else {
            switch v.status {
            case .pass, .policy, .stricter:
                outcome = .passed
                systemOut = body
            case .fail, .disagree: outcome = .failure(type: "\(v.status)", message: v.reason)
            case .skipped, .unsupported: outcome = .skipped(message: "\(v.status): \(v.reason)")
            default: outcome = .error(type: "\(v.status)", message: v.reason)
            }
        }
        return JUnitDocument.TestCase(
            classname: "pinlab.\(engine).\(v.scenario)", name: "\(v.scenario) [\(v.profile)]",
            seconds: v.timings.clientMilliseconds / 1000, outcome: outcome, detail: body, systemOut: systemOut)
    }

    static func detail(_ v: Verdict) -> String {
        var lines = ["expected: \(v.expected)", "observed: \(v.observed?.rawValue ?? "not run")"]
        if let c = v.claim { lines.append("client claims: \(c.rawValue)") }
        if let c = v.category { lines.append("category: \(c)") }
        if let a = v.alert { lines.append("alert: \(a)") }
        if let d = v.clientDetail, !d.isEmpty { lines.append("client: \(d)") }
        if v.status == .policy || v.status == .stricter {
            lines.append("verdict: \(v.status) (not a pinning deviation)")
        }
        lines.append("reason: \(v.reason)")
        return lines.joined(separator: "\n")
    }
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
