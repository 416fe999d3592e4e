import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI
package import PinningLabTLSTypes

extension CheckRunner {
    /// The servers of a scenario made of several connections: one per party its steps name, each with the
    /// scenario's chain, versions, resumption and ALPN for that party, sharing the ticket keys the scenario names
    /// (random, made here, never from a seed). Used per cell by the runner and per start by the control API.
    package struct StartedParties: Sendable {
        /// By party name (`genuine`, `interceptor`, …).
        package var servers: [String: FixtureServer]
        /// The ticket keys by name, for a rotation later (`rotate-to`) that keeps a party's tickets.
        package var ticketKeys: [String: SessionTicketKey]
    }

    /// A party the engine could not start: the engine's error, with the party named.
    package struct PartyStartError: Error, CustomStringConvertible {
        package var party: String
        package var engine: String
        package var error: TLSEngineError
        package var description: String {
            "\(engine) cannot serve the party \(party) of this scenario: \(error.reason)"
        }
    }

    /// Starts one server per party of `s`'s steps; on any failure the ones already started are stopped. Throws
    /// `PartyStartError` when the engine refuses a party, the configuration's error when the PKI lacks a name.
    /// With `scheduleRotations`, each step's `rotate-to` is scheduled on its party's server by connection number
    /// (the k-th connection a party accepts belongs to the k-th step it answers), for clients that make the steps'
    /// connections on their own — a batch harness, a command that runs every step — and leave the runner no moment
    /// to rotate in between.
    package func startParties(
        of s: Scenario, engine: any TLSEngine, options: FixtureServer.Options, scheduleRotations: Bool = false
    ) async throws -> StartedParties {
        var ticketKeys: [String: SessionTicketKey] = [:]
        for name in Set(s.steps.compactMap { s.party($0.party)?.ticketKey }) {
            ticketKeys[name] = SessionTicketKey(name: name)
        }
        var servers: [String: FixtureServer] = [:]
        do {
            for name in Set(s.steps.map(\.party)).sorted() {
                guard let party = s.party(name) else { throw ScenarioPartyMissing(scenario: s.id, party: name) }
                let config = try serverConfiguration(
                    for: s, party: party, name: "\(s.id)/\(name)", ticketKeys: ticketKeys)
                do {
                    servers[name] = try await FixtureServer.start(
                        engine: engine, configuration: config, options: options, label: "\(s.id)/\(name)")
                } catch {
                    throw PartyStartError(party: name, engine: engine.name, error: error)
                }
            }
            if scheduleRotations {
                var answered: [String: Int] = [:]
                for step in s.steps {
                    answered[step.party, default: 0] += 1
                    guard let chain = step.rotateTo, let server = servers[step.party] else { continue }
                    let config = try partyConfiguration(of: s, party: step.party, chain: chain, ticketKeys: ticketKeys)
                    do {
                        try server.rotate(to: config, fromConnection: answered[step.party]!)
                    } catch {
                        throw PartyStartError(party: step.party, engine: engine.name, error: error)
                    }
                }
            }
        } catch {
            for server in servers.values { await server.stop() }
            throw error
        }
        return StartedParties(servers: servers, ticketKeys: ticketKeys)
    }

    /// The configuration of one party, rotated to `chain` (a step's `rotate-to`), keeping the party's ticket keys.
    package func partyConfiguration(
        of s: Scenario, party name: String, chain: [String]? = nil, ticketKeys: [String: SessionTicketKey]
    ) throws -> ServerTLSConfiguration {
        guard let party = s.party(name) else { throw ScenarioPartyMissing(scenario: s.id, party: name) }
        return try serverConfiguration(
            for: s, party: party, name: "\(s.id)/\(name)", chain: chain, ticketKeys: ticketKeys)
    }
}

/// A step names a party the scenario does not declare (the loader refuses such files; a hand-built `Scenario` can).
struct ScenarioPartyMissing: Error, CustomStringConvertible {
    var scenario: String
    var party: String
    var description: String { "the scenario \(scenario) has no party '\(party)'" }
}

extension CheckRunner {
    /// Runs one cell of a scenario made of several connections: a server per party, started for this cell only
    /// (so each cell starts with fresh session state and an unrotated genuine server), one client session cache
    /// shared by the steps, a verdict per step.
    func runSteps(
        _ cell: Cell, engine: any TLSEngine, client: CellClient, timeout: Duration, files: CellFiles
    ) async -> Verdict {
        let s = cell.scenario
        // An in-process client that keeps sessions runs each step; a command whose template names the steps runs
        // them all in one process (CommandSteps.swift); any other client is not judged here.
        var inProcess: ((ClientTarget) async -> ConnectionRun)?
        var command: CommandClient?
        switch client {
        case .inProcess(let run, keepsSessionsAcrossSteps: true):
            inProcess = run
        case .command(let c):
            if let why = Self.commandStepsUnsupported(c, s) { return cell.notRun(.unsupported, why) }
            command = c
        default:
            return cell.notRun(
                .unsupported,
                "this scenario is \(s.steps.count) connections that share the client's TLS session cache; the client cannot keep state across connections, so it is not judged here"
            )
        }
        var servers: [String: FixtureServer] = [:]
        var stepVerdicts: [(Cell.Step, Verdict)] = []
        let cache = ClientSessionCache()
        let t0 = ContinuousClock.now
        let options = FixtureServer.Options(handshakeTimeout: timeout, idleTimeout: timeout, workerThreads: 1)
        let keys: [String: SessionTicketKey]
        do {
            do {
                let parties = try await startParties(
                    of: s, engine: engine, options: options, scheduleRotations: command != nil)
                servers = parties.servers
                keys = parties.ticketKeys
            } catch let e as PartyStartError {
                return cell.notRun(e.error.code == .unsupported ? .unsupported : .error, e.description)
            }
            try await files.prepareCredentials(for: s)
            if let command {
                stepVerdicts = try await runCommandSteps(cell, client: command, servers: servers, files: files)
            }
            for step in cell.plan {
                guard let run = inProcess else { break }
                let server = servers[step.party]!
                if let chain = step.rotateTo {
                    try server.rotate(
                        to: try partyConfiguration(of: s, party: step.party, chain: chain, ticketKeys: keys))
                }
                let before = server.connectionsAccepted
                let streamsBefore = server.http2Streams().last?.sequence ?? 0
                var target = try files.target(for: s, profile: cell.profile, port: server.port, timeout: timeout)
                target.host = step.host
                target.pins = step.pins(from: target.pins)
                target.sessionCache = cache
                target.step = step.number
                target.earlyData = step.earlyData
                target.http2 = step.http2
                let outcome = await run(target)
                let evidence: ServerEvidence
                if step.http2 {
                    evidence = await Self.http2Evidence(
                        server, host: step.host, streamsAfter: streamsBefore, connectionsAfter: before)
                } else {
                    let observations = (await server.settle(timeout: .seconds(5)) ?? server.observations()).filter {
                        $0.id > before
                    }
                    evidence = ServerEvidence(observations)
                }
                guard case .finished(let o) = outcome else {
                    stepVerdicts.append(
                        (
                            step,
                            cell.notRun(.error, "the client did not finish this step within its timeout and 5 s more")
                        ))
                    break
                }
                stepVerdicts.append((step, cell.judge(step, evidence: evidence, outcome: o)))
            }
        } catch {
            for server in servers.values { await server.stop() }
            return cell.notRun(.error, "cannot run the steps: \(error)")
        }
        for server in servers.values { await server.stop() }
        return cell.combining(stepVerdicts, clientMilliseconds: milliseconds(ContinuousClock.now - t0))
    }

    /// What a party that speaks HTTP/2 saw of one step. A client may keep an HTTP/2 connection open for a later
    /// request, and may send that request on a connection opened for another host (coalescing): the request
    /// reached the party when it recorded a stream whose `:authority` is the step's host — on any connection,
    /// one opened in an earlier step included. Without such a stream, the step's new connections decide (waiting
    /// until each has finished, or is an open HTTP/2 connection, for at most 5 s).
    static func http2Evidence(
        _ server: FixtureServer, host: String, streamsAfter: Int, connectionsAfter: Int
    ) async -> ServerEvidence {
        let wanted = PinScope.normalizedHost(host)
        let giveUp = ContinuousClock.now.advanced(by: .seconds(5))
        var finished: [Observation] = []
        var forHost: [ObservedHTTP2Stream] = []
        while true {
            finished = server.observations(after: connectionsAfter)
            forHost = server.http2Streams(after: streamsAfter).filter {
                StepEvidence.host(ofAuthority: $0.stream.authority) == wanted
            }
            let open = Set(server.http2Streams().map(\.connection))
            let done = Set(finished.map(\.id))
            let accepted = server.connectionsAccepted
            let pending =
                accepted > connectionsAfter
                ? ((connectionsAfter + 1)...accepted).filter { !done.contains($0) && !open.contains($0) } : []
            if pending.isEmpty || ContinuousClock.now >= giveUp { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        guard let s = forHost.first else { return ServerEvidence(finished) }
        return StepEvidence.stream(
            s, connection: finished.first { $0.id == s.connection }, openedEarlier: s.connection <= connectionsAfter)
    }
}
