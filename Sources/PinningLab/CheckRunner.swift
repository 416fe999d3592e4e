import Foundation
import PinningLabBase
public import PinningLabCore
public import PinningLabModel
public import PinningLabPKI
import PinningLabReferenceClients
import PinningLabTLSTypes

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

    /// The server configuration of a scenario: its exact chain (and the alternatives its host holds), key, versions,
    /// groups, ciphers and client authentication. Throws `TLSEngineError` `.unsupported` when a chain names an
    /// identity of the opt-in post-quantum part of the lab PKI and this PKI was made without it.
    public func serverConfiguration(for s: Scenario) throws -> ServerTLSConfiguration {
        try serverConfiguration(for: s, party: s.server)
    }

    /// The configuration of one party of a scenario (`genuine` is `s.server`); `chain` replaces its chain (a
    /// rotation), `ticketKeys` holds the cell's keys by name.
    func serverConfiguration(
        for s: Scenario, party server: Scenario.Server, name: String, chain names: [String]? = nil,
        ticketKeys: [String: SessionTicketKey]
    ) throws -> ServerTLSConfiguration {
        var c = try serverConfiguration(for: s, party: server, chain: names)
        c.resumption.ticketKey = server.ticketKey.flatMap { ticketKeys[$0] }
        return c
    }

    private func serverConfiguration(
        for s: Scenario, party server: Scenario.Server, chain names: [String]? = nil
    ) throws -> ServerTLSConfiguration {
        // Each identity is named by its certificate's identity, so an observation says which chain was served.
        let chains = try ([names ?? server.chain] + server.alternatives).map { try $0.map(identity) }
        let chain = chains[0]
        var c = ServerTLSConfiguration(
            identities: chains.map { ServerIdentity($0[0], chain: $0.map(\.certificateDER), serverNames: []) })
        c.choosesBySignatureAlgorithms = !server.alternatives.isEmpty
        if !server.groups.isEmpty {
            c.groups = server.groups.map { name in
                TLSCodePoint(value: TLSCodePoint.groupNames.first { $0.value == name }?.key ?? 0, name: name)
            }
        }
        c.encryptedClientHello = server.ech
        c.resumption = SessionResumption(server.resumption, maxEarlyData: server.earlyData ? 16384 : 0)
        let versions = server.tlsVersions
        c.minimumVersion = versions.min() ?? .tls12
        c.maximumVersion = versions.max() ?? .tls13
        // Every IANA name maps on both engines, or this throws: a restriction never silently disappears.
        c.ciphers = try CipherPreferences(ianaSuites: server.cipherSuites)
        c.clientAuthentication = server.clientAuth
        c.alpnProtocols = server.alpn
        c.clientTrustRootsDER = try server.clientAuthTrust.map { try pki.identity($0).certificateDER }
        // Built now, so thisUpdate/nextUpdate are always fresh for the cell.
        c.ocspStaple = try server.ocspStaple.map { try pki.ocspResponse(for: chain[0].name, options: $0.options) }
        // SCTs in the staple travel there only, not in the TLS extension as well.
        if server.ocspStaple?.options.includesSCTs == true {
            c.identities[0].signedCertificateTimestampList = nil
        }
        return c
    }

    /// An identity of the PKI; one of the post-quantum part that this PKI lacks makes the cell `unsupported`.
    private func identity(_ name: String) throws -> Identity {
        do {
            return try pki.identity(name)
        } catch {
            guard IdentityDirectory.postQuantumOnly[name] != nil else { throw error }
            throw TLSEngineError(
                .unsupported,
                "'\(name)' is an ML-DSA identity of the opt-in post-quantum part of the lab PKI, which this PKI was made without (pinlab pki init --post-quantum adds it)"
            )
        }
    }

    /// Runs `client` through the selected scenarios, profiles and engines.
    public func run(_ client: ClientUnderTest, options: CheckOptions = CheckOptions()) async throws -> CheckReport {
        let start = try RunStart(self, options)
        defer { start.cleanUp() }
        let (started, clock, selected) = (start.date, start.clock, start.selected)
        var filesOfRun = start.files
        // The reference clients read certificates and keys as bytes: their runs write no trust store or key file.
        if case .inProcess(let c) = client, c is ReferenceClient { filesOfRun.writesFiles = false }
        let files = filesOfRun
        let supported = options.profiles ?? client.supportedProfiles
        let platform = options.platform ?? client.platform
        let checks = options.clientChecks ?? client.checks

        let plan = options.shard.map {
            ShardPlan(
                shard: $0, scenarios: selected.scenarios, engines: options.engines.map(\.name),
                runs: { supported?.contains($0) ?? true }, weights: options.shardWeights)
        }
        var jobs: [CellScheduler.Job] = []
        for sc in selected.scenarios {
            for e in options.engines {
                let inShard = PinProfile.all.filter {
                    plan?.contains(BatchCell.id(scenario: sc.id, profile: $0, engine: e.name)) ?? true
                }
                let runnable = inShard.filter { supported?.contains($0) ?? true }
                jobs.append(
                    CellScheduler.Job(
                        scenario: sc, engine: e, profiles: runnable, inShard: inShard, platform: platform,
                        checks: checks))
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
                            try await self.work(
                                a, scheduler: scheduler, client: client, timeout: options.timeout,
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
        report.clientChecks = checks.isUndeclared ? nil : checks
        report.shard = options.shard
        report.shardCut = plan?.cut
        return report
    }

    /// Runs one assignment: starts the job's server first if needed, then one cell.
    func work(
        _ a: CellScheduler.Assignment, scheduler: CellScheduler, client: ClientUnderTest, timeout: Duration,
        files: CellFiles, stopping: Locked<[Task<Void, Never>]>
    ) async throws {
        let job = a.job
        let cell = Cell(
            scenario: job.scenario, profile: a.profile, engine: job.engine.name, client: client.name,
            platform: job.platform, checks: job.checks)
        let run = CellClient.of(client, timeout: timeout)
        if cell.isMultiStep {
            let v = await runSteps(cell, engine: job.engine, client: run, timeout: timeout, files: files)
            _ = await scheduler.finish(a.index, a.profile, v, server: nil)
            return
        }
        var server = a.server
        if server == nil {
            switch await startCellServer(cell.scenario, engine: job.engine, timeout: timeout) {
            case .started(let s): server = s
            case .notStarted(let status, let reason):
                await scheduler.abandon(a.index, status: status, reason: reason)
                return
            }
        }
        guard let server else { return }
        let v = await runConnection(cell, on: server, client: run, timeout: timeout, files: files)
        if let done = await scheduler.finish(a.index, a.profile, v, server: server) {
            // Stopping joins the server's threads (on a thread of its own): the next cell starts at once, and
            // run() awaits the stop before it returns.
            let stop = Task { await done.stop() }
            stopping.withLock { $0.append(stop) }
        }
    }
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

/// A run's scratch folder (`$TMPDIR/pinlab-check-…`), registered so that SIGINT and SIGTERM remove it too.
func makeTemporaryDirectory() throws -> URL { try ScratchFolders.make("pinlab-check") }
