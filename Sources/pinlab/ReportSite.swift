import Foundation
import PinningLab

/// `pinlab report site`: a static site from JSON check reports, modelled on x509-limbo's results pages. An index
/// (every client's summary, a scenario × client overview and, for cells that devices answered through the control
/// API's queue, a table by device and by OS), one page per client (its matrix, deviations with their
/// reasons and the chain pictures: the HTML report) and one page per scenario (every client's row side by side), and
/// `devices.html` (device × scenario) when devices answered.
/// Plain HTML and CSS: no script, nothing loaded from elsewhere, every link relative.
enum ReportSite {
    /// A client's pages and links: its file name is its name made safe for a path, unique in the site.
    struct Client {
        var report: CheckReport
        var slug: String
        var page: String { "clients/\(slug).html" }
    }

    /// The site's files, by path relative to its folder.
    static func render(_ reports: [CheckReport], generatedAt: Date = Date()) -> [String: String] {
        var used: Set<String> = []
        let clients = reports.map { r -> Client in
            var slug = slugify(r.client)
            var n = 2
            while used.contains(slug) {
                slug = "\(slugify(r.client))-\(n)"
                n += 1
            }
            used.insert(slug)
            return Client(report: r, slug: slug)
        }
        var sheets: [String: ScenarioSheet] = [:]
        var ids: [String] = []
        for r in reports {
            for s in r.scenarios where sheets[s.id] == nil {
                sheets[s.id] = s
                ids.append(s.id)
            }
            for v in r.verdicts where sheets[v.scenario] == nil && !ids.contains(v.scenario) { ids.append(v.scenario) }
        }
        let profiles = orderedProfiles(reports)
        let devices = deviceRows(clients)
        var files: [String: String] = [
            "style.css": css,
            "index.html": index(clients, ids: ids, sheets: sheets, devices: devices, at: generatedAt),
        ]
        if !devices.isEmpty { files[devicesPage] = devicePage(devices, ids: ids, sheets: sheets) }
        for c in clients { files[c.page] = clientPage(c, ids: ids) }
        for id in ids {
            files["scenarios/\(slugify(id)).html"] = scenarioPage(
                id, sheet: sheets[id], clients: clients, profiles: profiles)
        }
        return files
    }

    static func scenarioPage(_ id: String) -> String { "scenarios/\(slugify(id)).html" }

    static func slugify(_ s: String) -> String {
        var out = ""
        for u in s.lowercased().unicodeScalars {
            if ("a"..."z").contains(u) || ("0"..."9").contains(u) || u == "." || u == "_" {
                out.unicodeScalars.append(u)
            } else if !out.hasSuffix("-") {
                out += "-"
            }
        }
        out = String(out.drop(while: { $0 == "-" || $0 == "." }))
        while out.hasSuffix("-") { out.removeLast() }
        return out.isEmpty ? "client" : String(out.prefix(80))
    }

    static func orderedProfiles(_ reports: [CheckReport]) -> [PinProfile] {
        var out: [PinProfile] = []
        for r in reports { for p in r.profiles where !out.contains(p) { out.append(p) } }
        return out
    }

    static func symbol(_ v: Verdict) -> String {
        if v.wrongReason { return "?" }
        switch v.status {
        case .pass: return "✓"
        case .fail: return "✗"
        case .disagree: return "≠"
        case .skipped: return "·"
        case .unsupported: return "∅"
        default: return v.status.isDeviation ? "!" : "•"
        }
    }

    static func cls(_ v: Verdict) -> String {
        v.wrongReason ? "m wrong" : "m \(slugify(v.status.rawValue))"
    }

    static func head(_ title: String, depth: Int) -> String {
        let up = String(repeating: "../", count: depth)
        return HTMLPage.head(title: title, stylesheet: "\(up)style.css") + """
            <nav class="site"><a href="\(up)index.html">PinningLab results</a></nav>

            """
    }

    static let legend = """
        <p class="legend">Each cell: the expected outcome (A accept, X refuse), then one mark per engine:
        <span><i class="m pass">✓</i>as expected</span> <span><i class="m fail">✗</i>deviates</span>
        <span><i class="m disagree">≠</i>client and server disagree</span>
        <span><i class="m wrong">?</i>refused as expected, for another reason</span>
        <span><i class="m skipped">·</i>skipped</span> <span><i class="m unsupported">∅</i>unsupported</span>
        <span><i class="m error">!</i>error</span>. Hover a mark for its reason.</p>

        """

    static func index(
        _ clients: [Client], ids: [String], sheets: [String: ScenarioSheet], devices: [DeviceRow] = [], at date: Date
    ) -> String {
        var h = head("PinningLab results", depth: 0)
        h += "<h1>PinningLab results</h1>\n"
        h +=
            "<p class=\"meta\">\(clients.count) client\(clients.count == 1 ? "" : "s") · \(ids.count) scenarios · generated \(xml(ISO8601DateFormatter().string(from: date)))</p>\n"
        h +=
            "<h2>Clients</h2>\n<table class=\"grid\"><thead><tr><th>client</th><th>verdict</th><th>engines</th><th>cells</th><th>as expected</th><th>deviating</th><th>refused for another reason</th><th>decided by the platform policy</th><th>stricter than required</th><th>skipped</th><th>unsupported</th></tr></thead><tbody>\n"
        for c in clients {
            let s = c.report.summary
            h += "<tr><td class=\"name\"><a href=\"\(xml(c.page))\">\(xml(c.report.client))</a></td>"
            h +=
                "<td><span class=\"\(c.report.deviates ? "bad" : "ok")\">\(c.report.deviates ? "deviates" : "conforms")</span></td>"
            h += "<td>\(xml(c.report.engines.joined(separator: ", ")))</td><td>\(s.total)</td><td>\(s.pass)</td>"
            // as expected + deviating + policy + stricter + skipped + unsupported = cells (refused for another reason
            // is a part of as expected).
            h +=
                "<td>\(s.deviations)</td><td>\(s.wrongReason)</td><td>\(s.policy)</td><td>\(s.stricter)</td><td>\(s.skipped)</td><td>\(s.unsupported)</td></tr>\n"
        }
        h += "</tbody></table>\n"
        h +=
            "<h2>Scenarios</h2>\n<p class=\"meta\">Deviating cells per scenario and client; a scenario's page shows every client's row side by side.</p>\n"
        h += "<table class=\"grid\"><thead><tr><th>scenario</th>"
        for c in clients { h += "<th><a href=\"\(xml(c.page))\">\(xml(c.report.client))</a></th>" }
        h += "</tr></thead><tbody>\n"
        for id in ids {
            h +=
                "<tr><td class=\"name\"><a href=\"\(xml(scenarioPage(id)))\" title=\"\(xml(sheets[id]?.title ?? ""))\">\(xml(id))</a></td>"
            for c in clients {
                let vs = c.report.verdicts.filter { $0.scenario == id }
                let run = vs.filter { $0.status != .skipped && $0.status != .unsupported }
                let bad = vs.filter { $0.status.isDeviation }.count
                if run.isEmpty {
                    h += "<td><i class=\"m skipped\" title=\"not run\">·</i></td>"
                } else if bad == 0 {
                    h += "<td><i class=\"m pass\" title=\"\(run.count) cells as expected\">✓</i></td>"
                } else {
                    h += "<td><i class=\"m fail\" title=\"\(bad) of \(run.count) cells deviate\">✗</i> \(bad)</td>"
                }
            }
            h += "</tr>\n"
        }
        h += "</tbody></table>\n"
        if !devices.isEmpty { h += deviceTables(devices, clients: clients) }
        h += HTMLPage.foot
        return h
    }

    /// The client's HTML report, with the site's navigation and each scenario's heading linked to its page.
    static func clientPage(_ c: Client, ids: [String]) -> String {
        var page = c.report.renderHTMLPage()
        let nav =
            "<nav class=\"site\" style=\"margin-bottom:12px\"><a href=\"../index.html\">PinningLab results</a> › \(xml(c.report.client))</nav>\n"
        if let body = page.range(of: "<body>") { page.insert(contentsOf: "\n" + nav, at: body.upperBound) }
        for id in ids {
            let anchor = "<section class=\"scenario\" id=\"s-\(xml(id))\"><h3>"
            page = page.replacingOccurrences(
                of: anchor,
                with: anchor + "<a href=\"../\(xml(scenarioPage(id)))\" title=\"every client on this scenario\">⇄</a> ")
        }
        return page
    }

    static func scenarioPage(_ id: String, sheet: ScenarioSheet?, clients: [Client], profiles: [PinProfile]) -> String {
        var h = head("\(id) — PinningLab results", depth: 1)
        h += "<h1>\(xml(id))\(sheet.map { " — " + xml($0.title) } ?? "")</h1>\n"
        if let s = sheet {
            h += "<p class=\"teach\">\(xml(s.teaching))</p>\n"
            h +=
                "<p class=\"meta\">client trusts <code>\(xml(s.trust))</code> · built for <code>\(xml(s.pinned))</code>"
            if s.clientAuth != "none" {
                h +=
                    " · server client auth <code>\(xml(s.clientAuth))</code>, client presents <code>\(xml(s.presents ?? "nothing"))</code>"
            }
            h +=
                "</p>\n<p class=\"meta\">chain: "
                + s.chain.map { c in
                    "<code>\(xml(c.name))</code>\(c.onTheWire ? "" : " (not sent)")"
                }.joined(separator: " → ") + "</p>\n"
        }
        h += legend
        var engines: [String] = []
        for c in clients { for e in c.report.engines where !engines.contains(e) { engines.append(e) } }
        h +=
            "<p class=\"meta\">The marks of a cell are the engines', in this order: \(xml(engines.joined(separator: ", "))).</p>\n"
        h += "<table class=\"grid\"><thead><tr><th>client</th>"
        for p in profiles { h += "<th>\(xml(p.rawValue))</th>" }
        h += "</tr></thead><tbody>\n"
        var deviations: [(Client, Verdict)] = []
        for c in clients {
            h += "<tr><td class=\"name\"><a href=\"../\(xml(c.page))#s-\(xml(id))\">\(xml(c.report.client))</a></td>"
            for p in profiles {
                let vs = c.report.engines.map { c.report.verdict(id, p, $0) }
                let letter =
                    vs.compactMap { $0 }.first.map { $0.expected == .accept ? "A" : "X" }
                    ?? sheet?.expected[p.rawValue].map { $0 == .accept ? "A" : "X" } ?? ""
                h += "<td><span class=\"exp\">\(letter)</span>"
                for (engine, v) in zip(c.report.engines, vs) {
                    if let v {
                        h +=
                            "<i class=\"\(cls(v))\" title=\"\(xml("\(engine): \(v.status) — \(v.reason)"))\">\(symbol(v))</i>"
                        if v.status.isDeviation || v.wrongReason { deviations.append((c, v)) }
                    } else {
                        h += "<i class=\"m skipped\" title=\"\(xml(engine)): not run\"> </i>"
                    }
                }
                h += "</td>"
            }
            h += "</tr>\n"
        }
        h += "</tbody></table>\n"
        if !deviations.isEmpty {
            h += "<h2>Deviations and other reasons (\(deviations.count))</h2>\n<ul class=\"dev\">\n"
            for (c, v) in deviations {
                h +=
                    "<li><i class=\"\(cls(v))\">\(symbol(v))</i> <a href=\"../\(xml(c.page))#s-\(xml(id))\">\(xml(c.report.client))</a> × <code>\(xml(v.profile.rawValue))</code> × \(xml(v.engine)): \(xml(v.reason))</li>\n"
            }
            h += "</ul>\n"
        } else {
            h += "<p class=\"ok\">Every client that ran this scenario did what a correct client does.</p>\n"
        }
        h += HTMLPage.foot
        return h
    }

    // MARK: - Devices

    /// The cells one device answered for one client through the control API's queue (`POST /leases`): a farm's phone
    /// or worker, as it named itself and its OS when it leased them.
    struct DeviceRow {
        var device: Verdict.Device
        var client: Client
        var verdicts: [Verdict]
        var summary: VerdictSummary { VerdictSummary(verdicts) }
    }

    static let devicesPage = "devices.html"

    /// Every device of the reports' verdicts, by OS, then device name, then client.
    static func deviceRows(_ clients: [Client]) -> [DeviceRow] {
        var rows: [DeviceRow] = []
        for c in clients {
            var byDevice: [Verdict.Device: [Verdict]] = [:]
            for v in c.report.verdicts { if let d = v.device { byDevice[d, default: []].append(v) } }
            for (d, vs) in byDevice { rows.append(DeviceRow(device: d, client: c, verdicts: vs)) }
        }
        return rows.sorted {
            ($0.device.os, $0.device.name, $0.client.slug) < ($1.device.os, $1.device.name, $1.client.slug)
        }
    }

    static let countHeads =
        "<th>cells</th><th>as expected</th><th>deviating</th><th>refused for another reason</th><th>decided by the platform policy</th><th>stricter than required</th>"

    /// The counts of a device row or an OS row: cells, as expected, deviating, refused for another reason (a part of
    /// as expected), decided by the platform policy, stricter than required. A device answers only cells it ran, so
    /// as expected + deviating + policy + stricter = cells.
    static func countCells(_ s: VerdictSummary) -> String {
        "<td>\(s.total)</td><td>\(s.pass)</td><td>\(s.deviations)</td><td>\(s.wrongReason)</td><td>\(s.policy)</td><td>\(s.stricter)</td>"
    }

    /// The index's device section: one row per device and client, then one row per OS.
    static func deviceTables(_ rows: [DeviceRow], clients: [Client]) -> String {
        let answered = rows.reduce(0) { $0 + $1.verdicts.count }
        let all = clients.reduce(0) { $0 + $1.report.verdicts.count }
        var h = "<h2 id=\"devices\">Devices</h2>\n"
        h +=
            "<p class=\"meta\">The cells each device answered through the control API's queue, by the device and OS it named; \(answered) of the \(all) cells were answered by a device (the others no device ran: skipped, unsupported, or not answered yet). <a href=\"\(devicesPage)\">Every device × scenario</a>.</p>\n"
        h +=
            "<table class=\"grid\" id=\"by-device\"><thead><tr><th>device</th><th>OS</th><th>client</th>\(countHeads)</tr></thead><tbody>\n"
        for r in rows {
            h +=
                "<tr class=\"device\"><td class=\"name\">\(xml(r.device.name))</td><td>\(xml(r.device.os))</td><td><a href=\"\(xml(r.client.page))\">\(xml(r.client.report.client))</a></td>\(countCells(r.summary))</tr>\n"
        }
        h += "</tbody></table>\n"
        h +=
            "<table class=\"grid\" id=\"by-os\"><thead><tr><th>OS</th><th>devices</th>\(countHeads)</tr></thead><tbody>\n"
        var systems: [String] = []
        for r in rows where !systems.contains(r.device.os) { systems.append(r.device.os) }
        for os in systems {
            let of = rows.filter { $0.device.os == os }
            h +=
                "<tr class=\"os\"><td class=\"name\">\(xml(os))</td><td>\(Set(of.map(\.device.name)).count)</td>\(countCells(VerdictSummary(of.flatMap(\.verdicts))))</tr>\n"
        }
        h += "</tbody></table>\n"
        return h
    }

    /// `devices.html`: device × scenario, each cell the device's verdicts in that scenario (as expected, or how many of
    /// them deviate), the device's counts at the end of its row.
    static func devicePage(_ rows: [DeviceRow], ids: [String], sheets: [String: ScenarioSheet]) -> String {
        var h = head("Devices — PinningLab results", depth: 0)
        h += "<h1>Devices</h1>\n"
        h +=
            "<p class=\"meta\">\(rows.count) device\(rows.count == 1 ? "" : "s") × scenario: the cells each device answered through the control API's queue. <i class=\"m pass\">✓</i> n: n cells as expected; <i class=\"m fail\">✗</i> d/n: d of n cells deviate; empty: the device answered no cell of that scenario.</p>\n"
        let shown = ids.filter { id in rows.contains { r in r.verdicts.contains { $0.scenario == id } } }
        h += "<table class=\"grid\" id=\"device-scenarios\"><thead><tr><th>device</th><th>OS</th><th>client</th>"
        for id in shown {
            h +=
                "<th><a href=\"\(xml(scenarioPage(id)))\" title=\"\(xml(sheets[id]?.title ?? ""))\">\(xml(id))</a></th>"
        }
        h += "<th>cells</th><th>as expected</th><th>deviating</th></tr></thead><tbody>\n"
        for r in rows {
            h +=
                "<tr class=\"device\"><td class=\"name\">\(xml(r.device.name))</td><td>\(xml(r.device.os))</td><td><a href=\"\(xml(r.client.page))\">\(xml(r.client.report.client))</a></td>"
            for id in shown {
                let vs = r.verdicts.filter { $0.scenario == id }
                let bad = vs.filter { $0.status.isDeviation }.count
                let title = xml(
                    vs.map { "\($0.profile.rawValue) × \($0.engine): \($0.status)" }.joined(separator: "; "))
                if vs.isEmpty {
                    h += "<td></td>"
                } else if bad == 0 {
                    h += "<td title=\"\(title)\"><i class=\"m pass\">✓</i> \(vs.count)</td>"
                } else {
                    h += "<td title=\"\(title)\"><i class=\"m fail\">✗</i> \(bad)/\(vs.count)</td>"
                }
            }
            let s = r.summary
            h += "<td>\(s.total)</td><td>\(s.pass)</td><td>\(s.deviations)</td></tr>\n"
        }
        h += "</tbody></table>\n" + HTMLPage.foot
        return h
    }

    static let css =
        HTMLPage.baseStyle + """
            h2{font-size:17px;margin:28px 0 8px}
            nav.site{margin-bottom:12px;font-size:13px} a{color:#1f4fbf}
            .meta{color:#667085} .teach{max-width:980px}
            table.grid{border-collapse:collapse;margin:8px 0}
            .grid th,.grid td{border:1px solid #d7dbe3;padding:3px 8px;text-align:center;white-space:nowrap}
            .grid th{background:#eef1f6;font-weight:600} .grid td.name{text-align:left}
            .ok{background:#e3f6e8;color:#14532d;padding:1px 8px;border-radius:6px}
            .bad{background:#fde8e8;color:#7f1d1d;padding:1px 8px;border-radius:6px}
            .exp{color:#667085;font-size:11px;margin-right:3px}
            .m{display:inline-block;width:16px;height:16px;line-height:16px;border-radius:3px;margin:0 1px;font-size:12px;color:#fff;font-style:normal;text-align:center}
            .pass{background:#22a05a} .fail{background:#d92d20} .disagree{background:#e08a00} .error{background:#8a4ad8}
            .m.skipped,.m.unsupported{background:#c3c8d2} .wrong{background:#22a05a;outline:2px solid #e08a00;outline-offset:-2px}
            .m:not(.pass):not(.fail):not(.disagree):not(.error):not(.skipped):not(.unsupported):not(.wrong){background:#5b6b8c}
            .legend span{margin-right:10px} ul.dev li{margin:3px 0}

            """
}

extension CheckReport {
    /// The report as a self-contained HTML page.
    func renderHTMLPage() -> String {
        (try? render(.html)) ?? "<!DOCTYPE html><html><body><p>\(xml(client))</p></body></html>"
    }
}
