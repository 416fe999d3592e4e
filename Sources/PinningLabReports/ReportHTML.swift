import Foundation
import PinningLabCore
import PinningLabModel

/// A self-contained HTML page (no external resources): the matrix, the deviations, and per scenario the chain as
/// a small diagram with subjects, keys and which pins match.
enum HTMLReport {
    static func render(_ r: CheckReport) -> String {
        let matrix = VerdictMatrix(r)
        let titles = Dictionary(r.scenarios.map { ($0.id, $0.title) }, uniquingKeysWith: { a, _ in a })

        var h = HTMLPage.head(
            title: "pinlab check: \(r.client)",
            style: """
                h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:0 0 4px}
                .summary{padding:10px 14px;border-radius:8px;margin:12px 0;font-weight:600}
                table.matrix{border-collapse:collapse;margin:8px 0}
                .matrix th,.matrix td{border:1px solid #d7dbe3;padding:3px 6px;text-align:center;white-space:nowrap}
                .matrix th{background:#eef1f6;font-weight:600} .matrix td.name{text-align:left}
                .matrix a{color:inherit;text-decoration:none}
                .exp{color:#667085;font-size:11px;margin-right:3px}
                .m{display:inline-block;width:16px;height:16px;line-height:16px;border-radius:3px;margin:0 1px;font-size:12px;color:#fff}
                .pass{background:#22a05a} .fail{background:#d92d20} .disagree{background:#e08a00} .error{background:#8a4ad8}
                .skipped,.unsupported{background:#c3c8d2} .wrong{background:#22a05a;outline:2px solid #e08a00;outline-offset:-2px}
                .policy,.stricter{background:#2f7fb5} .baselined{background:#d92d20;opacity:.45}
                .legend span{margin-right:12px}
                .matrix.steps td.name{font-size:12px} .resumed{font-size:10px;color:#2f7fb5;margin-left:1px}
                .scenario{background:#fff;border:1px solid #e3e6ed;border-radius:10px;padding:14px 16px;margin:14px 0}
                .teach{color:#3b4252;max-width:980px}
                .chain{display:flex;flex-direction:column;align-items:flex-start;gap:0;margin:10px 0}
                .cert{border:2px solid #5b6b8c;border-radius:8px;padding:6px 10px;background:#f5f7fb;min-width:420px}
                .cert.store{border-style:dashed;background:#fff}
                .cert.pinned{border-color:#22a05a;background:#eefaf2}
                .arrow{margin-left:30px;color:#8a94a6;font-size:12px}
                .badge{display:inline-block;border-radius:10px;padding:0 7px;margin:2px 3px 0 0;font-size:11px;background:#22a05a;color:#fff}
                .role{font-size:11px;color:#667085;text-transform:uppercase;letter-spacing:.04em}
                .row{font-size:12px;color:#3b4252}
                ul.dev li{margin:3px 0}
                details.quiet{margin:8px 0} details.quiet>summary{cursor:pointer;color:#22a05a;font-weight:600}
                """)
        h += """
            <h1>pinlab check: \(xml(r.client))</h1>
            <div class="mono">engines: \(xml(r.engines.joined(separator: ", ")))\(r.platform.map { " · platform \(xml($0.rawValue))" } ?? "") · started \(xml(ISO8601DateFormatter().string(from: r.startedAt))) · \(String(format: "%.2f", r.durationSeconds)) s</div>
            <div class="summary \(r.deviates ? "bad" : "ok")">\(r.deviates ? "Deviates" : "Conforms"): \(xml(r.summary.line))</div>
            <div class="legend">Each cell: expected outcome (A accept, X refuse), then one mark per engine (\(xml(r.engines.joined(separator: ", ")))):
            <span><i class="m pass">✓</i>as expected</span><span><i class="m fail">✗</i>deviates</span>
            <span><i class="m disagree">≠</i>client and server disagree</span>
            <span><i class="m wrong">?</i>refused as expected, but for another reason</span><span><i class="m skipped">·</i>skipped</span>
            <span><i class="m unsupported">∅</i>unsupported</span><span><i class="m error">!</i>error</span>
            \(extraLegend(r, policy: "<span><i class=\"m policy\">P</i>decided by the platform policy, as it prescribes</span>", stricter: "<span><i class=\"m stricter\">S</i>stricter than required</span>", baselined: "<span><i class=\"m baselined\">b</i>deviates as in the baseline</span>"))</div>
            <table class="matrix"><thead><tr><th>scenario</th>
            """
        var header = ""
        for p in r.profiles { header += "<th>\(xml(p.rawValue))</th>" }
        h += header + "</tr></thead><tbody>\n"
        // Rows where every cell went as expected fold away below the rest, so that a run that conforms is a page, not
        // a scroll (the rows and the scenarios stay one click away).
        let byScenario = Dictionary(grouping: r.verdicts, by: \.scenario)
        let quiet = Set(matrix.scenarios.filter { Self.asExpected(byScenario[$0] ?? []) })
        func row(_ id: String) -> String {
            var h = ""
            h +=
                "<tr><td class=\"name\"><a href=\"#s-\(xml(id))\" title=\"\(xml(titles[id] ?? ""))\">\(xml(id))</a></td>"
            for p in r.profiles {
                let vs = matrix.cell(id, p)
                let letter = VerdictMatrix.expectedLetter(vs) ?? ""
                h += "<td><span class=\"exp\">\(letter)</span>"
                for (engine, v) in zip(r.engines, vs) {
                    if let v {
                        let tip =
                            "\(engine): \(v.status) — \(v.reason)"
                            + (v.evidence?.negotiatedGroup.map { " · group \($0)" } ?? "")
                            + (v.evidence?.helloRetryRequest == true ? " after a HelloRetryRequest" : "")
                        let cls =
                            v.baselined == true ? "m baselined" : v.wrongReason ? "m wrong" : "m \(v.status.rawValue)"
                        h += "<i class=\"\(cls)\" title=\"\(xml(tip))\">\(cellMark(v))</i>"
                    } else {
                        h += "<i class=\"m skipped\" title=\"\(xml(engine)): not run\"> </i>"
                    }
                }
                h += "</td>"
            }
            h += "</tr>\n"
            return h
        }
        for id in matrix.scenarios where !quiet.contains(id) { h += row(id) }
        h += "</tbody></table>\n"
        if !quiet.isEmpty {
            let rows = matrix.scenarios.filter { quiet.contains($0) }
            h +=
                "<details class=\"quiet\"><summary>\(rows.count) scenario\(rows.count == 1 ? "" : "s") with every cell as expected</summary>\n"
            h += "<table class=\"matrix\"><thead><tr><th>scenario</th>\(header)</tr></thead><tbody>\n"
            for id in rows { h += row(id) }
            h += "</tbody></table></details>\n"
        }

        h += list("Deviations", r.deviations) { v in
            var li =
                "<i class=\"m \(v.baselined == true ? "baselined" : v.status.rawValue)\">\(cellMark(v))</i> \(cellLink(v)): \(v.baselined == true ? "(baselined) " : "")\(xml(v.reason))"
            if let a = v.alert?.description, !v.reason.contains(a) {
                li += " <span class=\"mono\">(alert \(xml(a)))</span>"
            }
            return li
        }

        h += list("Refused for another reason", r.verdicts.filter(\.wrongReason)) { v in
            "\(cellLink(v)): \(xml(v.reason))"
        }
        for (id, cells) in r.mastgFailures {
            // The failing cells grouped by the OWASP MASTG test whose flaw they show, each with the command that runs it again.
            let weakness = MASTG.entry(id)?.weakness.map { " — weakness \(xml(MASTG.named($0)))" } ?? ""
            h += list("OWASP \(xml(MASTG.named(id)))\(weakness)", cells) { v in
                "\(cellLink(v)): \(xml(v.reason))<br><code>\(xml(r.reproduceCommand(v)))</code>"
            }
        }
        h += list("Decided by the platform policy, or stricter than required", ruleCells(r)) { v in
            "<i class=\"m \(v.status.rawValue)\">\(mark(v.status))</i> \(cellLink(v)): \(xml(v.reason))"
        }
        if let c = r.baseline, c.changed {
            h += list("Changed against the baseline \(xml(c.file))", c.changes) { ch in
                "<code>\(xml(ch.cell))</code>: \(xml(ch.before?.rawValue ?? "not in the baseline")) → \(xml(ch.after.rawValue))\(ch.newlyFailing ? " (newly failing)" : ch.newlyPassing ? " (newly passing)" : "")"
            }
        }
        h += list("Negotiation, as the servers saw this client", NegotiationSummary(r).rows) { row in
            let lines = NegotiationSummary.lines(row).map { "<span class=\"mono\">\(xml($0))</span>" }
            return "<b>\(xml(row.engine))</b>: " + lines.joined(separator: "<br>")
        }
        h += "<h2>Scenarios</h2>\n"
        let loud = r.scenarios.filter { !quiet.contains($0.id) }
        let calm = r.scenarios.filter { quiet.contains($0.id) }
        for s in loud { h += section(s, r, matrix) }
        if !calm.isEmpty {
            h +=
                "<details class=\"quiet\"><summary>\(calm.count) scenario\(calm.count == 1 ? "" : "s") with every cell as expected: chains, keys and pins</summary>\n"
            for s in calm { h += section(s, r, matrix) }
            h += "</details>\n"
        }
        h += HTMLPage.foot
        return h
    }

    /// Whether every cell of a scenario went as expected: nothing deviates, nothing refused for another reason.
    static func asExpected(_ vs: [Verdict]) -> Bool {
        vs.allSatisfy { !$0.status.isDeviation && !$0.wrongReason && $0.baselined != true }
    }

    /// A scenario's section: what it teaches, the chain as served with the pins it matches, its steps and its
    /// deviations.
    static func section(_ s: ScenarioSheet, _ r: CheckReport, _ matrix: VerdictMatrix) -> String {
        var h = ""
        h += "<section class=\"scenario\" id=\"s-\(xml(s.id))\"><h3>\(xml(s.id)) — \(xml(s.title))</h3>\n"
        h += "<p class=\"teach\">\(xml(s.teaching))</p>\n"
        h += "<div class=\"row\">client trusts <code>\(xml(s.trust))</code> · built for <code>\(xml(s.pinned))</code>"
        if s.clientAuth != "none" {
            h +=
                " · server client auth <code>\(xml(s.clientAuth))</code>, client presents <code>\(xml(s.presents ?? "nothing"))</code>"
        }
        h +=
            " · expected: "
            + PinProfile.all.map { p in
                "<code>\(xml(p.rawValue))</code> \(s.expected[p.rawValue] == .accept ? "A" : "X")"
            }.joined(separator: ", ") + "</div>\n"
        if let p = s.policy { h += "<div class=\"row\">policy: \(xml(p))</div>\n" }
        for (profile, why) in (s.varies ?? [:]).sorted(by: {
            PinProfile(rawValue: $0.key) < PinProfile(rawValue: $1.key)
        }) {
            h += "<div class=\"row\">varies (<code>\(xml(profile))</code>): \(xml(why))</div>\n"
        }
        h += "<div class=\"chain\">\n"
        for (i, c) in s.chain.enumerated() {
            if i > 0 {
                h +=
                    "<div class=\"arrow\">\(c.onTheWire ? "↓ sent \(ordinal(i + 1))" : "↓ in the client's trust store, not sent")</div>\n"
            } else {
                h += "<div class=\"arrow\">sent first ↓</div>\n"
            }
            let cls =
                c.onTheWire
                ? (c.matchedBy.isEmpty ? "cert" : "cert pinned")
                : (c.matchedBy.isEmpty ? "cert store" : "cert store pinned")
            h += "<div class=\"\(cls)\"><span class=\"role\">\(xml(c.role))</span> <b>\(xml(c.name))</b><br>"
            h += "<span class=\"row\">subject <code>\(xml(c.subject))</code></span><br>"
            h += "<span class=\"row\">issuer <code>\(xml(c.issuer))</code></span><br>"
            h +=
                "<span class=\"row\">key <b>\(xml(c.keyName))</b> (\(xml(c.keyType))) · SPKI sha256 <code>\(xml(String(c.spkiSHA256.prefix(16))))…</code></span>"
            if !c.matchedBy.isEmpty {
                h += "<br>" + c.matchedBy.map { "<span class=\"badge\">pin: \(xml($0.rawValue))</span>" }.joined()
            }
            h += "</div>\n"
        }
        h += "</div>\n"
        h += stepTimeline(s.id, r, matrix)
        if !r.engines.isEmpty {
            h += "<div class=\"row\">"
            for p in r.profiles {
                let vs = matrix.cell(s.id, p).compactMap { $0 }
                let bad = vs.filter { $0.status.isDeviation }
                if !bad.isEmpty {
                    h +=
                        "<div>✗ <code>\(xml(p.rawValue))</code>: "
                        + bad.map { "\(xml($0.engine)): \(xml($0.reason))" }.joined(separator: "; ") + "</div>"
                }
            }
            h += "</div>\n"
        }
        h += "</section>\n"
        return h
    }

    /// `<h2>title (N)</h2>` and a list of `items`, one `<li>` each (`item` is its HTML); nothing when there are none.
    static func list<T>(_ title: String, _ items: [T], _ item: (T) -> String) -> String {
        guard !items.isEmpty else { return "" }
        return "<h2>\(title) (\(items.count))</h2><ul class=\"dev\">\n"
            + items.map { "<li>\(item($0))</li>\n" }.joined() + "</ul>\n"
    }

    /// `scenario × profile × engine`, the scenario linking to its section of the page.
    static func cellLink(_ v: Verdict) -> String {
        "<a href=\"#s-\(xml(v.scenario))\"><code>\(xml(v.scenario))</code></a> × <code>\(xml(v.profile.rawValue))</code> × \(xml(v.engine))"
    }

    /// A scenario of several connections: its steps in time order, one row each (host, the party that answered, the
    /// pins held), and per cell the step's expected outcome and one mark per engine; ↻ marks a connection that
    /// resumed an earlier session (no certificate was sent). Empty for a scenario of one connection.
    static func stepTimeline(_ id: String, _ r: CheckReport, _ matrix: VerdictMatrix) -> String {
        let cells = r.verdicts.filter { $0.scenario == id }
        guard let steps = cells.compactMap(\.steps).max(by: { $0.count < $1.count }), steps.count > 1 else { return "" }
        var h = "<table class=\"matrix steps\"><thead><tr><th>step</th><th>host</th><th>answered by</th><th>pins</th>"
        for p in r.profiles { h += "<th>\(xml(p.rawValue))</th>" }
        h += "</tr></thead><tbody>\n"
        for (k, step) in steps.enumerated() {
            h +=
                "<tr><td>\(step.step)</td><td class=\"name\"><code>\(xml(step.host))</code></td><td class=\"name\">\(xml(step.party))</td>"
            h += "<td class=\"name\">\(xml(step.pins.rawValue))</td>"
            for p in r.profiles {
                let vs = matrix.cell(id, p)
                let first = vs.compactMap { $0?.steps }.first { $0.count > k }?[k]
                h += "<td><span class=\"exp\">\(first.map { $0.expected == .accept ? "A" : "X" } ?? "")</span>"
                for (engine, v) in zip(r.engines, vs) {
                    if let v, let st = v.steps, k < st.count {
                        let resumed = st[k].evidence?.resumption
                        let tip =
                            "\(engine): step \(st[k].step) \(st[k].status) — \(st[k].reason)"
                            + (resumed.map { " (resumed: \($0.rawValue))" } ?? "")
                        h += "<i class=\"m \(st[k].status.rawValue)\" title=\"\(xml(tip))\">\(mark(st[k].status))</i>"
                        if resumed != nil {
                            h += "<span class=\"resumed\" title=\"resumed an earlier session\">↻</span>"
                        }
                    } else if let v {
                        h +=
                            "<i class=\"m \(v.status.rawValue)\" title=\"\(xml("\(engine): \(v.status) — \(v.reason)"))\">\(cellMark(v))</i>"
                    } else {
                        h += "<i class=\"m skipped\" title=\"\(xml(engine)): not run\"> </i>"
                    }
                }
                h += "</td>"
            }
            h += "</tr>\n"
        }
        return h + "</tbody></table>\n"
    }

    static func ordinal(_ n: Int) -> String {
        switch n {
        case 1: return "first"
        case 2: return "second"
        case 3: return "third"
        case 4: return "fourth"
        default: return "#\(n)"
        }
    }
}
