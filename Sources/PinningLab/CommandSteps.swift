import Foundation
import PinningLabCore
import PinningLabModel

// A command client through a scenario made of several connections: one process for all the steps of a cell, when
// its template names them (`{url.1}`, `{url.2}`, …; the CommandTemplates article), so that whatever the client keeps
// between connections — curl `--next` keeps its TLS session cache — is kept.

extension CheckRunner {
    /// Why a command client is not judged on the steps of `s` (the cell is `unsupported`), or `nil` when it is.
    static func commandStepsUnsupported(_ c: CommandClient, _ s: Scenario) -> String? {
        let count = s.steps.count
        guard c.template.usesSteps else {
            return
                "this scenario is \(count) connections that share the client's TLS session cache; the command template names no step ({url.1} … {url.\(count)}), so it would run one process per connection and keep nothing between them: it is not judged here"
        }
        guard c.template.stepsNamed >= count else {
            return
                "the command template names steps up to \(c.template.stepsNamed) ({url.\(c.template.stepsNamed)}); this scenario has \(count) connections"
        }
        return nil
    }

    /// Runs the command once for every step of the cell and judges each step by what its parties' servers received
    /// (``StepEvidence/assign(_:connections:streams:)``).
    func runCommandSteps(
        _ cell: Cell, client c: CommandClient, servers: [String: FixtureServer], files: CellFiles
    ) async throws -> [(Cell.Step, Verdict)] {
        let s = cell.scenario
        let plan = cell.plan
        var context = try files.context(for: s, profile: cell.profile, port: servers[plan[0].party]!.port)
        let pins = context.pins
        let certificatePins = context.certificatePins
        context.steps = plan.map { step in
            StepContext(
                step: step.number, host: step.host, port: servers[step.party]!.port,
                pins: step.pins(from: pins), certificatePins: step.pins(from: certificatePins))
        }
        let before = servers.mapValues(\.connectionsAccepted)
        let (outcomes, milliseconds) = await c.runSteps(context, scratch: files.directory)
        var connections: [String: [Observation]] = [:]
        var streams: [String: [ObservedHTTP2Stream]] = [:]
        for (name, server) in servers {
            let seen = (await server.settle(timeout: .seconds(5)) ?? server.observations())
            connections[name] = seen.filter { $0.id > before[name]! }.sorted { $0.id < $1.id }
            streams[name] = server.http2Streams().filter { $0.connection > before[name]! }
        }
        let evidence = StepEvidence.assign(s, connections: connections, streams: streams)
        return plan.map { step in
            let i = step.number - 1
            return (
                step,
                cell.judge(
                    step, evidence: evidence[i], outcome: outcomes[i], clientMilliseconds: i == 0 ? milliseconds : 0)
            )
        }
    }
}
