import Foundation
import PinningLabBase
import PinningLabPKI
import PinningLabReports

extension TimelineReport {
    /// Which pins break, on which day, and why: one line per pin set, then the plan.
    public func text() -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        func date(_ day: Int) -> String { f.string(from: start.addingTimeInterval(Double(day) * 86400)) }
        var out =
            "pinlab timeline — policy \(policy.name): \(policySummary); \(renewals.count) issuances over \(horizonDays) days from \(date(0)) (\(engine))\n"
            + (trustStore.map {
                "the client trusts \(TimelineTrustStore.roots($0, renewalRoot: "lab-root-2").joined(separator: " and ")) from day 0 (--trust-store \($0.rawValue))\n"
            } ?? "")
            + "\n"
        let width = max(10, lanes.map(\.lane.name.count).max() ?? 10)
        for l in lanes {
            let name = l.lane.name.padding(toLength: width, withPad: " ", startingAt: 0)
            if let b = l.firstBreak {
                let r = renewals[b.renewal]
                out +=
                    "BREAKS  \(name)  day \(b.day) (\(date(b.day)), issuance \(b.renewal)): \(r.changes.joined(separator: ", "))"
                    + (b.detail.map { " — the client: \($0)" } ?? "") + "\n"
            } else if l.steps.first?.accepted == false {
                out +=
                    "NEVER   \(name)  refused from day 0: these pins do not match the chain the app was built against\n"
            } else {
                out += "holds   \(name)  through day \(horizonDays)\n"
            }
        }
        out += "\nissuances:\n"
        for r in renewals {
            let chain =
                ["leaf(\(r.key))", r.intermediate] + (r.crossSigned ? ["lab-root-2 cross-signed by lab-root"] : [])
            out +=
                "  day \(String(r.day).padding(toLength: 4, withPad: " ", startingAt: 0)) \(date(r.day))  \(r.validityDays)d  \(chain.joined(separator: " → "))"
                + (r.changes.isEmpty ? "" : "  [\(r.changes.joined(separator: ", "))]") + "\n"
        }
        if let h = policy.nextHierarchy {
            // Which root ends the path of the cross-signed chain depends on the verifier and its store (issue 41).
            out +=
                "\ntrust-store drift: whether a root pin on lab-root or lab-root-2 holds after the switch to \(h.name) depends on the "
                + "verifier and on which roots its store holds; measured for OpenSSL, GnuTLS, Go, the JDK, Node and Python in the "
                + "DocC article TrustStoreDrift (Sources/PinningLab/PinningLab.docc/TrustStoreDrift.md, Compatibility/drift.py)\n"
        }
        out += String(
            format: "\nissued %d chains in %.2f s, %d handshakes in %.2f s\n", renewals.count, issueSeconds,
            renewals.count * lanes.count, runSeconds)
        return out
    }

    var policySummary: String {
        var parts = [policy.followsSC081 ? "SC-081v3 validity" : "\(policy.validityDays)-day certificates"]
        for step in policy.validitySteps ?? [] { parts.append("\(step.days) days from \(step.from)") }
        parts.append(policy.rekey ? "new key at every renewal" : "same key at renewal")
        if policy.poolSize > 1 { parts.append("\(policy.poolSize) intermediates, \(policy.rotation.rawValue)") }
        if let d = policy.rolloverDay {
            let to = policy.nextHierarchy.map { " to \($0.name)" } ?? ""
            let on = policy.rolloverDate.map { " (\($0))" } ?? ""
            parts.append("root rollover\(to) on day \(d)\(on), cross-signed \(policy.crossSignDays) days")
        }
        return parts.joined(separator: ", ")
    }

    public func json() throws -> String { try JSONOutput.string(self) + "\n" }

    /// One lane per pin set on a time axis: green while it holds, red from the first break, a tick at every
    /// issuance (labelled with what changed where something did). Self-contained SVG in an HTML page.
    public func html() -> String {
        let left = 190.0
        let right = 30.0
        let width = 1000.0
        let laneHeight = 34.0
        let top = 70.0
        let plot = width - left - right
        func x(_ day: Int) -> Double { left + plot * Double(day) / Double(max(1, horizonDays)) }
        let height = top + Double(lanes.count) * laneHeight + 60
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"\(Int(width))\" role=\"img\" aria-label=\"pin sets over time\">\n"
        svg +=
            "<style>text{font:12px -apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;fill:#1d2330}.small{font-size:10px;fill:#475467}</style>\n"
        // Issuance ticks.
        for r in renewals {
            let changed = r.changes.contains { !$0.hasPrefix("renewed") }
            svg +=
                "<line x1=\"\(x(r.day))\" y1=\"\(top - 8)\" x2=\"\(x(r.day))\" y2=\"\(top + Double(lanes.count) * laneHeight)\" stroke=\"\(changed ? "#98a2b3" : "#e4e7ec")\" stroke-width=\"1\"><title>day \(r.day): \(esc(r.changes.isEmpty ? "the certificate the app was built against" : r.changes.joined(separator: ", ")))</title></line>\n"
        }
        if let d = policy.rolloverDay {
            svg += "<text x=\"\(x(d) + 3)\" y=\"\(top - 12)\" class=\"small\">root rollover (day \(d))</text>\n"
        }
        for (i, l) in lanes.enumerated() {
            let y = top + Double(i) * laneHeight
            svg += "<text x=\"8\" y=\"\(y + 20)\">\(esc(l.lane.name))</text>\n"
            // Segments between issuances, coloured by that issuance's outcome.
            for (k, step) in l.steps.enumerated() {
                let end = k + 1 < l.steps.count ? l.steps[k + 1].day : horizonDays
                let colour = step.accepted ? "#34a853" : "#d93025"
                svg +=
                    "<rect x=\"\(x(step.day))\" y=\"\(y + 8)\" width=\"\(max(1, x(end) - x(step.day)))\" height=\"16\" fill=\"\(colour)\"><title>\(esc(l.lane.name)) day \(step.day)–\(end): \(step.accepted ? "accepted" : "refused")\(step.detail.map { " — " + esc($0) } ?? "")</title></rect>\n"
            }
            if let b = l.firstBreak {
                svg +=
                    "<text x=\"\(min(x(b.day) + 4, width - right - 120))\" y=\"\(y + 20)\" class=\"small\" fill=\"#fff\" style=\"fill:#fff\">breaks day \(b.day)</text>\n"
            }
        }
        let axisY = top + Double(lanes.count) * laneHeight + 18
        let step = horizonDays > 400 ? 180 : horizonDays > 120 ? 30 : horizonDays > 30 ? 7 : 1
        var d = 0
        while d <= horizonDays {
            svg += "<text x=\"\(x(d))\" y=\"\(axisY)\" class=\"small\" text-anchor=\"middle\">\(d)</text>\n"
            d += step
        }
        svg +=
            "<text x=\"\(left + plot / 2)\" y=\"\(axisY + 20)\" class=\"small\" text-anchor=\"middle\">days from \(esc(ISO8601DateFormatter().string(from: start).prefix(10).description))</text>\n"
        svg += "</svg>\n"
        var rows = ""
        for l in lanes {
            let verdict: String
            if let b = l.firstBreak {
                verdict = "breaks on day \(b.day): " + esc(renewals[b.renewal].changes.joined(separator: ", "))
            } else {
                verdict = "holds through day \(horizonDays)"
            }
            rows +=
                "<tr><td><code>\(esc(l.lane.name))</code></td><td>\(esc(l.lane.description))</td><td class=\"\(l.firstBreak == nil ? "ok" : "bad")\">\(verdict)</td></tr>\n"
        }
        return HTMLPage.head(
            title: "pinlab timeline: \(policy.name)",
            style: """
                svg{max-width:100%;height:auto;background:#fff;border:1px solid #e4e7ec;border-radius:8px}
                table{border-collapse:collapse;margin:12px 0} th,td{border:1px solid #d7dbe3;padding:4px 8px;text-align:left}
                th{background:#eef1f6}
                """) + """
                <h1>pinlab timeline — \(esc(policy.name))</h1>
                <p>\(esc(policySummary)); \(renewals.count) issuances over \(horizonDays) days, each chain served on \(esc(engine)) and checked by the reference client with every pin set (green: accepted, red: refused).</p>
                \(svg)
                <table><tr><th>pin set</th><th>pins</th><th>verdict</th></tr>
                \(rows)</table>

                """ + HTMLPage.foot
    }
}
