public import Foundation
public import PinningLabCore
public import PinningLabModel
public import PinningLabPKI
import PinningLabGnuTLS
import PinningLabOpenSSL

/// The client a check runs through the catalogue.
public enum ClientUnderTest: Sendable {
    /// An in-process client (a reference client, or your own `PinningClient`).
    case inProcess(any PinningClient)
    /// A command template run as a child process per cell.
    case command(CommandClient)

    public var name: String {
        switch self {
        case .inProcess(let c): return c.name
        case .command(let c): return c.name
        }
    }

    public var supportedProfiles: Set<PinProfile>? {
        switch self {
        case .inProcess(let c): return c.supportedProfiles
        case .command(let c): return c.supportedProfiles
        }
    }

    /// The platform the client declares (in-process clients only; a command's platform is `CheckOptions.platform`).
    public var platform: PlatformPolicy? {
        switch self {
        case .inProcess(let c): return c.platform
        case .command: return nil
        }
    }
}

/// The engines a check can use, by name.
public enum Engines {
    public static let openssl: any TLSEngine = OpenSSLEngine()
    public static let gnutls: any TLSEngine = GnuTLSEngine()
    /// Both engines, OpenSSL first.
    public static let all: [any TLSEngine] = [openssl, gnutls]
    public static var names: [String] { all.map(\.name) }

    /// The engine with this name (`openssl`, `gnutls`), if there is one.
    public static func engine(named name: String) -> (any TLSEngine)? {
        all.first { $0.name == name.lowercased() }
    }

    /// An engine's name, or `both` (`all`) for every engine.
    public static func named(_ name: String) throws -> [any TLSEngine] {
        if ["both", "all"].contains(name.lowercased()) { return all }
        guard let engine = engine(named: name) else {
            throw CheckSetupError(.runOption, problem: "'\(name)' is not an engine.",
                                  fix: "use \(names.joined(separator: ", ")) or both.")
        }
        return [engine]
    }
}

/// A command template or a run option (an engine name, a shard) that cannot be used, with how to fix it.
public struct CheckSetupError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What is at fault: the client's command template, or an option of the run whatever the client.
    public enum Source: String, Sendable {
        case commandTemplate = "command template"
        case runOption = "run option"
    }
    public var source: Source
    public var problem: String
    public var fix: String
    public init(_ source: Source, problem: String, fix: String) {
        self.source = source
        self.problem = problem
        self.fix = fix
    }
    public var description: String { "\(source.rawValue): \(problem) Fix: \(fix)" }
    public var errorDescription: String? { description }
}

/// How a check runs.
public struct CheckOptions: Sendable {
    public var engines: [any TLSEngine]
    /// The profiles the client declares it supports; `nil` keeps what the client itself declares (or all).
    /// Cells outside are skipped, not failed.
    public var profiles: Set<PinProfile>?
    /// Scenario ids to run; empty runs the whole catalogue.
    public var scenarios: [String]
    /// How many cells run at the same time; each server (scenario × engine) serves one cell at a time.
    public var jobs: Int
    /// How long one client run may take.
    public var timeout: Duration
    /// Where trust files and client certificate files are written; a fresh temporary folder when `nil`.
    public var workDirectory: URL?
    /// Run only this part of the cells (`--shard K/N`); the report holds only its cells.
    public var shard: CellShard?
    /// Called after each judged cell (from any task; keep it short).
    public var progress: (@Sendable (CheckProgress) -> Void)?
    /// The platform TLS policy the client follows (`--platform`); `nil` keeps what the client declares
    /// (``PinningClient/platform``), and with neither the catalogue's `expect` judges every cell.
    public var platform: PlatformPolicy?

    public init(
        engines: [any TLSEngine] = Engines.all, profiles: Set<PinProfile>? = nil, scenarios: [String] = [],
        jobs: Int = CheckOptions.defaultJobs, timeout: Duration = .seconds(10), workDirectory: URL? = nil,
        shard: CellShard? = nil, progress: (@Sendable (CheckProgress) -> Void)? = nil, platform: PlatformPolicy? = nil
    ) {
        self.platform = platform
        self.shard = shard
        self.progress = progress
        self.engines = engines
        self.profiles = profiles
        self.scenarios = scenarios
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.workDirectory = workDirectory
    }

    /// Four servers per core, at least four.
    public static var defaultJobs: Int { max(4, ProcessInfo.processInfo.activeProcessorCount * 4) }
}

/// Runs clients through the catalogue on real servers and judges every cell.
///
/// One server per (scenario, engine) serves all profiles of that scenario, one cell after the other, so each
/// observation belongs to exactly one cell; cells of different servers run concurrently (`CheckOptions.jobs`).
public struct CheckRunner: Sendable {
    public let pki: LabPKI
    public let catalogue: Catalogue

    public init(pki: LabPKI, catalogue: Catalogue) {
        self.pki = pki
        self.catalogue = catalogue
    }

    /// The bundled catalogue on the default lab PKI.
    public static func lab() throws -> CheckRunner {
        CheckRunner(pki: try Lab.pki(), catalogue: try Catalogue.bundled())
    }

    /// The server configuration of a scenario: its exact chain, key, versions, ciphers and client authentication.
    public func serverConfiguration(for s: Scenario) throws -> ServerTLSConfiguration {
        try serverConfiguration(for: s, party: s.server, name: s.id)
    }

    /// The configuration of one party of a scenario (`genuine` is `s.server`); `chain` replaces its chain (a
    /// rotation), `ticketKeys` holds the cell's keys by name.
    func serverConfiguration(
        for s: Scenario, party server: Scenario.Server, name: String, chain names: [String]? = nil,
        ticketKeys: [String: SessionTicketKey]
    ) throws -> ServerTLSConfiguration {
        var c = try serverConfiguration(for: s, party: server, name: name, chain: names)
        c.resumption.ticketKey = server.ticketKey.flatMap { ticketKeys[$0] }
        return c
    }

    private func serverConfiguration(
        for s: Scenario, party server: Scenario.Server, name: String, chain names: [String]? = nil
    ) throws -> ServerTLSConfiguration {
        let chain = try (names ?? server.chain).map { try pki.identity($0) }
        var identity = ServerIdentity(chain[0], chain: chain.map(\.certificateDER), serverNames: [])
        identity.name = name
        var c = ServerTLSConfiguration(identities: [identity])
        c.resumption = SessionResumption(server.resumption)
        let versions = server.tlsVersions
        c.minimumVersion = versions.min() ?? .tls12
        c.maximumVersion = versions.max() ?? .tls13
        // Every IANA name maps on both engines, or this throws: a restriction never silently disappears.
        c.ciphers = try CipherPreferences(ianaSuites: server.cipherSuites)
        c.clientAuthentication = server.clientAuth
        c.clientTrustRootsDER = try server.clientAuthTrust.map { try pki.identity($0).certificateDER }
        return c
    }

    /// Runs `client` through the selected scenarios, profiles and engines.
    public func run(_ client: ClientUnderTest, options: CheckOptions = CheckOptions()) async throws -> CheckReport {
        let start = try RunStart(self, options)
        defer { start.cleanUp() }
        let (started, clock, selected, files) = (start.date, start.clock, start.selected, start.files)
        let supported = options.profiles ?? client.supportedProfiles
        let platform = options.platform ?? client.platform

        var jobs: [CellScheduler.Job] = []
        for sc in selected.scenarios {
            for e in options.engines {
                let inShard = PinProfile.all.filter { options.shard?.contains(scenario: sc.id, profile: $0, engine: e.name) ?? true }
                let runnable = inShard.filter { supported?.contains($0) ?? true }
                jobs.append(CellScheduler.Job(scenario: sc, engine: e, profiles: runnable, inShard: inShard, platform: platform))
            }
        }
        let scheduler = CellScheduler(jobs, progress: options.progress)
        let workers = min(options.jobs, max(1, jobs.reduce(0) { $0 + $1.profiles.count }))
        // Servers whose cells are done stop beside the next cells (stopping joins their threads); the run returns
        // only when every one has stopped, so no server outlives it (a process exiting meanwhile corrupted the heap).
        let stopping = Locked<[Task<Void, Never>]>([])
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        while let a = await scheduler.take() {
                            try await self.work(a, scheduler: scheduler, client: client, timeout: options.timeout,
                                                files: files, stopping: stopping)
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            for t in stopping.withLock({ $0 }) { await t.value }
            throw error
        }
        for t in stopping.withLock({ $0 }) { await t.value }
        let verdicts = await scheduler.verdicts(client: client.name, supported: supported)
        let d = ContinuousClock.now - clock
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        var report = CheckReport(
            client: client.name, engines: options.engines.map(\.name), profiles: PinProfile.all, startedAt: started,
            durationSeconds: seconds, verdicts: verdicts,
            scenarios: selected.scenarios.map { ScenarioSheet(scenario: $0, pki: pki) })
        report.platform = platform
        return report
    }

    /// Runs one assignment: starts the job's server first if needed, then one cell.
    func work(
        _ a: CellScheduler.Assignment, scheduler: CellScheduler, client: ClientUnderTest, timeout: Duration,
        files: CellFiles, stopping: Locked<[Task<Void, Never>]>
    ) async throws {
        let job = a.job
        let s = job.scenario
        if s.isMultiStep {
            let v = await runSteps(of: s, profile: a.profile, engine: job.engine, client: client, timeout: timeout, files: files)
            _ = await scheduler.finish(a.index, a.profile, v, server: nil)
            return
        }
        var server = a.server
        if server == nil {
            do {
                server = try await FixtureServer.start(
                    engine: job.engine, configuration: try serverConfiguration(for: s),
                    options: .init(handshakeTimeout: timeout, idleTimeout: timeout, workerThreads: 1), label: s.id)
            } catch let e as TLSEngineError where e.code == .unsupported {
                await scheduler.abandon(a.index, status: .unsupported,
                                        reason: "\(job.engine.name) cannot serve this scenario: \(e.reason)")
                return
            } catch {
                await scheduler.abandon(a.index, status: .error,
                                        reason: "the \(job.engine.name) server could not start: \(error)")
                return
            }
        }
        guard let server else { return }
        let p = a.profile
        let before = server.connectionsAccepted
        let outcome: ClientOutcome
        let ms: Double
        do {
            try await files.prepareCredentials(for: s)
            switch client {
            case .inProcess(let c):
                let target = try files.target(for: s, profile: p, port: server.port, timeout: timeout)
                let t0 = ContinuousClock.now
                // The client gets its timeout and 5 s more; one that ignores cancellation no longer holds the run.
                guard let o = await raceAgainstDeadline(timeout + .seconds(5), { await c.run(target) }) else {
                    let v = Verdict.notRun(
                        scenario: s.id, profile: p, engine: job.engine.name, client: client.name, expected: s.expected(p, platform: job.platform),
                        status: .error,
                        reason: "the client did not finish: it had not returned \(Int(milliseconds(timeout) / 1000) + 5) s after the cell started (it ignores its timeout and cancellation)")
                    if let done = await scheduler.finish(a.index, p, v, server: server) { await done.stop() }
                    return
                }
                outcome = o
                ms = milliseconds(ContinuousClock.now - t0)
            case .command(let c):
                let ctx = try files.context(for: s, profile: p, port: server.port)
                (outcome, ms) = await c.run(ctx, scratch: files.directory)
            }
        } catch {
            let v = Verdict.notRun(scenario: s.id, profile: p, engine: job.engine.name, client: client.name,
                                   expected: s.expected(p, platform: job.platform), status: .error, reason: "cannot prepare the cell: \(error)")
            if let done = await scheduler.finish(a.index, p, v, server: server) { await done.stop() }
            return
        }
        let observations = (await server.settle(timeout: .seconds(5)) ?? server.observations()).filter { $0.id > before }
        let v = Verdict.judge(
            scenario: s.id, profile: p, engine: job.engine.name, client: client.name,
            expected: s.expected(p, platform: job.platform), evidence: ServerEvidence(observations), outcome: outcome,
            clientAuth: s.server.clientAuth, expectedCategory: s.refusal, clientMilliseconds: ms,
            rule: s.rule(p, platform: job.platform))
        if let done = await scheduler.finish(a.index, p, v, server: server) {
            // Stopping joins the server's threads (on a thread of its own): the next cell starts at once, and
            // run() awaits the stop before it returns.
            let stop = Task { await done.stop() }
            stopping.withLock { $0.append(stop) }
        }
    }
}

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
        guard case .inProcess(let c) = client, c.keepsSessionsAcrossSteps else {
            return notRun(
                .unsupported,
                "this scenario is \(s.steps.count) connections that share the client's TLS session cache; the client cannot keep state across connections (a command runs one process per connection), so it is not judged here")
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
            for (i, step) in s.steps.enumerated() {
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

/// Hands out cells to workers so that every worker stays busy until the last cell, while each server (one per
/// scenario and engine) serves one cell at a time — so each observation belongs to exactly one cell. Workers
/// prefer cells of servers already running; a new server is started only when none is idle.
actor CellScheduler {
    struct Job: Sendable {
        var scenario: Scenario
        var engine: any TLSEngine
        /// The profiles to run (the client's supported ones).
        var profiles: [PinProfile]
        /// The profiles of this run's shard (all without `--shard`): the report lists only these.
        var inShard: [PinProfile] = PinProfile.all
        /// The platform policy the cells are judged by.
        var platform: PlatformPolicy?
    }
    struct Assignment: Sendable {
        var index: Int
        var job: Job
        var profile: PinProfile
        /// The job's running server; `nil` when the worker must start it.
        var server: FixtureServer?
    }
    private struct State {
        var remaining: [PinProfile]
        var busy = false
        var started = false
        var server: FixtureServer?
        var verdicts: [PinProfile: Verdict] = [:]
        var abandoned: (Verdict.Status, String)?
    }
    private let jobs: [Job]
    private var states: [State]
    private var nextUnstarted = 0

    private let progress: (@Sendable (CheckProgress) -> Void)?
    private let total: Int
    private var done = 0
    private var deviations = 0
    private let clock = ContinuousClock.now

    init(_ jobs: [Job], progress: (@Sendable (CheckProgress) -> Void)? = nil) {
        self.jobs = jobs
        self.states = jobs.map { State(remaining: $0.profiles) }
        self.progress = progress
        self.total = jobs.reduce(0) { $0 + $1.profiles.count }
    }

    private func report(_ cells: Int, deviating: Int) {
        done += cells
        deviations += deviating
        progress?(CheckProgress(done: done, total: total, deviations: deviations,
                                elapsedSeconds: seconds(ContinuousClock.now - clock)))
    }

    func take() -> Assignment? {
        if let i = states.indices.first(where: { states[$0].started && !states[$0].busy && !states[$0].remaining.isEmpty }) {
            return assign(i)
        }
        while nextUnstarted < states.count {
            let i = nextUnstarted
            nextUnstarted += 1
            if !states[i].remaining.isEmpty {
                states[i].started = true
                return assign(i)
            }
        }
        return nil
    }

    private func assign(_ i: Int) -> Assignment {
        states[i].busy = true
        let p = states[i].remaining.removeFirst()
        return Assignment(index: i, job: jobs[i], profile: p, server: states[i].server)
    }

    /// Records a verdict; returns the server when the job has no cell left (the caller stops it).
    func finish(_ i: Int, _ p: PinProfile, _ v: Verdict, server: FixtureServer?) -> FixtureServer? {
        states[i].verdicts[p] = v
        states[i].server = server
        report(1, deviating: v.status.isDeviation ? 1 : 0)
        states[i].busy = false
        if states[i].remaining.isEmpty {
            states[i].server = nil
            return server
        }
        return nil
    }

    /// The job's server could not start: every cell of it is not run.
    func abandon(_ i: Int, status: Verdict.Status, reason: String) {
        states[i].abandoned = (status, reason)
        let left = states[i].remaining.count + 1
        report(left, deviating: status.isDeviation ? left : 0)
        states[i].remaining = []
        states[i].busy = false
    }

    /// Every cell in catalogue order (scenario, engine, profile), including skipped and not-run ones.
    func verdicts(client: String, supported: Set<PinProfile>?) -> [Verdict] {
        var out: [Verdict] = []
        for (job, st) in zip(jobs, states) {
            let s = job.scenario
            for p in job.inShard {
                if let v = st.verdicts[p] {
                    out.append(v)
                } else if !(supported?.contains(p) ?? true) {
                    out.append(.notRun(scenario: s.id, profile: p, engine: job.engine.name, client: client,
                                       expected: s.expected(p, platform: job.platform), status: .skipped,
                                       reason: "the client does not support the profile \(p)"))
                } else {
                    let (status, reason) = st.abandoned ?? (.error, "the cell was not run")
                    out.append(.notRun(scenario: s.id, profile: p, engine: job.engine.name, client: client,
                                       expected: s.expected(p, platform: job.platform), status: status, reason: reason))
                }
            }
        }
        return out
    }
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

/// A run's scratch folder (`$TMPDIR/pinlab-check-…`), registered so that SIGINT and SIGTERM remove it too.
func makeTemporaryDirectory() throws -> URL { try ScratchFolders.make("pinlab-check") }

extension ServerEvidence {
    /// The evidence of the connections one client made: accepted if any of them carried application data.
    public init(_ observations: [Observation]) {
        guard !observations.isEmpty else {
            self = .noConnection
            return
        }
        let o = observations.first { $0.applicationDataReceived } ?? observations.last!
        // close_notify is an orderly end, not a refusal; the level is not part of the evidence.
        func alert(_ a: TLSAlert?) -> TLSAlert? { a.flatMap { $0.isCloseNotify ? nil : TLSAlert(code: $0.code) } }
        self.init(
            connected: true, handshakeCompleted: o.handshakeCompleted,
            applicationDataReceived: o.applicationDataReceived, requestLine: o.requestLine,
            alertReceived: alert(o.alertReceived), alertSent: alert(o.alertSent), serverError: o.error,
            negotiatedVersion: o.tlsVersion?.rawValue, cipherSuite: o.cipherSuite, sni: o.serverName,
            clientCertificateSubject: o.clientCertificateSubject, handshakeMilliseconds: o.handshakeMilliseconds,
            resumption: o.resumption)
    }
}

/// Files and values shared by the cells of one run: trust stores per trust profile, client certificate files.
///
/// The folder may be shared by several runs and PKIs (`TestingLab.work`, a caller's `workDirectory`), and a file is
/// trusted once written: so each file's name carries a short hash of what it holds (`trust-lab-root-1a2b….pem`), and
/// different contents — another PKI, another seed, re-issued certificates — never reuse a stale file.
struct CellFiles: Sendable {
    let pki: LabPKI
    let directory: URL
    /// Client credentials per identity and certificate, made once per run: making the PKCS#12 file takes the PKI
    /// folder's lock, which no mutual-TLS cell should wait for again.
    private let credentialMemo = CredentialMemo()

    init(pki: LabPKI, directory: URL) throws {
        self.pki = pki
        self.directory = directory
    }

    func pem(_ ders: [[UInt8]]) -> String { PEM.encode(ders) }

    /// Writes `contents` once as `STEM-HASH.EXT`, HASH from the contents (atomically, so concurrent writers of the
    /// same content are harmless), and returns its path.
    func file(_ stem: String, _ ext: String, _ contents: String, mode: Int = 0o644) throws -> String {
        let url = directory.appendingPathComponent("\(stem)-\(LabPKI.contentTag(Array(contents.utf8))).\(ext)")
        if !FileManager.default.fileExists(atPath: url.path) { try Storage.writePrivately(contents, to: url, mode: mode) }
        return url.path
    }

    func trustFile(_ s: Scenario) throws -> (path: String, roots: [[UInt8]]) {
        let roots = try s.trustRoots(in: pki).map(\.certificateDER)
        return (try file("trust-\(s.client.trust.rawValue)", "pem", pem(roots)), roots)
    }

    /// The client credentials of the scenario (`nil` when it presents none); made now if ``prepareCredentials(for:)``
    /// did not make them.
    func credentials(_ s: Scenario) throws -> ClientCredentials? {
        guard let id = try s.clientIdentity(in: pki) else { return nil }
        return try credentialMemo.value(for: memoKey(id)) { try makeCredentials(id) }
    }

    /// Makes the scenario's client credentials (files, PKCS#12 under the PKI folder's lock) on a thread of their
    /// own, never on Swift's cooperative pool; later ``credentials(_:)`` calls take them from the memo.
    func prepareCredentials(for s: Scenario) async throws {
        guard let id = try s.clientIdentity(in: pki) else { return }
        let key = memoKey(id)
        if credentialMemo.cached(key) != nil { return }
        let made = await onDedicatedThread(named: "pinlab.creds") { [self] in
            Result { try credentialMemo.value(for: key) { try makeCredentials(id) } }
        }
        _ = try made.get()
    }

    private func memoKey(_ id: Identity) -> String { "\(id.name) \(LabPKI.contentTag(id.certificateDER))" }

    private func makeCredentials(_ id: Identity) throws -> ClientCredentials {
        let chain = [id.certificateDER] + id.issuerChainDER
        let certFile = try file("client-\(id.name)", "pem", pem(chain))
        let keyFile = try file("client-\(id.name)", "key", PEM.encode(id.privateKeyPKCS8DER, label: "PRIVATE KEY"), mode: 0o600)
        var p12: URL? = nil
        if pki.makesPKCS12 {
            do {
                p12 = try pki.pkcs12File(for: id.name)
            } catch let e as PKIError {
                throw PKIError(e.code, "cannot make the PKCS#12 file of the client identity '\(id.name)': \(e.reason)",
                               file: e.file, entity: id.name, fix: e.fix ?? "run `pinlab pki init` to check and repair the PKI folder")
            }
        }
        return ClientCredentials(
            certificateChainDER: chain, privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateFile: certFile,
            keyFile: keyFile, pkcs12File: p12?.path, pkcs12Password: p12 == nil ? nil : pki.pkcs12Password)
    }

    func target(for s: Scenario, profile: PinProfile, port: Int, timeout: Duration) throws -> ClientTarget {
        let trust = try trustFile(s)
        return ClientTarget(
            host: s.client.host, ip: "127.0.0.1", port: port, trustRootsDER: trust.roots, trustFile: trust.path,
            pins: try s.pinSet(for: profile, in: pki), clientCredentials: try credentials(s), scenario: s.id,
            profile: profile, timeout: timeout, pinScope: s.client.pinScope)
    }

    func context(for s: Scenario, profile: PinProfile, port: Int) throws -> CellContext {
        let trust = try trustFile(s)
        let creds = try credentials(s)
        return CellContext(
            scenario: s.id, profile: profile, host: s.client.host, ip: "127.0.0.1", port: port, caFile: trust.path,
            pins: try s.pinSet(for: profile, in: pki).hashes,
            certificatePins: try s.pinnedIdentities(for: profile, in: pki).map(\.pins.certificateSHA256),
            clientCertificateFile: creds?.certificateFile, clientKeyFile: creds?.keyFile,
            clientPKCS12File: creds?.pkcs12File, clientPKCS12Password: creds?.pkcs12Password,
            pinScope: s.client.pinScope)
    }
}

/// Client credentials made once per key. The lock guards the dictionary only: the making runs outside it (two
/// callers racing for the same key both make it, harmlessly: the files are written atomically and the PKCS#12 file
/// under the PKI folder's lock), so no caller ever waits on a lock for another one's file work.
final class CredentialMemo: Sendable {
    private let values = Locked<[String: ClientCredentials]>([:])

    func cached(_ key: String) -> ClientCredentials? { values.withLock { $0[key] } }

    func value(for key: String, make: () throws -> ClientCredentials) throws -> ClientCredentials {
        if let v = cached(key) { return v }
        let v = try make()
        return values.withLock { all in
            if let first = all[key] { return first }
            all[key] = v
            return v
        }
    }
}

