import Foundation
import PinningLab

/// The scenario servers started through the control API, by id (`rekey-gnutls-1`), in start order.
actor ServerRegistry {
    struct Entry: Sendable {
        let id: String
        let server: ScenarioServer
        let startedAt: Date
    }

    private let runner: CheckRunner
    private let workDirectory: URL
    private let options: FixtureServer.Options
    private let maxServers: Int
    private var entries: [Entry] = []
    /// Starts under way, counted against `maxServers`.
    private var starting = 0
    private var counter = 0
    private var stopped = false

    init(runner: CheckRunner, workDirectory: URL, options: FixtureServer.Options, maxServers: Int) {
        self.runner = runner
        self.workDirectory = workDirectory
        self.options = options
        self.maxServers = maxServers
    }

    var all: [Entry] { entries }

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
        guard entries.count + starting < maxServers else {
            throw ControlError(
                409, field: nil, "\(maxServers) servers are running, the most this control server runs at once.",
                fix: "stop some with DELETE /servers/{id}.")
        }
        starting += 1
        counter += 1
        let id = "\(scenario)-\(engine.name)-\(counter)"
        defer { starting -= 1 }
        let server: ScenarioServer
        do {
            server = try await runner.startServer(scenario, engine: engine, workDirectory: workDirectory, options: options)
        } catch let e as TLSEngineError where e.code == .unsupported {
            throw ControlError(
                422, field: "engine", "\(engine.name) cannot serve '\(scenario)' exactly: \(e.reason)",
                fix: "start it on the other engine; GET /scenarios/\(scenario) says what it needs.")
        } catch {
            throw ControlError(500, field: nil, "the server for '\(scenario)' on \(engine.name) did not start: \(error)")
        }
        let entry = Entry(id: id, server: server, startedAt: Date())
        if stopped {
            await server.stop()
            throw ControlError(503, field: nil, "the control server is shutting down.")
        }
        entries.append(entry)
        return entry
    }

    /// Removes and stops one server.
    func stop(_ id: String) async throws(ControlError) -> Entry {
        let e = try entry(id)
        entries.removeAll { $0.id == id }
        await e.server.stop()
        return e
    }

    /// Stops every server; later starts are refused.
    func stopAll() async {
        stopped = true
        let all = entries
        entries = []
        for e in all { await e.server.stop() }
    }
}
