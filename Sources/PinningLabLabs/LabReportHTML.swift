import Foundation
public import PinningLab
import PinningLabCore

/// The lab's picture: one self-contained HTML page (no external resources) with, per scenario, the chain as a
/// diagram (what was sent, what the client's trust store adds, the path a verifier builds, which pin matched),
/// and the learner's row beside the correct client's row. Fits a 1280-pixel laptop screen and prints on A4.
public enum LabReportHTML {
    public static func render(_ grade: LabGrade, correct: CheckReport?) -> String {
        let lab = grade.lab
        let r = grade.report
        let sheets = Dictionary(r.scenarios.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var h = HTMLPage.head(
            title: "Lab \(lab.number): \(lab.title)",
            style: """
                body{font:15px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:20px 28px;color:#1d2330;background:#fbfbfd;max-width:1220px}
                h1{font-size:24px;margin:0 0 4px} h2{font-size:18px;margin:0 0 6px}
                code,.mono{font-family:"SF Mono",Menlo,"DejaVu Sans Mono",monospace;font-size:13px}
                .goal{color:#3b4252;margin:2px 0 10px}
                .verdict{padding:10px 14px;border-radius:8px;margin:10px 0 16px;font-weight:600;font-size:16px}
                .scenario{background:#fff;border:1px solid #e3e6ed;border-radius:10px;padding:14px 18px;margin:14px 0;break-inside:avoid}
                .grid{display:grid;grid-template-columns:minmax(380px,1fr) minmax(420px,1.2fr);gap:22px;align-items:start}
                .teach{color:#3b4252;margin:4px 0 10px;font-size:14px}
                .cert{border:2px solid #5b6b8c;border-radius:8px;padding:5px 10px;background:#f5f7fb;margin:0}
                .cert.store{border-style:dashed;background:#fff}
                .cert.off{border-color:#c3c8d2;color:#8a94a6;background:#f4f4f6}
                .cert.pinned{border-color:#15803d;background:#e9f8ee}
                .cert .name{font-weight:700;font-size:15px}
                .role{font-size:11px;color:#667085;text-transform:uppercase;letter-spacing:.05em}
                .small{font-size:12.5px;color:#3b4252}
                .arrow{margin:1px 0 1px 26px;color:#8a94a6;font-size:12px}
                .badge{display:inline-block;border-radius:10px;padding:0 8px;margin:3px 4px 0 0;font-size:12px;background:#15803d;color:#fff}
                .badge.miss{background:#b42318} .cert.off .badge{background:#b45309}
                .tag{display:inline-block;border-radius:4px;padding:0 5px;font-size:11px;background:#e6e9f0;color:#3b4252;margin-left:4px}
                table.rows{border-collapse:collapse;width:100%;margin:4px 0 8px}
                .rows th,.rows td{border:1px solid #d7dbe3;padding:5px 7px;text-align:center}
                .rows th{background:#eef1f6;font-weight:600;font-size:13px} .rows td.who{text-align:left;font-weight:600;white-space:nowrap}
                .o{display:inline-block;min-width:64px;border-radius:4px;padding:1px 4px;margin:1px;font-size:12.5px;color:#fff}
                .pass{background:#15803d} .fail{background:#b42318} .disagree{background:#b45309} .error{background:#7e3fc2}
                .skipped,.unsupported{background:#98a2b3} .stricter,.policy{background:#0e7490}
                .exp{font-size:12px;color:#475467}
                .pins{font-size:13px;margin:6px 0}
                .pins li{margin:2px 0}
                .why{border-left:4px solid #b42318;background:#fff6f5;padding:6px 10px;margin:8px 0;font-size:14px}
                .why b{color:#7f1d1d}
                .legend{font-size:13px;color:#475467}
                table.glance{width:auto;margin:0 0 12px} .glance td{padding:3px 8px} .glance .o{min-width:0} .glance a{color:inherit}
                @media print{body{background:#fff;margin:8mm;max-width:none;font-size:11pt}.scenario{border-color:#999}
                  .grid{grid-template-columns:1fr 1.2fr}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
                """)
        h += """
            <h1>Lab \(lab.number) — \(xml(lab.title))</h1>
            <div class="goal">\(xml(lab.goal))</div>
            <div class="mono">client: \(xml(r.client)) · engines: \(xml(r.engines.joined(separator: ", "))) · profiles: \(xml(lab.profiles.map(\.rawValue).joined(separator: ", ")))</div>
            """
        h +=
            grade.passed
            ? "<div class=\"verdict ok\">Passed: every cell as expected on every engine. \(xml(lab.lesson))</div>\n"
            : "<div class=\"verdict bad\">Not yet: \(r.summary.deviations) of \(grade.cellsRun) cells wrong. \(xml(lab.tryNext))</div>\n"
        h += glance(lab: lab, report: r)
        h +=
            "<div class=\"legend\">Chains: solid boxes were sent by the server, in order; dashed boxes come from the "
            + "client's trust store; grey boxes were sent but are not on the path a verifier builds. Green: a pin of this "
            + "lab matches the certificate's key (or its bytes, for <code>leaf-cert</code>); amber: it matches a certificate "
            + "that is not in the validated chain, which proves nothing. Rows: "
            + "<span class=\"o pass\">accepted ✓</span> as expected, <span class=\"o fail\">refused ✗</span> wrong, one per engine; "
            + "<span class=\"o stricter\">refused S</span> stricter than required, not a mistake.</div>\n"

        for id in lab.scenarios {
            guard let s = sheets[id] else { continue }
            h += "<section class=\"scenario\" id=\"s-\(xml(id))\"><h2>\(xml(id)) — \(xml(s.title))</h2>\n"
            h += "<div class=\"teach\">\(xml(s.teaching))</div>\n<div class=\"grid\"><div>\n"
            h += chainDiagram(s, profiles: lab.profiles)
            h += "</div><div>\n"
            h += rowsTable(id, lab: lab, learner: r, correct: correct)
            h += pinList(s, profiles: lab.profiles)
            // Cells of one scenario that went wrong the same way are explained once.
            var groups: [(profiles: [String], failure: LabFailure)] = []
            for f in grade.failures where f.cell.scenario == id {
                if let i = groups.firstIndex(where: {
                    $0.failure.did == f.did && $0.failure.shouldHave == f.shouldHave
                        && $0.failure.missed == f.missed && $0.failure.engines == f.engines
                }) {
                    groups[i].profiles.append(f.cell.profile.rawValue)
                } else {
                    groups.append(([f.cell.profile.rawValue], f))
                }
            }
            for g in groups {
                let f = g.failure
                h +=
                    "<div class=\"why\"><b>✗ \(xml(g.profiles.joined(separator: ", ")))</b> (\(xml(f.engines.joined(separator: ", ")))): "
                    + "\(xml(f.did))<br><b>Should have:</b> \(xml(f.shouldHave))<br><b>Missed:</b> \(xml(f.missed))</div>\n"
            }
            h += "</div></div></section>\n"
        }
        h += HTMLPage.foot
        return h
    }

    /// The path a verifier builds, by names: from the leaf, follow issuer to subject (certificates on the wire
    /// first, then the trust store) until a trusted root or a dead end. A sketch for the picture; the real verifier
    /// also checks signatures, dates and names.
    /// A verdict's mark: ✓ as expected, ✗ wrong, S stricter than required (not a mistake), · not run.
    static func mark(_ status: Verdict.Status) -> String {
        status == .pass ? "✓" : status.isDeviation ? "✗" : status == .stricter ? "S" : "·"
    }

    static func validatedPath(_ s: ScenarioSheet) -> [String] {
        let links = s.chain
        guard let start = links.first(where: { $0.role == "leaf" }) ?? links.first else { return [] }
        var path = [start]
        let trusted = Set(s.trust.split(separator: "+").map(String.init))
        while let last = path.last, !trusted.contains(last.name), last.subject != last.issuer, path.count < 8 {
            let candidates = links.filter { c in c.subject == last.issuer && !path.contains { $0.name == c.name } }
            guard let next = candidates.first(where: { trusted.contains($0.name) }) ?? candidates.first else { break }
            path.append(next)
        }
        guard let end = path.last, trusted.contains(end.name) else { return [] }
        return path.map(\.name)
    }

    static func chainDiagram(_ s: ScenarioSheet, profiles: [PinProfile]) -> String {
        let path = Set(validatedPath(s))
        var h =
            "<div class=\"small\">client trusts <code>\(xml(s.trust))</code> · built for <code>\(xml(s.pinned))</code>"
        if s.clientAuth != "none" {
            h +=
                " · server wants a client certificate (\(xml(s.clientAuth))), client has <code>\(xml(s.presents ?? "none"))</code>"
        }
        h += "</div>\n"
        if path.isEmpty {
            h +=
                "<div class=\"small\" style=\"color:#b42318\"><b>No path to a trusted root</b>: a verifier refuses this "
                + "chain whatever the pins say.</div>\n"
        }
        var wireIndex = 0
        for (i, c) in s.chain.enumerated() {
            if c.onTheWire { wireIndex += 1 }
            if i > 0 {
                h +=
                    "<div class=\"arrow\">\(c.onTheWire ? "sent #\(wireIndex)" : "from the trust store (not sent)")</div>\n"
            }
            let matched = c.matchedBy.filter { profiles.contains($0) }
            let onPath = path.contains(c.name)
            var cls = "cert"
            if !c.onTheWire { cls += " store" }
            if !path.isEmpty && !onPath { cls += " off" } else if !matched.isEmpty { cls += " pinned" }
            h += "<div class=\"\(cls)\"><span class=\"role\">\(xml(c.role))</span>"
            if c.onTheWire && i == 0 { h += "<span class=\"tag\">sent #1</span>" }
            if !path.isEmpty && !onPath { h += "<span class=\"tag\">not in the validated chain</span>" }
            h +=
                "<br><span class=\"name\">\(xml(c.name))</span> <span class=\"small\">key <b>\(xml(c.keyName))</b> "
                + "(\(xml(c.keyType)))</span><br><span class=\"small\">subject <code>\(xml(c.subject))</code></span>"
            if !matched.isEmpty {
                let but = !path.isEmpty && !onPath ? ", but proves nothing here" : ""
                h +=
                    "<br>"
                    + matched.map { "<span class=\"badge\">pin \(xml($0.rawValue)) matches\(but)</span>" }.joined()
            }
            h += "</div>\n"
        }
        return h
    }

    /// The whole lab at a glance: scenario × profile, what a correct client does, and your client per engine.
    static func glance(lab: TeachingLab, report r: CheckReport) -> String {
        var h = "<table class=\"rows glance\"><thead><tr><th>at a glance</th>"
        for p in lab.profiles { h += "<th>\(xml(p.rawValue))</th>" }
        h += "</tr></thead><tbody>\n"
        for id in lab.scenarios {
            h += "<tr><td class=\"who\"><a href=\"#s-\(xml(id))\">\(xml(id))</a></td>"
            for p in lab.profiles {
                let vs = r.engines.compactMap { r.verdict(id, p, $0) }
                let must = vs.first.map { $0.expected == .accept ? "accept" : "refuse" } ?? "?"
                h += "<td><span class=\"exp\">must \(must)</span> "
                for v in vs {
                    let mark = Self.mark(v.status)
                    h +=
                        "<span class=\"o \(xml(v.status.rawValue))\" title=\"\(xml(v.engine)): \(xml(v.reason))\">\(xml(v.engine)) \(mark)</span>"
                }
                h += "</td>"
            }
            h += "</tr>\n"
        }
        return h + "</tbody></table>\n"
    }

    static func rowsTable(_ id: String, lab: TeachingLab, learner: CheckReport, correct: CheckReport?) -> String {
        var h = "<table class=\"rows\"><thead><tr><th></th>"
        for p in lab.profiles {
            let exp = learner.engines.compactMap { learner.verdict(id, p, $0) }.first?.expected
            h +=
                "<th>\(xml(p.rawValue))<br><span class=\"exp\">must \(exp == .accept ? "accept" : exp == .refuse ? "refuse" : "?")</span></th>"
        }
        h += "</tr></thead><tbody>\n"
        func row(_ who: String, _ r: CheckReport) -> String {
            var t = "<tr><td class=\"who\">\(xml(who))</td>"
            for p in lab.profiles {
                t += "<td>"
                for e in r.engines {
                    guard let v = r.verdict(id, p, e) else {
                        t += "<span class=\"o skipped\">\(xml(e)): –</span>"
                        continue
                    }
                    let what = v.observed.map { $0 == .accepted ? "accepted" : "refused" } ?? v.status.rawValue
                    let mark = Self.mark(v.status)
                    t +=
                        "<span class=\"o \(xml(v.status.rawValue))\" title=\"\(xml(e)): \(xml(v.reason))\">\(xml(e)) \(what) \(mark)</span> "
                }
                t += "</td>"
            }
            return t + "</tr>\n"
        }
        h += row("your client", learner)
        if let correct { h += row("correct", correct) }
        return h + "</tbody></table>\n"
    }

    static func pinList(_ s: ScenarioSheet, profiles: [PinProfile]) -> String {
        let path = Set(validatedPath(s))
        var h = "<ul class=\"pins\">"
        for p in profiles {
            let pins = s.pins[p.rawValue] ?? []
            if pins.isEmpty {
                h += "<li><code>\(xml(p.rawValue))</code>: no pins — validation alone decides</li>"
                continue
            }
            let hits = s.chain.filter { $0.matchedBy.contains(p) }
            let valid = hits.filter { path.contains($0.name) }
            let shown = pins.map { String($0.prefix(12)) + "…" }.joined(separator: ", ")
            h += "<li><code>\(xml(p.rawValue))</code> pins <code>\(xml(shown))</code>: "
            if !valid.isEmpty {
                h += "<span class=\"badge\">matches \(xml(valid.map(\.name).joined(separator: ", ")))</span>"
            } else if !hits.isEmpty {
                h +=
                    "<span class=\"badge miss\">only matches \(xml(hits.map(\.name).joined(separator: ", "))), which is not in the validated chain</span>"
            } else {
                h += "<span class=\"badge miss\">matches nothing in this chain</span>"
            }
            h += "</li>"
        }
        return h + "</ul>\n"
    }
}
