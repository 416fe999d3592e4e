import Foundation
import PinningLab
import PinningLabCore

/// The scenario servers started through the control API, by id (`rekey-gnutls-1`), in start order.
actor ServerRegistry {
    struct Entry: Sendable {
        let id: String
        let server: ScenarioServer
        let startedAt: Date
        /// The batch (`POST /batch`) that started it, when one did: `batch-1`.
        var batch: String? = nil
        /// The batch cell it serves (`rekey/leaf-spki/openssl`), when a batch started it.
        var cell: String? = nil
        /// The other servers of a scenario made of several connections, by party name (`interceptor`, `genuine`):
        /// one per party its steps name, sharing the ticket keys the scenario gives them.
        var parties: [String: FixtureServer] = [:]

        /// The server of `party` (a scenario of several connections), or the scenario server when `party` is nil.
        func server(party: String?) throws(ControlError) -> FixtureServer {
            guard let party else { return server.running }
            guard let p = parties[party] else {
                let known = parties.keys.sorted()
                throw .badRequest(
                    "party", "the server \(id) has no party '\(party)'.",
                    fix: known.isEmpty
                        ? "leave 'party' out: its scenario is one connection."
                        : "name one of: \(known.joined(separator: ", ")).")
            }
            return p
        }

        /// Stops the scenario server and its parties.
        func stop() async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await server.stop() }
                for p in parties.values { group.addTask { await p.stop() } }
            }
        }
    }

    /// One cell of a batch to start: a server of its own for (scenario, profile, engine).
    struct BatchCellRequest: Sendable {
        var scenario: String
        var profile: PinProfile
        var engine: any TLSEngine
        var id: String { BatchCell.id(scenario: scenario, profile: profile, engine: engine.name) }
    }

    /// What `startBatch` started: the servers of the runnable cells (in request order) and the cells the engine
    /// cannot serve, with the reason.
    struct StartedBatch: Sendable {
        var id: String
        var entries: [Entry]
        var unsupported: [(cell: String, reason: String)]
    }

    private let runner: CheckRunner
    /// Where the servers' trust and client files go (and the batch documents' files).
    nonisolated let workDirectory: URL
    private let options: FixtureServer.Options
    private let maxServers: Int
    private var entries: [Entry] = []
    /// The servers running: each entry's scenario server and its parties (the cap counts servers, not entries).
    private var serversRunning: Int { entries.reduce(0) { $0 + 1 + $1.parties.count } }

    /// The servers a start of `scenario` takes: its own, and one per party its steps name.
    private func serversNeeded(_ scenario: String) -> Int {
        1 + ((try? runner.catalogue.scenario(scenario)).map { Set($0.steps.map(\.party)).count } ?? 0)
    }

    /// Servers being started, counted against `maxServers`.
    private var starting = 0
    private var counter = 0
    private var batchCounter = 0
    private var stopped = false

    init(runner: CheckRunner, workDirectory: URL, options: FixtureServer.Options, maxServers: Int) {
        self.runner = runner
        self.workDirectory = workDirectory
        self.options = options
        self.maxServers = maxServers
    }

    var all: [Entry] { entries }
    /// Servers started so far (the live view's version counts it, so that a start always changes the version).
    var started: Int { counter }

    func entry(_ id: String) throws(ControlError) -> Entry {
        guard let e = entries.first(where: { $0.id == id }) else {
            let known = entries.map(\.id)
            throw .notFound(
                "id", "no running server has the id '\(id)'.",
                fix: known.isEmpty
                    ? "start one with POST /servers {\"scenario\": \"baseline\", \"engine\": \"openssl\"}."
                    : "running: \(known.joined(separator: ", ")); GET /servers lists them.")
        }
        return e
    }

    /// Starts `scenario` on `engine`. The scenario and engine have been checked by the caller.
    func start(scenario: String, engine: any TLSEngine) async throws(ControlError) -> Entry {
        guard !stopped else { throw ControlError(503, field: nil, "the control server is shutting down.") }
        let needed = serversNeeded(scenario)
        guard serversRunning + starting + needed <= maxServers else {
            throw ControlError(
                409, field: nil,
                "'\(scenario)' needs \(needed) server(s) and \(serversRunning + starting) of the \(maxServers) this control server runs at once are taken.",
                fix: "stop some with DELETE /servers/{id}.")
        }
        starting += needed
        counter += 1
        let id = "\(scenario)-\(engine.name)-\(counter)"
        defer { starting -= needed }
        let server: ScenarioServer
        do {
            server = try await runner.startServer(
                scenario, engine: engine, workDirectory: workDirectory, options: options)
        } catch let e as TLSEngineError where e.code == .unsupported {
            throw ControlError(
                422, field: "engine", "\(engine.name) cannot serve '\(scenario)' exactly: \(e.reason)",
                fix: "start it on the other engine; GET /scenarios/\(scenario) says what it needs.")
        } catch {
            throw ControlError(
                500, field: nil, "the server for '\(scenario)' on \(engine.name) did not start: \(error)")
        }
        var entry = Entry(id: id, server: server, startedAt: Date())
        if server.scenario.isMultiStep {
            do {
                entry.parties = try await runner.startParties(of: server.scenario, engine: engine, options: options)
                    .servers
            } catch let e as CheckRunner.PartyStartError {
                await server.stop()
                throw ControlError(
                    e.error.code == .unsupported ? 422 : 500, field: "engine", e.description,
                    fix: "start it on the other engine; GET /scenarios/\(scenario) says what each party needs.")
            } catch {
                await server.stop()
                throw ControlError(
                    500, field: nil, "the parties of '\(scenario)' on \(engine.name) did not start: \(error)")
            }
        }
        if stopped {
            await entry.stop()
            throw ControlError(503, field: nil, "the control server is shutting down.")
        }
        entries.append(entry)
        return entry
    }

    /// Starts one server per cell, as `pinlab check --batch` does (each cell on a port of its own, so a connection
    /// belongs to exactly one cell), and registers each under the batch's id: `DELETE /servers/{id}` stops one,
    /// `DELETE /batch/{id}` all of them. All or nothing: the whole batch must fit under `maxServers` (409
    /// otherwise), and when a server fails to start for a reason other than the engine not supporting the
    /// scenario, those already started are stopped. Cells the engine cannot serve exactly are left out and
    /// reported. The servers use the registry's options with one worker thread each (a batch may start hundreds).
    func startBatch(_ cells: [BatchCellRequest]) async throws(ControlError) -> StartedBatch {
        guard !stopped else { throw ControlError(503, field: nil, "the control server is shutting down.") }
        let free = maxServers - serversRunning - starting
        let needed = cells.reduce(0) { $0 + serversNeeded($1.scenario) }
        guard needed <= free else {
            throw ControlError(
                409, field: nil,
                "the batch needs \(needed) servers (one per cell, and one per party of a scenario of several connections) and \(max(free, 0)) of the \(maxServers) this control server runs at once are free.",
                fix:
                    "select fewer cells (scenarios, profiles, engines), stop servers (DELETE /servers/{id}, DELETE /batch/{id}), or start pinlab serve with a larger --control-max-servers."
            )
        }
        starting += needed
        defer { starting -= needed }
        batchCounter += 1
        let batchID = "batch-\(batchCounter)"
        var batchOptions = options
        batchOptions.listener.workerThreads = 1
        var started: [Entry] = []
        var unsupported: [(cell: String, reason: String)] = []
        for cell in cells {
            do {
                let server = try await runner.startServer(
                    cell.scenario, engine: cell.engine, workDirectory: workDirectory,
                    options: batchOptions)
                counter += 1
                var entry = Entry(
                    id: "\(cell.scenario)-\(cell.engine.name)-\(counter)", server: server, startedAt: Date(),
                    batch: batchID, cell: cell.id)
                if server.scenario.isMultiStep {
                    do {
                        entry.parties = try await runner.startParties(
                            of: server.scenario, engine: cell.engine, options: batchOptions, scheduleRotations: true
                        ).servers
                    } catch {
                        await server.stop()
                        throw error
                    }
                }
                started.append(entry)
            } catch let e as TLSEngineError where e.code == .unsupported {
                unsupported.append(
                    (cell.id, "\(cell.engine.name) cannot serve '\(cell.scenario)' exactly: \(e.reason)"))
            } catch let e as CheckRunner.PartyStartError where e.error.code == .unsupported {
                unsupported.append((cell.id, e.description))
            } catch {
                for e in started { await e.stop() }
                throw ControlError(
                    500, field: nil, "the server of the cell \(cell.id) did not start: \(error)",
                    fix: "the servers this batch had started are stopped; try again.")
            }
        }
        if stopped {
            for e in started { await e.stop() }
            throw ControlError(503, field: nil, "the control server is shutting down.")
        }
        entries += started
        return StartedBatch(id: batchID, entries: started, unsupported: unsupported)
    }

    /// Removes and stops every server of a batch still running (those stopped one by one are gone already).
    func stopBatch(_ id: String) async throws(ControlError) -> [Entry] {
        let members = entries.filter { $0.batch == id }
        guard !members.isEmpty else {
            let known = Set(entries.compactMap(\.batch)).sorted()
            throw .notFound(
                "id", "no running server belongs to a batch with the id '\(id)'.",
                fix: known.isEmpty
                    ? "start one with POST /batch {\"scenarios\": [\"baseline\"]}."
                    : "batches with running servers: \(known.joined(separator: ", ")).")
        }
        entries.removeAll { $0.batch == id }
        await withTaskGroup(of: Void.self) { group in
            for e in members { group.addTask { await e.stop() } }
        }
        return members
    }

    /// Removes and stops one server.
    func stop(_ id: String) async throws(ControlError) -> Entry {
        let e = try entry(id)
        entries.removeAll { $0.id == id }
        await e.stop()
        return e
    }

    /// Stops every server; later starts are refused.
    func stopAll() async {
        stopped = true
        let all = entries
        entries = []
        await withTaskGroup(of: Void.self) { group in
            for e in all { group.addTask { await e.stop() } }
        }
    }
}
