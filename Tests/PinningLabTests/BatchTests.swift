import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The batch protocol with harnesses written here: real servers, claims made without or with real connections.
@Suite("batch runs")
struct BatchTests {
    /// A harness command in Python: the answers it prints are given as a Python expression over `cells`.
    static func python(_ answers: String, then: String = "") -> BatchHarness {
        .command(
            name: "script",
            arguments: [
                "python3", "-c",
                """
                import json, os, sys, time
                cells = json.load(open(os.environ["PINLAB_BATCH"]))["cells"]
                stdin = json.load(sys.stdin)
                assert stdin["cells"] == cells, "standard input and $PINLAB_BATCH differ"
                for line in \(answers):
                    print(line if isinstance(line, str) else json.dumps(line), flush=True)
                \(then)
                """,
            ])
    }

    @Test("the document holds every selected cell, each on a port of its own, with pins, files and no expectation")
    func documentHasEveryCell() async throws {
        let runner = try await TestLab.runner()
        let scenarios = ["baseline", "rekey", "mtls-required-valid"]
        let seen = DocumentBox()
        let run = try await runner.runBatch(
            .inProcess(name: "capture") { doc in
                seen.value = doc
                // The files exist while the harness runs (the run's work folder is removed afterwards).
                seen.filesExisted = doc.cells.allSatisfy { c in
                    ([c.trustFile]
                        + [c.clientIdentity?.certificateFile, c.clientIdentity?.keyFile, c.clientIdentity?.pkcs12File]
                        .compactMap { $0 })
                        .allSatisfy { FileManager.default.fileExists(atPath: $0) }
                }
                return []
            }, options: CheckOptions(scenarios: scenarios))
        #expect(seen.filesExisted, "trust and client identity files exist while the harness runs")
        let doc = try #require(seen.value)
        #expect(doc.cells.count == scenarios.count * PinProfile.all.count * 2)
        #expect(Set(doc.cells.map(\.id)).count == doc.cells.count)
        #expect(Set(doc.cells.map(\.port)).count == doc.cells.count, "every cell has a server of its own")
        let json = String(decoding: try doc.jsonData(), as: UTF8.self)
        #expect(!json.contains("expect"), "the client must not see expectations")
        #expect(!json.lowercased().contains("\"accept\""))
        let pki = try await TestLab.pki()
        for cell in doc.cells {
            let s = try runner.catalogue.scenario(cell.scenario)
            let pins = try s.pinSet(for: cell.profile, in: pki)
            #expect(cell.pins.base64 == pins.hashes.map { Data($0).base64EncodedString() }, "\(cell.id)")
            #expect(cell.pins.okhttp == cell.pins.base64.map { "sha256/" + $0 })
            #expect(cell.pins.curl == cell.pins.base64.map { "sha256//" + $0 }.joined(separator: ";"))
            #expect(cell.pins.hex.count == cell.pins.base64.count)
            #expect(cell.pins.kind == (cell.profile == .leafCert ? "certificate-sha256" : "spki-sha256"))
            #expect(cell.url == "https://localhost:\(cell.port)/")
            if cell.scenario == "mtls-required-valid" {
                let id = try #require(cell.clientIdentity, "\(cell.id) needs a client identity")
                #expect(id.pkcs12File != nil && id.pkcs12Password != nil)
            } else {
                #expect(cell.clientIdentity == nil)
            }
        }
        // Nobody answered: every cell is an error saying so, and nothing else is wrong.
        #expect(run.report.verdicts.allSatisfy { $0.status == .error && $0.reason.contains("never reported") })
        #expect(run.problems.isEmpty)
    }

    @Test("claims are judged by the servers: a claim without a connection is not an acceptance")
    func serversDecide() async throws {
        let run = try await TestLab.runner().runBatch(
            .inProcess(name: "liar") { doc in
                doc.cells.map { BatchResult(id: $0.id, claim: .accepted, detail: "trust me") }
            }, options: CheckOptions(profiles: [.leafSPKI], scenarios: ["baseline", "expired-leaf"]))
        for v in run.report.verdicts where v.status != .skipped {
            #expect(v.observed == .refused, "\(v.scenario): the server saw no request")
            #expect(v.claim == .accepted)
            #expect(
                v.status == (v.scenario == "baseline" ? .fail : .disagree), "\(v.scenario): \(v.status) \(v.reason)")
        }
        #expect(run.report.verdicts.filter { $0.status == .skipped }.count == 2 * 2 * 5, "other profiles are skipped")
    }

    @Test("unanswered, twice-answered, malformed and unknown answers are errors with the reason")
    func protocolErrors() async throws {
        // expired-leaf: every cell must be refused, so a claim "refused" without connecting passes.
        let harness = Self.python(
            """
            ["not json at all", {"id": "no/such/cell", "claim": "refused"}, {"id": cells[1]["id"], "claim": "maybe"}] \
            + [{"id": c["id"], "claim": "refused", "detail": "expired"} for c in cells[2:]] \
            + [{"id": cells[3]["id"], "claim": "refused"}]
            """)
        let run = try await TestLab.runner().runBatch(
            harness, options: CheckOptions(engines: [Engines.openssl], scenarios: ["expired-leaf"]))
        let v = run.report.verdicts
        #expect(v.count == 6)
        #expect(v[0].status == .error && v[0].reason.contains("never reported"), "\(v[0].reason)")
        #expect(
            v[1].status == .error && v[1].reason.contains("line 3") && v[1].reason.contains("\"claim\""),
            "\(v[1].reason)")
        #expect(v[2].status == .pass, "\(v[2].reason)")
        #expect(
            v[3].status == .error && v[3].reason.contains("reported twice") && v[3].reason.contains("line 8"),
            "\(v[3].reason)")
        #expect(v[4].status == .pass && v[5].status == .pass)
        #expect(run.problems.contains { $0.contains("line 1") && $0.contains("not a JSON object") }, "\(run.problems)")
        #expect(run.problems.contains { $0.contains("line 2") && $0.contains("no/such/cell") }, "\(run.problems)")
        #expect(run.deviates)
    }

    @Test("a stalled harness is stopped after twice the cell timeout; a slow one after the batch timeout")
    func timeouts() async throws {
        let runner = try await TestLab.runner()
        let options = CheckOptions(
            engines: [Engines.gnutls], profiles: [.none, .leafSPKI], scenarios: ["expired-leaf"])
        let t0 = ContinuousClock.now
        let stalled = try await runner.runBatch(
            Self.python("[{\"id\": cells[0][\"id\"], \"claim\": \"refused\"}]", then: "time.sleep(900)"),
            options: options,
            batch: BatchOptions(cellTimeout: .milliseconds(500), batchTimeout: .seconds(900)))
        // Bounds, not timings: stopped long before the 900 s batch timeout (the reason below says by which rule). A
        // loaded machine (load 18) took 67 s to start, stall and stop, another 121 s: the bound is far from both.
        #expect(ContinuousClock.now - t0 < .seconds(600), "stopped before the batch timeout")
        let cells = stalled.report.verdicts.filter { $0.status != .skipped }
        #expect(cells.map(\.status) == [.pass, .error])
        #expect(
            cells[1].reason.contains("stopped") && cells[1].reason.contains("twice the cell timeout"),
            "\(cells[1].reason)")
        let t1 = ContinuousClock.now
        let slow = try await runner.runBatch(
            Self.python("[]", then: "time.sleep(900)"), options: options,
            batch: BatchOptions(batchTimeout: .seconds(1)))
        #expect(
            slow.report.verdicts.filter { $0.status != .skipped }.allSatisfy { $0.reason.contains("batch timeout") })
        #expect(slow.problems.contains { $0.contains("batch timeout") })
        let inProcess = try await runner.runBatch(
            .inProcess(name: "sleeper") { _ in
                try? await Task.sleep(for: .seconds(900))
                return []
            }, options: options, batch: BatchOptions(batchTimeout: .seconds(1)))
        #expect(inProcess.problems.contains { $0.contains("batch timeout") })
        // Either harness left alone would take 900 s; the 1 s batch timeout stops both well before.
        #expect(ContinuousClock.now - t1 < .seconds(600))
    }

    @Test("shards are disjoint, cover every cell, and merge back into the whole run")
    func shardsPartitionAndMerge() async throws {
        let runner = try await TestLab.runner()
        let scenarios = ["baseline", "chain-stuffing", "wrong-host"]
        let whole = try await runner.run(
            .inProcess(BuiltInClients.named("correct")!), options: CheckOptions(scenarios: scenarios))
        let all = Set(
            whole.verdicts.map { BatchCell.id(scenario: $0.scenario, profile: $0.profile, engine: $0.engine) })
        for n in [1, 2, 3, 7] {
            var union: [String] = []
            var parts: [(file: String, report: CheckReport)] = []
            for k in 1...n {
                let shard = try CellShard(index: k, count: n)
                let part = try await runner.run(
                    .inProcess(BuiltInClients.named("correct")!),
                    options: CheckOptions(scenarios: scenarios, shard: shard))
                let ids = part.verdicts.map {
                    BatchCell.id(scenario: $0.scenario, profile: $0.profile, engine: $0.engine)
                }
                #expect(!ids.isEmpty, "shard \(k)/\(n) of \(all.count) cells holds none")
                union += ids
                // Through JSON, as `pinlab report merge` reads them.
                parts.append(
                    (
                        "shard-\(k).json",
                        try CheckReport.decode(json: Data(try part.jsonString().utf8), file: "shard-\(k).json")
                    ))
            }
            #expect(union.count == all.count && Set(union) == all, "\(n) shards: no overlap, nothing missing")
            #expect(
                parts.map { $0.report.shard?.description } == (1...n).map { "\($0)/\(n)" },
                "each report records its shard")
            if n > 1 {
                // A shard that never reported (its job failed before uploading) fails the merge: its cells were
                // never judged. `partial` accepts it (one shard's report rendered alone).
                #expect { try CheckReport.merge(Array(parts.dropLast())) } throws: {
                    "\($0)".contains("shard \(n)/\(n) is missing")
                }
                #expect(try CheckReport.merge(Array(parts.dropLast()), partial: true).verdicts.count < all.count)
                var whole = parts[0].report
                whole.shard = nil
                #expect { try CheckReport.merge([parts[0], ("whole.json", whole)]) } throws: {
                    "\($0)".contains("a whole run")
                }
            }
            let merged = try CheckReport.merge(parts)
            #expect(merged.verdicts.map(\.scenario) == whole.verdicts.map(\.scenario), "catalogue order")
            #expect(merged.verdicts.map(\.status) == whole.verdicts.map(\.status))
            #expect(merged.summary.total == whole.summary.total)
        }
        #expect(throws: (any Error).self) { try CellShard(parsing: "3/2") }
        #expect(throws: (any Error).self) { try CellShard(parsing: "1of2") }

        // Merge errors name the file and the cell.
        let a = try CheckReport.decode(json: Data(try whole.jsonString().utf8), file: "a.json")
        #expect { try CheckReport.merge([("a.json", a), ("b.json", a)]) } throws: {
            "\($0)".contains("b.json") && "\($0)".contains("overlap") && "\($0)".contains("baseline/none/openssl")
        }
        var other = a
        other.verdicts = []
        other.scenarios[0].expected["none"] = .refuse
        #expect { try CheckReport.merge([("a.json", a), ("c.json", other)]) } throws: {
            "\($0)".contains("catalogue differs")
        }
        var curl = a
        curl.client = "curl"
        curl.verdicts = []
        #expect { try CheckReport.merge([("a.json", a), ("d.json", curl)]) } throws: { "\($0)".contains("'curl'") }
        #expect { try CheckReport.decode(json: Data("{\"tool\": \"pinlab\"}".utf8), file: "e.json") } throws: {
            "\($0)".contains("e.json") && "\($0)".contains("missing")
        }
        // Valid JSON with a bad value names the field (it was "not JSON"); a verdict naming a status, scenario or
        // engine the report does not hold is refused (it was merged, counted and never shown); a cut file says so.
        let text = try whole.jsonString()
        func edited(_ change: (inout [String: Any]) -> Void) throws -> Data {
            var o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            change(&o)
            return try JSONSerialization.data(withJSONObject: o)
        }
        func verdict(_ o: inout [String: Any], _ key: String, _ value: String) {
            var v = o["verdicts"] as! [[String: Any]]
            v[1][key] = value
            o["verdicts"] = v
        }
        let cases: [(Data, String)] = [
            (
                try edited { $0["startedAt"] = "yesterday" },
                "startedAt is malformed: 'yesterday' is not an ISO 8601 date"
            ),
            (
                try edited { o in
                    var s = o["summary"] as! [String: Any]
                    s["total"] = 1e30
                    o["summary"] = s
                }, "summary.total holds"
            ),
            (try edited { verdict(&$0, "verdict", "maybe") }, "verdicts[1].verdict is 'maybe', not a verdict"),
            (
                try edited { verdict(&$0, "scenario", "nope") },
                "verdicts[1].scenario is 'nope', which the report's scenarios do not list"
            ),
            (try edited { verdict(&$0, "engine", "quantum") }, "verdicts[1].engine is 'quantum'"),
            (try edited { $0["engines"] = ["openssl", "quantum"] }, "engines names 'quantum', not an engine"),
            (Data(text.utf8.prefix(500)), "it is not JSON"),
        ]
        for (data, message) in cases {
            #expect { try CheckReport.decode(json: data, file: "f.json") } throws: {
                "\($0)".contains("f.json: ") && "\($0)".contains(message)
            }
        }
    }

    @Test(
        "real documents and answers validate against the published schemas (python jsonschema)",
        .requiresPython(module: "jsonschema"))
    func schemas() async throws {
        let seen = DocumentBox()
        _ = try await TestLab.runner().runBatch(
            .inProcess(name: "capture") { doc in
                seen.value = doc
                return []
            }, options: CheckOptions(scenarios: ["baseline", "mtls-required-valid", "resumption-genuine"]),
            batch: BatchOptions(steps: true))
        let doc = try #require(seen.value)
        let stepCell = try #require(doc.cells.first { $0.steps != nil })
        let answers = [
            BatchResult(id: doc.cells[0].id, claim: .refused, detail: "pin", category: .pinMismatch, milliseconds: 3),
            BatchResult(id: doc.cells[1].id, claim: .accepted),
            BatchResult(id: stepCell.id, step: 2, claim: .accepted),
        ]
        let dir = TestScratch.root.appendingPathComponent("pinlab-batch-schema-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try BatchSchemas.input.write(to: dir.appendingPathComponent("in.json"), atomically: true, encoding: .utf8)
        try BatchSchemas.output.write(to: dir.appendingPathComponent("out.json"), atomically: true, encoding: .utf8)
        try doc.jsonData().write(to: dir.appendingPathComponent("doc.json"))
        try answers.map { try $0.jsonLine() }.joined(separator: "\n").write(
            to: dir.appendingPathComponent("answers.jsonl"), atomically: true, encoding: .utf8)
        let script = """
            import json, sys, jsonschema
            d = sys.argv[1]
            V = jsonschema.Draft202012Validator
            sin, sout = json.load(open(d + "/in.json")), json.load(open(d + "/out.json"))
            V.check_schema(sin); V.check_schema(sout)
            doc = json.load(open(d + "/doc.json"))
            V(sin).validate(doc)
            for line in open(d + "/answers.jsonl"):
                V(sout).validate(json.loads(line))
            bad = [dict(doc, cells=[dict(doc["cells"][0], expected="accept")]), dict(doc, formatVersion=2)]
            for b in bad:
                if V(sin).is_valid(b): print("accepted a bad document"); sys.exit(3)
            steps = [c for c in doc["cells"] if "steps" in c]
            if not steps or len(steps[0]["steps"]) != 2: print("no cell with steps"); sys.exit(3)
            if V(sin).is_valid(dict(doc, cells=[dict(steps[0], steps=[dict(steps[0]["steps"][0], step=0)] * 2)])):
                print("accepted step 0"); sys.exit(3)
            for b in [{"id": "x", "claim": "maybe"}, {"claim": "accepted"}, {"id": "x", "claim": "accepted", "extra": 1},
                      {"id": "x", "claim": "accepted", "step": 0}, {"id": "x", "claim": "accepted", "step": True}]:
                if V(sout).is_valid(b): print("accepted a bad answer", b); sys.exit(3)
            print("ok", len(doc["cells"]))
            """
        let r = try await TestLab.run(["python3", "-c", script, dir.path])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("ok \(doc.cells.count)"))
    }
}

/// Where an in-process harness leaves the document it was given.
final class DocumentBox: @unchecked Sendable {
    // @unchecked: `value` is touched under `lock`.
    private let lock = NSLock()
    private var _value: BatchDocument?
    private var _filesExisted = false
    var filesExisted: Bool {
        get { lock.withLock { _filesExisted } }
        set { lock.withLock { _filesExisted = newValue } }
    }
    var value: BatchDocument? {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
}
