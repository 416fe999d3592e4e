import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI
import PinningLabGnuTLS
import PinningLabOpenSSL

extension CheckRunner {
    /// Runs one cell of a scenario made of several connections: a server per party, started for this cell only
    /// (so each cell starts with fresh session state and an unrotated genuine server), one client session cache
    /// shared by the steps, a verdict per step.
    func runSteps(
        of s: Scenario, profile p: PinProfile, engine: any TLSEngine, client: ClientUnderTest, timeout: Duration,
        files: CellFiles
    ) async -> Verdict {
        func notRun(_ status: Verdict.Status, _ reason: String) -> Verdict {
            .notRun(scenario: s.id, profile: p, engine: engine.name, client: client.name, expected: s.expected(p),
                    status: status, reason: reason)
        }
        // An in-process client that keeps sessions runs each step; a command whose template names the steps runs
        // them all in one process (CommandSteps.swift); any other client is not judged here.
        var inProcess: (any PinningClient)?
        var command: CommandClient?
        switch client {
        case .inProcess(let c) where c.keepsSessionsAcrossSteps:
            inProcess = c
        case .command(let c):
            if let why = Self.commandStepsUnsupported(c, s) { return notRun(.unsupported, why) }
            command = c
        default:
            return notRun(
                .unsupported,
                "this scenario is \(s.steps.count) connections that share the client's TLS session cache; the client cannot keep state across connections, so it is not judged here")
        }
        var servers: [String: FixtureServer] = [:]
        // The cell's ticket keys, by name: random, made for this cell only.
        var ticketKeys: [String: SessionTicketKey] = [:]
        for name in Set(s.steps.compactMap { s.party($0.party)?.ticketKey }) { ticketKeys[name] = SessionTicketKey(name: name) }
        let keys = ticketKeys
        var stepVerdicts: [(Scenario.Step, Verdict)] = []
        let cache = ClientSessionCache()
        let t0 = ContinuousClock.now
        let options = FixtureServer.Options(handshakeTimeout: timeout, idleTimeout: timeout, workerThreads: 1)
        do {
            for name in Set(s.steps.map(\.party)).sorted() {
                guard let party = s.party(name) else { return notRun(.error, "the scenario has no party '\(name)'") }
                let config = try serverConfiguration(for: s, party: party, name: "\(s.id)/\(name)", ticketKeys: keys)
                let started: Result<FixtureServer, TLSEngineError>
                do {
                    started = .success(try await FixtureServer.start(
                        engine: engine, configuration: config, options: options, label: "\(s.id)/\(name)"))
                } catch {
                    started = .failure(error)
                }
                switch started {
                case .success(let server): servers[name] = server
                case .failure(let e):
                    for server in servers.values { await server.stop() }
                    return notRun(e.code == .unsupported ? .unsupported : .error,
                                  "\(engine.name) cannot serve the party \(name) of this scenario: \(e.reason)")
                }
            }
            try await files.prepareCredentials(for: s)
            if let command {
                stepVerdicts = try await runCommandSteps(
                    of: s, profile: p, engine: engine, client: command, servers: servers, files: files)
            }
            for (i, step) in s.steps.enumerated() {
                guard let c = inProcess else { break }
                let server = servers[step.party]!
                if let chain = step.rotateTo, let party = s.party(step.party) {
                    try server.rotate(to: try serverConfiguration(
                        for: s, party: party, name: "\(s.id)/\(step.party)", chain: chain, ticketKeys: keys))
                }
                let before = server.connectionsAccepted
                var target = try files.target(for: s, profile: p, port: server.port, timeout: timeout)
                target.host = step.host
                if step.pins == .absent { target.pins = PinSet(kind: target.pins.kind, hashes: []) }
                target.sessionCache = cache
                target.step = i + 1
                target.earlyData = step.earlyData
                let stepTarget = target
                let outcome = await raceAgainstDeadline(timeout + .seconds(5), { await c.run(stepTarget) })
                let observations = (await server.settle(timeout: .seconds(5)) ?? server.observations()).filter { $0.id > before }
                let v: Verdict
                if let outcome {
                    v = Verdict.judge(
                        scenario: s.id, profile: p, engine: engine.name, client: client.name, expected: step.expected(p),
                        evidence: ServerEvidence(observations), outcome: outcome, clientAuth: s.party(step.party)?.clientAuth ?? .none,
                        expectedCategory: step.expected(p) == .refuse ? s.refusal : nil)
                } else {
                    v = .notRun(scenario: s.id, profile: p, engine: engine.name, client: client.name, expected: step.expected(p),
                                status: .error, reason: "the client did not finish this step within its timeout and 5 s more")
                }
                stepVerdicts.append((step, v))
                if outcome == nil { break }
            }
        } catch {
            for server in servers.values { await server.stop() }
            return notRun(.error, "cannot run the steps: \(error)")
        }
        for server in servers.values { await server.stop() }
        return Verdict.combining(
            steps: stepVerdicts, scenario: s.id, profile: p, engine: engine.name, client: client.name,
            clientMilliseconds: milliseconds(ContinuousClock.now - t0))
    }
}
