import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// A report with every status, awkward characters in reasons, and real scenario sheets.
func syntheticReport() async throws -> CheckReport {
    let pki = try await TestLab.pki()
    let catalogue = try Catalogue.bundled()
    let scenarios = try ["baseline", "chain-stuffing", "mtls-required-missing"].map { try catalogue.scenario($0) }
    var verdicts: [Verdict] = []
    let evidence = ServerEvidence(
        connected: true, handshakeCompleted: true, applicationDataReceived: true,
        requestLine: "GET / HTTP/1.1", negotiatedVersion: "TLSv1.3", sni: "localhost",
        handshakeMilliseconds: 1.5)
    // GnuTLS cells carry alerts, so that the JSON schema and the round trip see them written as reports write them.
    let refused = ServerEvidence(
        connected: true, alertReceived: TLSAlert(code: TLSAlert.badCertificate),
        alertSent: TLSAlert(code: TLSAlert.certificateRequired))
    for engine in ["openssl", "gnutls"] {
        for s in scenarios {
            for p in PinProfile.all {
                let status = Verdict.Status.all[(verdicts.count) % Verdict.Status.all.count]
                switch status {
                case .skipped, .unsupported, .error:
                    verdicts.append(
                        .notRun(
                            scenario: s.id, profile: p, engine: engine, client: "synthetic",
                            expected: s.expected(p), status: status, reason: "not run: <\(status)> & \"quoted\""))
                default:
                    var v = Verdict.judge(
                        scenario: s.id, profile: p, engine: engine, client: "synthetic",
                        expected: s.expected(p), evidence: engine == "gnutls" ? refused : evidence,
                        outcome: .refused(.pinMismatch, "pin <mismatch> & 'quotes' \u{1}"),
                        clientMilliseconds: 12.25)
                    v.status = status
                    verdicts.append(v)
                }
            }
        }
    }
    return CheckReport(
        client: "synthetic <client>", engines: ["openssl", "gnutls"], durationSeconds: 0.5,
        verdicts: verdicts, scenarios: scenarios.map { ScenarioSheet(scenario: $0, pki: pki) })
}

func writeTemporary(_ text: String, _ ext: String) throws -> URL {
    let url = TestScratch.root.appendingPathComponent("pinlab-report-\(UUID().uuidString).\(ext)")
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}

@Suite("Report formats")
struct ReportFormatTests {
    @Test func jsonCarriesEveryCellWithTheDocumentedFields() async throws {
        let report = try await syntheticReport()
        let json = try report.render(.json)
        // Round trip: every cell is there with the documented field names.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let cells = try #require(object["verdicts"] as? [[String: Any]])
        #expect(cells.count == report.verdicts.count)
        for key in ["scenario", "profile", "engine", "expected", "verdict", "reason", "timings"] {
            #expect(cells.allSatisfy { $0[key] != nil }, "every cell has \(key)")
        }
        #expect(cells.contains { $0["observed"] != nil && $0["alert"] == nil })
        // Alerts are text, `name (code)`, in the verdict and in its evidence, and read back as the same alerts.
        #expect(cells.contains { $0["alert"] as? String == "bad_certificate (42)" })
        let evidence = cells.compactMap { $0["evidence"] as? [String: Any] }
        #expect(evidence.contains { $0["alertSent"] as? String == "certificate_required (116)" })
        let back = try CheckReport.decode(json: Data(json.utf8), file: "synthetic.json")
        #expect(back.verdicts.map(\.alert) == report.verdicts.map(\.alert))
        #expect(back.verdicts.map(\.evidence) == report.verdicts.map(\.evidence))
        #expect(back.verdicts.contains { $0.alert?.code == TLSAlert.badCertificate })
        // A malformed alert is a clear error naming the field, not "not JSON".
        let bad = json.replacingOccurrences(of: "\"bad_certificate (42)\"", with: "\"bogus\"")
        let e = #expect(throws: ReportMergeError.self) {
            try CheckReport.decode(json: Data(bad.utf8), file: "bad.json")
        }
        #expect(
            e?.problem.contains("malformed") == true && e?.problem.contains("bogus") == true, "\(String(describing: e))"
        )
    }

    /// Judged by an independent validator (python's jsonschema), which must also reject a bad document.
    @Test(.requiresPython(module: "jsonschema"))
    func jsonValidatesAgainstItsSchema() async throws {
        try #require(
            Tool.hasPythonModule("jsonschema"),
            "python3 with the jsonschema module is not installed (pip install jsonschema)")
        let report = try await syntheticReport()
        let json = try report.render(.json)
        let schema = try writeTemporary(ReportSchemas.json, "json")
        let doc = try writeTemporary(json, "json")
        defer {
            try? FileManager.default.removeItem(at: schema)
            try? FileManager.default.removeItem(at: doc)
        }
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
            bad = dict(doc); bad["verdicts"] = [dict(doc["verdicts"][0], verdict="maybe")]
            try:
                jsonschema.Draft202012Validator(schema).validate(bad); print("schema accepted a bad verdict"); sys.exit(3)
            except jsonschema.ValidationError:
                print("ok")
            """
        let r = try await TestLab.run(["python3", "-c", script, schema.path, doc.path])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("ok"))
    }

    @Test func junitHasOneTestcasePerCell() async throws {
        let report = try await syntheticReport()
        let xml = try report.render(.junit)
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == report.verdicts.count, "one testcase per cell")
        #expect(xml.contains("failures=\"\(report.summary.fail + report.summary.disagree)\""))
        #expect(!xml.contains("\u{1}"), "control characters are replaced")
    }

    /// Judged by an independent validator (xmllint), which must also reject a bad document.
    @Test(.requires("xmllint"))
    func junitValidatesAgainstTheXSD() async throws {
        let xmllint = try #require(Tool.path("xmllint"), "xmllint is not on the PATH (apt-get install libxml2-utils)")
        let report = try await syntheticReport()
        let xml = try report.render(.junit)
        let xsd = try writeTemporary(ReportSchemas.junitXSD, "xsd")
        let doc = try writeTemporary(xml, "xml")
        let broken = try writeTemporary(xml.replacingOccurrences(of: "tests=\"", with: "tests=\"x"), "xml")
        defer { for u in [xsd, doc, broken] { try? FileManager.default.removeItem(at: u) } }
        let r = try await TestLab.run([xmllint, "--noout", "--schema", xsd.path, doc.path])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("validates"))
        let bad = try await TestLab.run([xmllint, "--noout", "--schema", xsd.path, broken.path])
        #expect(bad.status != 0, "the XSD rejects a non-numeric count")
    }

    @Test func textMatrixHasOneRowPerScenarioAndColourOnlyWhenAsked() async throws {
        let report = try await syntheticReport()
        let plain = try report.render(.text, color: false)
        #expect(!plain.contains("\u{1B}["))
        #expect(try report.render(.text, color: true).contains("\u{1B}[32m✓"))
        for id in ["baseline", "chain-stuffing", "mtls-required-missing"] {
            #expect(plain.split(separator: "\n").contains { $0.hasPrefix(id + " ") })
        }
        #expect(plain.contains("Deviations ("))
        #expect(plain.contains(report.summaryLine))
    }

    @Test func markdownAndHTMLCarryTheMatrixAndTheChains() async throws {
        let report = try await syntheticReport()
        let md = try report.render(.markdown)
        #expect(md.contains("| `chain-stuffing` |"))
        let html = try report.render(.html)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(!html.contains("<script src") && !html.contains("<link "), "self-contained")
        #expect(html.contains("id=\"s-chain-stuffing\""))
        #expect(html.contains("pin: leaf-spki"), "the chain diagram marks which pin matches")
        #expect(html.contains("synthetic &lt;client&gt;"), "text is escaped")
        #expect(!html.contains("synthetic <client>"))
    }

    @Test(
        "the HTML page draws a scenario of several connections as a timeline: a row per step, the resumed ones marked")
    func htmlShowsStepsAsATimeline() async throws {
        let report = try await TestLab.runner().run(
            .inProcess(BuiltInClients.named("skips-pins-on-resumption")!),
            options: CheckOptions(
                engines: [Engines.openssl], scenarios: ["baseline", "resumption-after-unpinned-handshake"]))
        let html = try report.render(.html)
        let section = try #require(html.components(separatedBy: "id=\"s-resumption-after-unpinned-handshake\"").last)
        let timeline = try #require(section.components(separatedBy: "<table class=\"matrix steps\">").dropFirst().first)
        let rows = timeline.components(separatedBy: "</tbody>")[0].components(separatedBy: "<tr>").dropFirst(2)
        #expect(rows.count == 2, "one row per step")
        #expect(rows.first?.contains(">absent<") == true && rows.last?.contains(">in-force<") == true)
        // Step 2 resumes the interceptor's session: marked, and failed under the pinned profiles by this client.
        #expect(rows.last?.contains("class=\"resumed\"") == true && rows.first?.contains("class=\"resumed\"") == false)
        #expect(rows.last?.contains("class=\"m fail\" title=\"openssl: step 2 fail") == true)
        // A scenario of one connection has no timeline.
        let baseline = try #require(
            html.components(separatedBy: "id=\"s-baseline\"").last?.components(separatedBy: "</section>").first)
        #expect(!baseline.contains("matrix steps"))
    }

    @Test func chainSheetMarksWhichPinMatches() async throws {
        let pki = try await TestLab.pki()
        let s = try Catalogue.bundled().scenario("chain-stuffing")
        let sheet = ScenarioSheet(scenario: s, pki: pki)
        #expect(sheet.chain.map(\.name) == ["proxy-leaf", "leaf-v1", "lab-intermediate-a", "lab-root", "proxy-root"])
        #expect(sheet.chain[0].matchedBy.isEmpty)
        #expect(sheet.chain[1].matchedBy == [.leafCert, .leafSPKI, .leafSPKIBackup])
        #expect(sheet.chain[2].matchedBy == [.intermediateSPKI])
        #expect(sheet.chain[3].matchedBy == [.rootSPKI] && sheet.chain[3].onTheWire)
        #expect(!sheet.chain[4].onTheWire)
    }
}
