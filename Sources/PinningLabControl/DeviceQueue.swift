import Foundation
import PinningLab
import PinningLabCore

/// The cell queue of the control API: cells of a selection handed out on lease to devices (an app on a phone, a farm
/// worker), one scenario server per lease, each answer judged by the cell's one judge on that server's evidence.
///
/// A queue (`POST /queues`) is the cells of a selection for one client on one platform. A device asks for the next
/// cell of its client and platform (`POST /leases`), connects to the lease's server as the cell says, and answers
/// with its claim (`POST /leases/{id}/answer`). A lease not answered or renewed within the queue's `leaseSeconds`
/// expires and its cell goes back to the queue; its server keeps running for one more `leaseSeconds`, so that a late
/// answer is still judged on its own evidence. The first answer of a cell is kept; a later one (another lease of the
/// same cell) is judged too and recorded as a disagreement. Every answer is written to the queue's file
/// (`control/queues/ID.json` in the PKI folder, replaced atomically) before it is acknowledged, so a restarted control
/// API loses no answered cell; leases end with the process that granted them.
actor DeviceQueues {
    /// A queue as it is kept on disk.
    struct Record: Codable, Sendable {
        var format = "pinlab-device-queue"
        var formatVersion = 1
        var id: String
        var client: String
        var platform: PlatformPolicy?
        var scenarios: [String]
        var profiles: [PinProfile]
        var engines: [String]
        var leaseSeconds: Double
        var maxLeases: Int
        var createdAt: Date
        var updatedAt: Date
        /// The first answer of each cell, judged, by cell id (`rekey/leaf-spki/openssl`).
        var answers: [String: Verdict] = [:]
        /// Cells whose engine cannot serve the scenario exactly, found when a lease tried to start their server.
        var unsupported: [String: Verdict] = [:]
        var disagreements: [Disagreement] = []
    }

    /// A later answer of a cell already answered: judged on its own lease's evidence, not counted.
    struct Disagreement: Codable, Sendable {
        var cell: String
        var lease: String
        var first: Verdict.Status
        var firstDevice: Verdict.Device?
        var verdict: Verdict
        var at: Date
    }

    struct Lease: Sendable {
        let id: String
        let queue: String
        let cell: String
        let device: Verdict.Device
        var entry: ServerRegistry.Entry?
        var view: LeaseView?
        var expiresAt: Date
        var expired = false
        var answering = false
    }

    /// Leases held at once over every queue, expired ones whose server still runs included.
    static let maxOutstandingLeases = 64
    static let maxLeaseSeconds = 3600.0
    /// Queues kept (in memory and on disk) at once.
    static let maxQueues = 64
    static let maxNameLength = 200

    private let catalogue: Catalogue
    private let pki: LabPKI
    private let registry: ServerRegistry
    private let runner: CheckRunner
    private let index: IdentityIndex
    nonisolated let folder: URL
    private var records: [String: Record] = [:]
    private var leases: [String: Lease] = [:]
    /// Leases answered, and leases ended by expiry: their ids get 409 and 410, not 404.
    private var answered: Set<String> = []
    private var gone: Set<String> = []
    /// Lease ids are `L-EPOCH-N`: EPOCH is new at every start, so a lease of an earlier process is never taken for one
    /// of this one.
    private let epoch = String(UUID().uuidString.prefix(8)).lowercased()
    private var counter = 0

    init(
        catalogue: Catalogue, pki: LabPKI, registry: ServerRegistry, runner: CheckRunner, index: IdentityIndex,
        folder: URL
    ) {
        self.catalogue = catalogue
        self.pki = pki
        self.registry = registry
        self.runner = runner
        self.index = index
        self.folder = folder
        var loaded: [String: Record] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasSuffix(".json") {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(name)),
                let r = try? Self.decoder.decode(Record.self, from: data), r.format == "pinlab-device-queue"
            else { continue }
            loaded[r.id] = r
        }
        records = loaded
    }

    private static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()

    private static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.sortedKeys]
        return e
    }

    // MARK: - Queues

    func create(_ r: Record) throws(ControlError) -> QueueView {
        guard records.count < Self.maxQueues else {
            throw ControlError(
                409, field: nil,
                "\(records.count) queues are kept, as many as this control API keeps (\(Self.maxQueues)).",
                fix: "delete finished ones: DELETE /queues/{id}.")
        }
        var r = r
        var id: String
        repeat { id = "queue-" + String(UUID().uuidString.prefix(8)).lowercased() } while records[id] != nil
        r.id = id
        try persist(r)
        records[id] = r
        return view(r)
    }

    func all() async -> [QueueView] {
        await sweep()
        return records.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.map(view)
    }

    func queue(_ id: String) async throws(ControlError) -> QueueView {
        await sweep()
        return view(try record(id))
    }

    func delete(_ id: String) async throws(ControlError) -> QueueView {
        let r = try record(id)
        let v = view(r)
        records[id] = nil
        let ended = leases.values.filter { $0.queue == id }
        for l in ended {
            leases[l.id] = nil
            gone.insert(l.id)
        }
        try? FileManager.default.removeItem(at: file(id))
        for l in ended { if let e = l.entry { _ = try? await registry.stop(e.id) } }
        return v
    }

    /// The queue as a report: the first answer of every answered cell, the cells not run (skipped, unsupported),
    /// and an error verdict for every cell not answered yet.
    func report(_ id: String) async throws(ControlError) -> CheckReport {
        await sweep()
        let r = try record(id)
        var verdicts: [Verdict] = []
        for c in cells(r, all: true) {
            if !r.profiles.contains(c.profile) {
                verdicts.append(c.notRun(.skipped, "the client does not support the profile \(c.profile)"))
            } else if let v = r.answers[key(c)] ?? r.unsupported[key(c)] {
                verdicts.append(v)
            } else {
                verdicts.append(c.notRun(.error, "not answered yet: no device has answered this cell of \(r.id)"))
            }
        }
        var report = CheckReport(
            client: r.client, engines: r.engines, profiles: PinProfile.all, startedAt: r.createdAt,
            durationSeconds: max(0, r.updatedAt.timeIntervalSince(r.createdAt)), verdicts: verdicts,
            scenarios: r.scenarios.compactMap { catalogue[$0] }.map { ScenarioSheet(scenario: $0, pki: pki) })
        report.platform = r.platform
        return report
    }

    // MARK: - Leases

    enum Granted: Sendable {
        case lease(LeaseView)
        case wait(LeaseWaitView)
    }

    /// The next cell of the oldest queue of `client` on `platform` (or of `queueID`) that has one, on lease.
    func lease(client: String, platform: PlatformPolicy?, queueID: String?, device: Verdict.Device)
        async throws(ControlError) -> Granted
    {
        await sweep()
        let candidates = records.values.filter {
            $0.client == client && $0.platform == platform && (queueID == nil || $0.id == queueID)
        }
        .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        guard let firstQueue = candidates.first else {
            if let queueID, let q = records[queueID] {
                throw .badRequest(
                    "client",
                    "the queue \(queueID) is for the client '\(q.client)' on \(q.platform?.rawValue ?? "no named platform"), not '\(client)' on \(platform?.rawValue ?? "no named platform").",
                    fix: "ask with the client and platform of the queue (GET /queues/\(queueID)).")
            }
            throw .notFound(
                queueID == nil ? "client" : "queue",
                queueID.map { "there is no queue \($0)." }
                    ?? "no queue holds cells for the client '\(client)' on \(platform?.rawValue ?? "no named platform").",
                fix: "create one with POST /queues {\"client\": \"\(client)\"}; GET /queues lists them.")
        }
        for q in candidates {
            while true {
                guard let r = records[q.id] else { break }
                let held = Set(leases.values.filter { $0.queue == r.id && !$0.expired }.map(\.cell))
                guard let next = cells(r, all: false).first(where: { !held.contains(key($0)) }) else { break }
                let active = leases.values.filter { $0.queue == r.id && !$0.expired }.count
                guard active < r.maxLeases else {
                    throw ControlError(
                        409, field: nil,
                        "\(active) cells of \(r.id) are on lease, its limit (maxLeases \(r.maxLeases)).",
                        fix: "answer or let a lease expire (\(Int(r.leaseSeconds)) s), then ask again.")
                }
                guard leases.count < Self.maxOutstandingLeases else {
                    throw ControlError(
                        409, field: nil,
                        "\(leases.count) leases are outstanding, as many as this control API holds (\(Self.maxOutstandingLeases)).",
                        fix: "answer leases or wait for expired ones to end, then ask again.")
                }
                counter += 1
                let id = "L-\(epoch)-\(counter)"
                let cellID = key(next)
                leases[id] = Lease(
                    id: id, queue: r.id, cell: cellID, device: device,
                    expiresAt: Date().addingTimeInterval(r.leaseSeconds))
                guard let engine = Engines.engine(named: next.engine) else {
                    leases[id] = nil
                    throw ControlError(
                        500, field: nil, "the engine '\(next.engine)' of \(r.id) is not registered in this process.")
                }
                let entry: ServerRegistry.Entry
                do {
                    entry = try await registry.start(scenario: next.scenario.id, engine: engine)
                } catch {
                    leases[id] = nil
                    if error.status == 422, var again = records[r.id] {
                        // The engine cannot serve the scenario exactly: the cell is not run, as in pinlab check.
                        again.unsupported[cellID] = next.notRun(.unsupported, error.error)
                        again.updatedAt = Date()
                        try persist(again)
                        records[r.id] = again
                        continue
                    }
                    throw error
                }
                let batchCell: BatchCell
                do {
                    batchCell = try runner.batchDocument(
                        [
                            BatchCellAddress(
                                scenario: next.scenario.id, profile: next.profile, engine: next.engine,
                                port: entry.server.port)
                        ],
                        workDirectory: registry.workDirectory
                    ).cells[0]
                } catch {
                    leases[id] = nil
                    _ = try? await registry.stop(entry.id)
                    throw ControlError(500, field: nil, "the cell \(cellID) could not be described: \(error)")
                }
                guard var lease = leases[id] else {
                    // The queue was deleted while the server started.
                    _ = try? await registry.stop(entry.id)
                    throw .notFound("queue", "the queue \(r.id) was deleted.", fix: "GET /queues lists the queues.")
                }
                // The lease runs from the moment the device can use it.
                lease.expiresAt = Date().addingTimeInterval(r.leaseSeconds)
                lease.entry = entry
                let v = LeaseView(
                    lease: id, queue: r.id, client: r.client, platform: r.platform?.rawValue, device: device.name,
                    os: device.os,
                    cell: batchCell, expect: next.expected.rawValue, server: ServerView(entry, index: index),
                    leaseSeconds: r.leaseSeconds, expiresAt: lease.expiresAt,
                    renew: "/leases/\(id)/renew", answer: "/leases/\(id)/answer")
                lease.view = v
                leases[id] = lease
                return .lease(v)
            }
        }
        let open = candidates.compactMap { records[$0.id] }.filter { !finished($0) }
        let shown = open.first ?? records[firstQueue.id] ?? firstQueue
        let onLease = leases.values.filter { $0.queue == shown.id && !$0.expired }.count
        return .wait(
            LeaseWaitView(
                queue: shown.id, finished: open.isEmpty, waiting: max(0, cells(shown, all: false).count - onLease),
                leased: onLease,
                retryAfterSeconds: open.isEmpty ? 0 : max(1, min(10, Int(shown.leaseSeconds / 4)))))
    }

    func renew(_ id: String) async throws(ControlError) -> LeaseView {
        await sweep()
        var l = try lease(id)
        guard !l.expired else {
            throw ControlError(
                410, field: "id", "the lease \(id) expired; its cell went back to the queue.",
                fix:
                    "answer it now (it is still judged, as a disagreement when another device answered first), or ask for a new lease."
            )
        }
        guard let r = records[l.queue], var v = l.view else {
            throw .notFound("id", "the queue of the lease \(id) was deleted.")
        }
        l.expiresAt = Date().addingTimeInterval(r.leaseSeconds)
        v.expiresAt = l.expiresAt
        v.server = l.entry.map { ServerView($0, index: index) } ?? v.server
        l.view = v
        leases[id] = l
        return v
    }

    func answer(_ id: String, outcome: ClientOutcome, milliseconds: Double) async throws(ControlError) -> AnswerView {
        await sweep()
        let l = try lease(id)
        guard !l.answering, let entry = l.entry else {
            throw ControlError(409, field: "id", "the lease \(id) is being answered.", fix: "answer a lease once.")
        }
        leases[id]?.answering = true
        let server = entry.server.running
        let observations = await server.settle(timeout: .seconds(5)) ?? server.observations()
        // From here to the recorded answer there is no suspension point: the lease leaves and the answer arrives in
        // one step of the actor. (Ending the lease before an awaited server stop let another device lease the same
        // cell in between, and its answer became a disagreement.)
        leases[id] = nil
        answered.insert(id)
        guard var r = records[l.queue], let cell = cells(r, all: true).first(where: { key($0) == l.cell }) else {
            _ = try? await registry.stop(entry.id)
            throw .notFound("id", "the queue of the lease \(id) was deleted.")
        }
        var verdict = cell.judge(
            evidence: ServerEvidence(observations), outcome: outcome, clientMilliseconds: milliseconds)
        verdict.device = l.device
        let recorded: String
        if let first = r.answers[l.cell] {
            r.disagreements.append(
                Disagreement(
                    cell: l.cell, lease: id, first: first.status, firstDevice: first.device,
                    verdict: verdict, at: Date()))
            recorded = "disagreement"
        } else {
            r.answers[l.cell] = verdict
            recorded = "first"
        }
        r.updatedAt = Date()
        do {
            try persist(r)
        } catch {
            _ = try? await registry.stop(entry.id)
            throw error
        }
        records[r.id] = r
        // The lease's server stops once the answer is in (the only suspension after the lease left).
        _ = try? await registry.stop(entry.id)
        return AnswerView(lease: id, cell: l.cell, recorded: recorded, verdict: verdict, queue: view(r))
    }

    // MARK: - Internals

    private func lease(_ id: String) throws(ControlError) -> Lease {
        if let l = leases[id] { return l }
        if answered.contains(id) {
            throw ControlError(
                409, field: "id", "the lease \(id) was answered already.", fix: "ask for the next cell: POST /leases.")
        }
        if gone.contains(id) {
            throw ControlError(
                410, field: "id", "the lease \(id) expired and its server is stopped; its cell went back to the queue.",
                fix: "ask for a new lease: POST /leases.")
        }
        throw .notFound(
            "id", "there is no lease \(id) (a restarted control API ends every lease).",
            fix: "ask for a new lease: POST /leases.")
    }

    private func record(_ id: String) throws(ControlError) -> Record {
        guard let r = records[id] else {
            throw .notFound(
                "id", "there is no queue \(id).", fix: "GET /queues lists the queues; POST /queues creates one.")
        }
        return r
    }

    /// Expires leases past their time (their cells go back to the queue) and ends expired leases one more
    /// `leaseSeconds` later (their servers stop).
    private func sweep() async {
        let now = Date()
        var stop: [String] = []
        for (id, l) in leases where !l.answering {
            let seconds = records[l.queue]?.leaseSeconds ?? 0
            if l.expiresAt.addingTimeInterval(seconds) <= now {
                leases[id] = nil
                gone.insert(id)
                if let e = l.entry { stop.append(e.id) }
            } else if !l.expired && l.expiresAt <= now {
                leases[id]?.expired = true
            }
        }
        for s in stop { _ = try? await registry.stop(s) }
    }

    private func key(_ c: Cell) -> String {
        BatchCell.id(scenario: c.scenario.id, profile: c.profile, engine: c.engine)
    }

    /// The cells of a queue in report order (scenario, engine, profile); `all: false` leaves out those not to hand
    /// out: profiles the client does not support, cells answered, cells unsupported.
    private func cells(_ r: Record, all: Bool) -> [Cell] {
        var out: [Cell] = []
        for id in r.scenarios {
            guard let s = catalogue[id] else { continue }
            for e in r.engines {
                for p in PinProfile.all {
                    let c = Cell(scenario: s, profile: p, engine: e, client: r.client, platform: r.platform)
                    if !all && (!r.profiles.contains(p) || r.answers[key(c)] != nil || r.unsupported[key(c)] != nil) {
                        continue
                    }
                    out.append(c)
                }
            }
        }
        return out
    }

    private func finished(_ r: Record) -> Bool { cells(r, all: false).isEmpty }

    private func file(_ id: String) -> URL { folder.appendingPathComponent("\(id).json") }

    /// Writes the queue's file (a temporary file renamed over it: a reader never sees half of one).
    private func persist(_ r: Record) throws(ControlError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Self.encoder().encode(r).write(to: file(r.id), options: .atomic)
        } catch {
            throw ControlError(
                500, field: nil, "the queue \(r.id) could not be written to \(folder.path): \(error)",
                fix: "free space or fix the folder's permissions; the answer was not recorded.")
        }
    }

    private func view(_ r: Record) -> QueueView {
        let open = cells(r, all: false)
        let active = leases.values.filter { $0.queue == r.id && !$0.expired }
        let openIDs = Set(open.map(key))
        let runnable = cells(r, all: true).filter { r.profiles.contains($0.profile) }.count
        return QueueView(
            id: r.id, client: r.client, platform: r.platform?.rawValue, scenarios: r.scenarios,
            profiles: r.profiles.map(\.rawValue), engines: r.engines, leaseSeconds: r.leaseSeconds,
            maxLeases: r.maxLeases,
            createdAt: r.createdAt, cells: runnable, answered: r.answers.count, unsupported: r.unsupported.count,
            leased: active.count, waiting: max(0, open.count - active.filter { openIDs.contains($0.cell) }.count),
            finished: open.isEmpty,
            leases: active.sorted { $0.id < $1.id }.map {
                QueueView.LeaseSummary(
                    lease: $0.id, cell: $0.cell, device: $0.device.name, os: $0.device.os, expiresAt: $0.expiresAt)
            },
            disagreements: r.disagreements.map {
                QueueView.DisagreementView(
                    cell: $0.cell, lease: $0.lease, first: $0.first.rawValue, firstDevice: $0.firstDevice?.name,
                    verdict: $0.verdict.status.rawValue, claim: $0.verdict.claim?.rawValue,
                    device: $0.verdict.device?.name, os: $0.verdict.device?.os, at: $0.at)
            },
            report: "/queues/\(r.id)/report")
    }
}

// MARK: - Views

/// A queue: its selection, how far it is, its leases and disagreements.
struct QueueView: Encodable, Sendable {
    struct LeaseSummary: Encodable, Sendable {
        var lease: String
        var cell: String
        var device: String
        var os: String
        var expiresAt: Date
    }
    struct DisagreementView: Encodable, Sendable {
        var cell: String
        var lease: String
        var first: String
        var firstDevice: String?
        var verdict: String
        var claim: String?
        var device: String?
        var os: String?
        var at: Date
    }
    var id: String
    var client: String
    var platform: String?
    var scenarios: [String]
    var profiles: [String]
    var engines: [String]
    var leaseSeconds: Double
    var maxLeases: Int
    var createdAt: Date
    /// Cells to answer (every selected cell but the skipped profiles).
    var cells: Int
    var answered: Int
    var unsupported: Int
    var leased: Int
    var waiting: Int
    var finished: Bool
    var leases: [LeaseSummary]
    var disagreements: [DisagreementView]
    var report: String
}

/// A cell on lease: the cell as a batch harness reads it (URL, trust file, pins), the server that serves it, and
/// where to renew and answer.
struct LeaseView: Encodable, Sendable {
    var lease: String
    var queue: String
    var client: String
    var platform: String?
    var device: String
    var os: String
    var cell: BatchCell
    /// What a correct client does: `accept` or `refuse`.
    var expect: String
    var server: ServerView
    var leaseSeconds: Double
    var expiresAt: Date
    var renew: String
    var answer: String
}

/// No cell to hand out now: every cell is answered (`finished`), or the rest are on lease to other devices.
struct LeaseWaitView: Encodable, Sendable {
    var queue: String
    var finished: Bool
    var waiting: Int
    var leased: Int
    var retryAfterSeconds: Int
}

struct AnswerView: Encodable, Sendable {
    var lease: String
    var cell: String
    /// `first` (the cell's answer) or `disagreement` (the cell was answered already; this one is recorded beside it).
    var recorded: String
    var verdict: Verdict
    var queue: QueueView
}

// MARK: - Routes

extension ControlAPI {
    var deviceQueueRoutes: [Route] {
        [
            Route(method: "GET", path: "/queues") { [self] _ in .json(["queues": await devices.all()]) },
            Route(method: "POST", path: "/queues") { [self] r throws(ControlError) in try await createQueue(r) },
            Route(method: "GET", path: "/queues/{id}") { [self] r throws(ControlError) in
                .json(try await devices.queue(r.parameter("id")))
            },
            Route(method: "DELETE", path: "/queues/{id}") { [self] r throws(ControlError) in
                .json(try await devices.delete(r.parameter("id")))
            },
            Route(method: "GET", path: "/queues/{id}/report") { [self] r throws(ControlError) in
                .json(try await devices.report(r.parameter("id")))
            },
            Route(method: "POST", path: "/leases") { [self] r throws(ControlError) in try await lease(r) },
            Route(method: "POST", path: "/leases/{id}/renew") { [self] r throws(ControlError) in
                try Self.emptyObject(r)
                return .json(try await devices.renew(r.parameter("id")))
            },
            Route(method: "POST", path: "/leases/{id}/answer") { [self] r throws(ControlError) in
                try await answerLease(r)
            },
        ]
    }

    func createQueue(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let body = try r.jsonObject(allowed: [
            "client", "platform", "scenarios", "profiles", "engines", "leaseSeconds", "maxLeases",
        ])
        let client = try Self.name(body, "client", required: true, example: "curl") ?? ""
        let platform = try Self.platform(body)
        let oneConnection = catalogue.scenarios.filter { !$0.isMultiStep }
        var scenarios = oneConnection
        if let ids = try ControlRequest.strings(
            body, "scenarios", maxCount: catalogue.scenarios.count, example: "[\"baseline\", \"rekey\"]")
        {
            scenarios = []
            for id in try Self.unique(ids, field: "scenarios") {
                let s = try scenario(id, field: "scenarios")
                guard !s.isMultiStep else {
                    throw ControlError(
                        422, field: "scenarios",
                        "'\(id)' is several connections that share the client's TLS session cache; the device queue hands out cells of one connection.",
                        fix: "run it with POST /batch or pinlab check --batch --batch-steps; leave it out here.")
                }
                scenarios.append(s)
            }
        }
        let profiles = try Self.selection(
            body, "profiles", of: PinProfile.all, named: \.rawValue,
            example: "[\"leaf-spki\", \"root-spki\"]"
        ) { name, known in
            .badRequest("profiles", "'\(name)' is not a pin profile.", fix: "use any of: \(known).")
        }
        let engines = try Self.selection(
            body, "engines", of: Engines.all, default: Engines.builtIn, named: \.name, example: "[\"openssl\"]"
        ) { name, known in
            .notFound("engines", "there is no engine named '\(name)'.", fix: "use any of: \(known).")
        }
        struct Numbers: Decodable {
            var leaseSeconds: Double?
            var maxLeases: Int?
        }
        let numbers = try? JSONDecoder().decode(Numbers.self, from: r.body)
        var leaseSeconds = 60.0
        if body["leaseSeconds"] != nil {
            guard let t = numbers?.leaseSeconds, t >= 1, t <= DeviceQueues.maxLeaseSeconds else {
                throw .badRequest(
                    "leaseSeconds",
                    "'leaseSeconds' must be a number of seconds from 1 to \(Int(DeviceQueues.maxLeaseSeconds)).",
                    fix: "e.g. \"leaseSeconds\": 60 (the default).")
            }
            leaseSeconds = t
        }
        var maxLeases = 16
        if body["maxLeases"] != nil {
            guard let n = numbers?.maxLeases, (1...DeviceQueues.maxOutstandingLeases).contains(n) else {
                throw .badRequest(
                    "maxLeases", "'maxLeases' must be a whole number from 1 to \(DeviceQueues.maxOutstandingLeases).",
                    fix: "e.g. \"maxLeases\": 16 (the default).")
            }
            maxLeases = n
        }
        let now = Date()
        let record = DeviceQueues.Record(
            id: "", client: client, platform: platform, scenarios: scenarios.map(\.id),
            profiles: PinProfile.all.filter(profiles.contains),
            engines: engines.map(\.name), leaseSeconds: leaseSeconds, maxLeases: maxLeases, createdAt: now,
            updatedAt: now)
        let v = try await devices.create(record)
        var reply = ControlReply.json(v, status: 201)
        reply.headers["Location"] = "/queues/\(v.id)"
        return reply
    }

    func lease(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let body = try r.jsonObject(allowed: ["client", "platform", "device", "os", "queue"])
        let client = try Self.name(body, "client", required: true, example: "curl") ?? ""
        let platform = try Self.platform(body)
        let device = try Self.name(body, "device", required: true, example: "pixel-8-17") ?? ""
        let os = try Self.name(body, "os", required: true, example: "Android 15") ?? ""
        let queue = try Self.name(body, "queue", required: false, example: "queue-1a2b3c4d")
        switch try await devices.lease(
            client: client, platform: platform, queueID: queue, device: Verdict.Device(name: device, os: os))
        {
        case .lease(let v):
            var reply = ControlReply.json(v, status: 201)
            reply.headers["Location"] = "/leases/\(v.lease)"
            return reply
        case .wait(let w):
            var reply = ControlReply.json(w)
            if w.retryAfterSeconds > 0 { reply.headers["Retry-After"] = "\(w.retryAfterSeconds)" }
            return reply
        }
    }

    func answerLease(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let body = try r.jsonObject(allowed: ["claim", "category", "detail", "milliseconds"])
        let claimText = try ControlRequest.string(body, "claim", required: true, example: "refused") ?? ""
        guard let claim = ClientOutcome.Claim(rawValue: claimText) else {
            throw .badRequest(
                "claim", "'claim' must be \"accepted\" or \"refused\".", fix: "e.g. \"claim\": \"refused\".")
        }
        let category = try ControlRequest.string(body, "category", required: false, example: "pin-mismatch")
        if let category, category.count > Self.maxDeviceText {
            throw .badRequest(
                "category", "'category' is longer than \(Self.maxDeviceText) characters.",
                fix: "e.g. \"category\": \"pin-mismatch\".")
        }
        var detail = ""
        if body["detail"] != nil {
            guard let d = body["detail"] as? String, d.count <= 4096 else {
                throw .badRequest(
                    "detail", "'detail' must be a string of at most 4096 characters.",
                    fix: "e.g. \"detail\": \"curl: (90) SSL: public key does not match pinned public key\".")
            }
            detail = d
        }
        var milliseconds = 0.0
        if body["milliseconds"] != nil {
            struct Field: Decodable { var milliseconds: Double }
            guard let ms = try? JSONDecoder().decode(Field.self, from: r.body).milliseconds, ms >= 0, ms <= 86_400_000
            else {
                throw .badRequest(
                    "milliseconds", "'milliseconds' must be a number from 0 to 86400000.",
                    fix: "e.g. \"milliseconds\": 120.")
            }
            milliseconds = ms
        }
        let outcome = ClientOutcome(
            claim: claim, category: category.map(RefusalCategory.init(rawValue:)), detail: detail)
        return .json(try await devices.answer(r.parameter("id"), outcome: outcome, milliseconds: milliseconds))
    }

    static let maxDeviceText = 200

    /// A short name field (client, device, os, queue): a non-empty string of at most 200 characters.
    static func name(_ body: [String: any Sendable], _ key: String, required: Bool, example: String)
        throws(ControlError) -> String?
    {
        guard let s = try ControlRequest.string(body, key, required: required, example: example) else { return nil }
        guard s.count <= maxDeviceText, !s.contains(where: { $0.isNewline }) else {
            throw .badRequest(
                key, "'\(key)' must be one line of at most \(maxDeviceText) characters.",
                fix: "e.g. \"\(key)\": \"\(example)\".")
        }
        return s
    }

    static func platform(_ body: [String: any Sendable]) throws(ControlError) -> PlatformPolicy? {
        guard let name = try ControlRequest.string(body, "platform", required: false, example: "android") else {
            return nil
        }
        guard let p = PlatformPolicy.named(name) else {
            throw .badRequest(
                "platform", "'\(name)' is not a platform policy.",
                fix: "use one of: \(PlatformPolicy.names.joined(separator: ", ")), or leave it out.")
        }
        return p
    }

    /// A body that is empty or `{}`.
    static func emptyObject(_ r: ControlRequest) throws(ControlError) {
        guard !r.body.isEmpty else { return }
        guard let object = (try? JSONSerialization.jsonObject(with: r.body)) as? [String: Any] else {
            throw .badRequest("body", "the body is not a JSON object.", fix: "send no body, or {}.")
        }
        if let k = object.keys.sorted().first {
            throw .badRequest(k, "'\(k)' is not a field of this request.", fix: "send no body, or {}.")
        }
    }
}
