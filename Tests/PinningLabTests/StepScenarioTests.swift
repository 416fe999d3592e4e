import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// Scenarios made of several connections (`steps:`): the file format, the per-step verdicts, clients that cannot
/// keep state across connections, and the report.
@Suite("Scenarios of several connections")
struct StepScenarioTests {
    static let header = """
        id: steps-test
        title: Steps
        teaching: A scenario made of two connections.
        server:
          chain: [leaf-v1, lab-intermediate-a]
          resumption: tickets
        client:
          trust: lab-root+proxy-root
        """
    static let allAccept =
        "{none: accept, leaf-cert: accept, leaf-spki: accept, leaf-spki+backup: accept, intermediate-spki: accept, root-spki: accept}"

    func parse(_ yaml: String) throws -> Scenario {
        try ScenarioLoader.parse(yaml: yaml, file: "steps-test.yaml")
    }

    @Test func bundledScenariosHaveTheirSteps() throws {
        let catalogue = try Catalogue.bundled()
        let cross = try catalogue.scenario("resumption-cross-host")
        #expect(cross.steps.map(\.host) == ["cdn.pinning.test", "api.pinning.test"])
        #expect(cross.steps.map(\.party) == ["interceptor", "interceptor"])
        #expect(cross.parties["interceptor"]?.chain == ["proxy-leaf-shared"])
        #expect(cross.parties["interceptor"]?.resumption == .tickets)
        #expect(cross.expectedRow == "A X X X X X")
        let unpinned = try catalogue.scenario("resumption-after-unpinned-handshake")
        #expect(unpinned.steps.map(\.pins) == [.absent, .inForce])
        let rotation = try catalogue.scenario("rotation-between-connections")
        #expect(rotation.steps[1].rotateTo == ["leaf-emergency-rekey", "lab-intermediate-a"])
        #expect(rotation.steps[0].rotateTo == nil)
        // A scenario of one connection has no steps, and its servers never resume.
        let baseline = try catalogue.scenario("baseline")
        #expect(!baseline.isMultiStep && baseline.server.resumption == .off && baseline.parties.isEmpty)
    }

    @Test func aStepNamesAKnownParty() throws {
        let yaml =
            Self.header + """

                steps:
                  - {host: localhost, expect: \(Self.allAccept)}
                  - {host: localhost, party: interceptr, expect: \(Self.allAccept)}
                """
        let e = #expect(throws: ScenarioError.self) { try parse(yaml) }
        #expect(e?.field == "steps[1].party")
        #expect(e?.description.contains("'interceptr' is not a party") == true, "\(String(describing: e))")
    }

    @Test func pinsAreInForceOrAbsent() throws {
        let yaml =
            Self.header + """

                steps:
                  - {host: localhost, pins: later, expect: \(Self.allAccept)}
                  - {host: localhost, expect: \(Self.allAccept)}
                """
        let e = #expect(throws: ScenarioError.self) { try parse(yaml) }
        #expect(e?.field == "steps[0].pins")
        #expect(e?.fix.contains("absent") == true)
    }

    @Test func stepsAreAtLeastTwoAndCarryTheExpectations() throws {
        let one = Self.header + "\nsteps:\n  - {host: localhost, expect: \(Self.allAccept)}\n"
        let e1 = #expect(throws: ScenarioError.self) { try parse(one) }
        #expect(e1?.field == "steps")
        let both =
            Self.header + """

                expect: \(Self.allAccept)
                steps:
                  - {host: localhost, expect: \(Self.allAccept)}
                  - {host: localhost, expect: \(Self.allAccept)}
                """
        let e2 = #expect(throws: ScenarioError.self) { try parse(both) }
        #expect(e2?.field == "expect")
        let missing =
            Self.header + """

                steps:
                  - {host: localhost, expect: \(Self.allAccept)}
                  - {host: localhost, expect: {none: accept}}
                """
        let e3 = #expect(throws: ScenarioError.self) { try parse(missing) }
        #expect(e3?.field == "steps[1].expect.leaf-cert", "\(String(describing: e3))")
    }

    @Test func aTicketKeyNeedsTickets() throws {
        let yaml =
            Self.header.replacingOccurrences(of: "resumption: tickets", with: "resumption: ids\n  ticket-key: shared")
            + "\nexpect: \(Self.allAccept)\n"
        let e = #expect(throws: ScenarioError.self) { try parse(yaml) }
        #expect(e?.field == "server.ticket-key")
        let bad =
            Self.header.replacingOccurrences(of: "resumption: tickets", with: "resumption: always")
            + "\nexpect: \(Self.allAccept)\n"
        let e2 = #expect(throws: ScenarioError.self) { try parse(bad) }
        #expect(e2?.field == "server.resumption")
        #expect(e2?.fix.contains("tickets") == true)
    }

    /// A client that cannot keep sessions across connections.
    struct OneShot: PinningClient {
        var name: String { "one-shot" }
        func run(_ target: ClientTarget) async -> ClientOutcome { await BuiltInClients.named("correct")!.run(target) }
    }

    @Test func aClientWithoutSessionsIsUnsupportedNeverJudged() async throws {
        let report = try await TestLab.runner().run(
            .inProcess(OneShot()), options: CheckOptions(scenarios: ["resumption-genuine", "baseline"]))
        let steps = report.verdicts.filter { $0.scenario == "resumption-genuine" }
        #expect(steps.count == PinProfile.all.count * 2)
        #expect(steps.allSatisfy { $0.status == .unsupported && $0.observed == nil })
        #expect(steps.allSatisfy { $0.reason.contains("cannot keep state across connections") })
        #expect(report.verdicts.filter { $0.scenario == "baseline" }.allSatisfy { $0.status == .pass })
    }

    @Test func aCommandTemplateIsUnsupportedForSteps() async throws {
        let client = CommandClient(template: try CommandTemplate(["curl", "-sS", "--cacert", "{ca}", "{url}"]))
        let report = try await TestLab.runner().run(
            .command(client), options: CheckOptions(engines: [Engines.openssl], scenarios: ["resumption-cross-host"]))
        #expect(report.verdicts.count == PinProfile.all.count)
        #expect(report.verdicts.allSatisfy { $0.status == .unsupported })
    }

    @Test("each step is judged, and the cell passes only when every step does")
    func verdictPerStep() async throws {
        let runner = try await TestLab.runner()
        let correct = try await runner.run(
            .inProcess(BuiltInClients.named("correct")!),
            options: CheckOptions(scenarios: ["resumption-after-unpinned-handshake"]))
        #expect(correct.verdicts.allSatisfy { $0.status == .pass }, "\(correct.verdicts.map(\.reason))")
        for v in correct.verdicts {
            let steps = try #require(v.steps)
            #expect(steps.map(\.step) == [1, 2])
            #expect(steps[0].pins == .absent && steps[1].pins == .inForce)
            #expect(steps[0].observed == .accepted)
            #expect(steps[0].evidence?.resumption == nil, "the first connection is a full handshake")
            // The second connection resumed the interceptor's session: the server says so, whatever the client did.
            #expect(steps[1].evidence?.resumption == .ticket, "\(v.engine) \(v.profile)")
            #expect(steps[1].observed == (v.profile == .none ? .accepted : .refused))
        }
        let skips = try await runner.run(
            .inProcess(BuiltInClients.named("skips-pins-on-resumption")!),
            options: CheckOptions(scenarios: ["resumption-after-unpinned-handshake"]))
        let failed = skips.verdicts.filter { $0.status == .fail }
        #expect(Set(failed.map(\.profile)) == Set(PinProfile.all.filter { $0 != .none }))
        #expect(failed.allSatisfy { $0.steps?[0].status == .pass && $0.steps?[1].status == .fail })
        #expect(failed.allSatisfy { $0.reason.hasPrefix("step 2 of 2 (api.pinning.test via interceptor)") })
    }

    @Test func earlyDataIsAcceptOrRejectOnTicketsAndSendOrNoneOnSteps() throws {
        let early = try Catalogue.bundled().scenario("early-data-to-interceptor")
        #expect(early.parties["interceptor"]?.earlyData == true && !early.server.earlyData)
        #expect(early.steps.map(\.earlyData) == [false, true])
        #expect(early.expectedRow == "A X X X X X")
        let bad =
            Self.header.replacingOccurrences(of: "resumption: tickets", with: "resumption: tickets\n  early-data: yes")
            + "\nexpect: \(Self.allAccept)\n"
        let e = #expect(throws: ScenarioError.self) { try parse(bad) }
        #expect(e?.field == "server.early-data")
        let noTickets =
            Self.header.replacingOccurrences(of: "resumption: tickets", with: "resumption: ids\n  early-data: accept")
            + "\nexpect: \(Self.allAccept)\n"
        let e2 = #expect(throws: ScenarioError.self) { try parse(noTickets) }
        #expect(e2?.field == "server.early-data")
        #expect(e2?.fix.contains("resumption: tickets") == true)
        let step =
            Self.header + """

                steps:
                  - {host: localhost, expect: \(Self.allAccept)}
                  - {host: localhost, early-data: always, expect: \(Self.allAccept)}
                """
        let e3 = #expect(throws: ScenarioError.self) { try parse(step) }
        #expect(e3?.field == "steps[1].early-data")
    }

    @Test("0-RTT to an interceptor: judged by the early-data bytes the interceptor counted, not by the client's word")
    func earlyDataJudgedByTheInterceptorsCount() async throws {
        let runner = try await TestLab.runner()
        let options = CheckOptions(scenarios: ["early-data-to-interceptor"])
        let correct = try await runner.run(.inProcess(BuiltInClients.named("correct")!), options: options)
        #expect(correct.verdicts.count == PinProfile.all.count * 2)
        #expect(correct.verdicts.allSatisfy { $0.status == .pass }, "\(correct.verdicts.map(\.reason))")
        for v in correct.verdicts {
            let steps = try #require(v.steps)
            #expect(steps[1].evidence?.resumption == .ticket, "\(v.engine) \(v.profile)")
            // Unpinned, the request may go as 0-RTT, and does; pinned, not one byte of early data.
            if v.profile == .none {
                #expect((steps[1].evidence?.earlyDataBytes ?? 0) > 0, "\(v.engine): the correct client sent no 0-RTT")
            } else {
                #expect(steps[1].evidence?.earlyDataBytes == nil, "\(v.engine) \(v.profile)")
                #expect(steps[1].category == .pinMismatch)
            }
        }
        let early = try await runner.run(
            .inProcess(BuiltInClients.named("sends-early-data-on-resumption")!), options: options)
        let failed = early.verdicts.filter { $0.status == .fail }
        #expect(Set(failed.map(\.profile)) == Set(PinProfile.all.filter { $0 != .none }))
        #expect(failed.count == (PinProfile.all.count - 1) * 2)
        for v in failed {
            // The client claims it refused (its pin check ran after the handshake); the interceptor counted the
            // request's bytes as early data all the same.
            #expect(v.claim == .refused, "\(v.engine) \(v.profile)")
            #expect((v.steps?[1].evidence?.earlyDataBytes ?? 0) > 0)
            #expect(v.reason.contains("0-RTT early data"), "\(v.reason)")
        }
        // The same client on the same sessions without 0-RTT passes: its mistake is only in what leaves early.
        let resumption = try await runner.run(
            .inProcess(BuiltInClients.named("sends-early-data-on-resumption")!),
            options: CheckOptions(scenarios: ["resumption-after-unpinned-handshake"]))
        #expect(resumption.verdicts.allSatisfy { $0.status == .pass })
    }

    /// Judged by an independent validator (python's jsonschema).
    @Test(.requiresPython(module: "jsonschema"))
    func reportWithStepsValidatesAgainstItsSchema() async throws {
        let report = try await TestLab.runner().run(
            .inProcess(BuiltInClients.named("skips-pins-on-resumption")!),
            options: CheckOptions(engines: [Engines.gnutls], scenarios: ["resumption-cross-host", "baseline"]))
        let json = try report.render(.json)
        #expect(json.contains("\"steps\""))
        #expect(json.contains("\"resumption\":\"ticket\"") || json.contains("\"resumption\" : \"ticket\""))
        let dir = TestScratch.root
        let schema = dir.appendingPathComponent("steps-schema-\(UUID().uuidString).json")
        let doc = dir.appendingPathComponent("steps-report-\(UUID().uuidString).json")
        try ReportSchemas.json.write(to: schema, atomically: true, encoding: .utf8)
        try json.write(to: doc, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(at: schema)
            try? FileManager.default.removeItem(at: doc)
        }
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
            v = [c for c in doc["verdicts"] if "steps" in c][0]
            bad = dict(doc); bad["verdicts"] = [dict(v, steps=[dict(v["steps"][0], pins="sometimes")] + v["steps"][1:])]
            try:
                jsonschema.Draft202012Validator(schema).validate(bad); print("schema accepted a bad step"); sys.exit(3)
            except jsonschema.ValidationError:
                print("ok")
            """
        let r = try await TestLab.run(["python3", "-c", script, schema.path, doc.path])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("ok"))
    }
}
