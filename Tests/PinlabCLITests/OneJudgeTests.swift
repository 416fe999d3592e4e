// One cell, one judge: every way of running a client — the closure a test hands `ScenarioServer.verdict`, a
// `PinningClient` through `verdict(_:running:)`, `Lab.check`, and `pinlab check` — judges the same cell the same way.
// The cells that tell them apart are the `expect-if:` ones (revocation, CT), whose expectation depends on the checks a
// client declares: before there was one cell, the closure form judged them with no checks and no platform.
import Foundation
import PinningLab
import PinningLabTestSupport
import PinningLabTesting
import Testing

@Suite("one cell, one judge: every entry point agrees", .serialized)
struct OneJudgeTests {
    /// A client with the checks it is run as, whatever its own declaration.
    struct Declaring: PinningClient {
        let base: any PinningClient
        let declared: ClientChecks
        var name: String { base.name }
        var checks: ClientChecks { declared }
        func run(_ target: ClientTarget) async -> ClientOutcome { await base.run(target) }
    }

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    /// The revocation-checking client and a non-checking one, each declaring what it does.
    static let clients: [(name: String, checks: String)] = [
        ("correct-revocation-hard", "revocation=hard"),
        ("correct", "revocation=none"),
    ]

    static func conditionalScenarios() throws -> [String] {
        try Catalogue.bundled().scenarios.filter { $0.conditional != nil }.map(\.id)
    }

    @Test(
        "closure form, running: form, Lab.check and pinlab check give the same verdict on every expect-if cell",
        arguments: clients)
    func entryPointsAgree(_ client: (name: String, checks: String)) async throws {
        let ids = try Self.conditionalScenarios()
        #expect(ids.count == 19, "the catalogue's expect-if scenarios: \(ids)")
        let base = try #require(BuiltInClients.named(client.name))
        let checks = try ClientChecks(parsing: client.checks)
        let declaring = Declaring(base: base, declared: checks)
        let pki = CLI.pkiDirectory
        typealias Key = String
        func key(_ v: Verdict) -> Key { "\(v.scenario)/\(v.profile)/\(v.engine)" }

        var closure: [Key: Verdict] = [:]
        var running: [Key: Verdict] = [:]
        for id in ids {
            for engine in ServerEngine.both {
                try await Lab.withServer(ScenarioID(id), engine: engine, pkiDirectory: pki) { server in
                    for profile in PinProfile.all {
                        let v = await server.verdict(profile, client: client.name, checks: checks) { target in
                            let o = await base.run(target)
                            if o.claim == .refused { throw Refused(description: o.detail) }
                        }
                        closure[key(v)] = v
                        let r = await server.verdict(profile, running: declaring)
                        running[key(r)] = r
                    }
                }
            }
        }
        let report = try await Lab.check(
            declaring, scenarios: ids.map { ScenarioID($0) }, engines: .both, pkiDirectory: pki)
        let labCheck = Dictionary(report.verdicts.map { (key($0), $0) }, uniquingKeysWith: { a, _ in a })

        let cli = try await CLI.run(
            [
                "check", "--client", client.name, "--client-checks", client.checks, "--engine", "both",
                "--scenarios", ids.joined(separator: ","), "--format", "json",
            ] + CLI.dirArgs)
        #expect(cli.status == 0 || cli.status == 1, "\(cli.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? [String: Any])
        let cliVerdicts = try #require(json["verdicts"] as? [[String: Any]])
        var pinlab: [Key: String] = [:]
        for v in cliVerdicts {
            let k = "\(v["scenario"] as? String ?? "")/\(v["profile"] as? String ?? "")/\(v["engine"] as? String ?? "")"
            pinlab[k] = v["verdict"] as? String
        }

        #expect(closure.count == ids.count * 12)
        #expect(Set(closure.keys) == Set(running.keys))
        #expect(Set(closure.keys) == Set(labCheck.keys))
        #expect(Set(closure.keys) == Set(pinlab.keys))
        var judged = 0
        for (k, v) in closure.sorted(by: { $0.key < $1.key }) {
            let statuses = [v.status.rawValue, running[k]?.status.rawValue, labCheck[k]?.status.rawValue, pinlab[k]]
            #expect(
                Set(statuses).count == 1,
                "\(client.name) \(k): closure \(v.status) (\(v.reason)); running: \(running[k]?.status.rawValue ?? "-"); Lab.check \(labCheck[k]?.status.rawValue ?? "-"); pinlab check \(pinlab[k] ?? "-")"
            )
            #expect(v.expected == labCheck[k]?.expected, "\(k): the closure form expected \(v.expected)")
            if v.status == .pass || v.status == .fail { judged += 1 }
        }
        // The declared checks decide these cells: they are judged, not left as policy.
        #expect(judged > ids.count * 6, "\(client.name): only \(judged) cells judged pass or fail")
    }
}
