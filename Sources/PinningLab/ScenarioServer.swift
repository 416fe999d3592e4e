public import Foundation
public import PinningLabCore
public import PinningLabModel
public import PinningLabPKI

/// A running fixture server for one scenario, with everything a client under test needs: the URL, the trust
/// store, the pins of every profile, the client certificate to present, and the expectations to compare with.
public final class ScenarioServer: Sendable {
    public let scenario: Scenario
    public let server: FixtureServer
    public let pki: LabPKI
    /// The engine's name: `openssl` or `gnutls`.
    public var engine: String { server.engineName }
    /// The host name the client asks for (the scenario's `client.host`, `localhost` unless it says otherwise); the
    /// client connects to `ip`, whatever the name.
    public var host: String { scenario.client.host }
    public var ip: String { server.host }
    public var port: Int { server.port }
    /// `https://HOST:PORT/`.
    public var url: URL { URL(string: "https://\(host):\(server.port)/")! }
    /// The roots of the scenario's trust profile (DER), and the same as a PEM file.
    public let trustRootsDER: [[UInt8]]
    public let trustFile: URL
    /// The same roots as PEM text, one block per root.
    public var trustRootsPEM: String { PEM.encode(trustRootsDER) }
    /// The client certificate the scenario says to present, with its files; `nil` when it presents none.
    public let clientCredentials: ClientCredentials?
    private let files: CellFiles

    init(scenario: Scenario, server: FixtureServer, pki: LabPKI, files: CellFiles) throws {
        self.scenario = scenario
        self.server = server
        self.pki = pki
        self.files = files
        let trust = try files.trustFile(scenario)
        trustRootsDER = trust.roots
        trustFile = URL(fileURLWithPath: trust.path)
        clientCredentials = try files.credentials(scenario)
    }

    /// What a correct client does under `profile`.
    public func expected(_ profile: PinProfile) -> Expectation { scenario.expected(profile) }

    /// The pins a client built for this scenario holds under `profile` (declared for ``pinScope``).
    public func pins(_ profile: PinProfile) throws -> PinSet { try scenario.pinSet(for: profile, in: pki) }

    /// The hosts the pins are declared for; `nil` declares them for ``host`` itself.
    public var pinScope: PinScope? { scenario.client.pinScope }
    /// Whether the pins are declared for ``host``: a client that models scopes pins only then.
    public var pinsApply: Bool { scenario.client.pinsApply }

    /// The target to hand a `PinningClient` for `profile`.
    public func target(_ profile: PinProfile, timeout: Duration = .seconds(10)) throws -> ClientTarget {
        try files.target(for: scenario, profile: profile, port: server.port, timeout: timeout)
    }

    /// The values of the command-template placeholders for `profile`.
    public func context(_ profile: PinProfile) throws -> CellContext {
        try files.context(for: scenario, profile: profile, port: server.port)
    }

    /// Observations of every connection finished so far.
    public func observations() -> [Observation] { server.observations() }

    /// Runs `connect` (which should make one client connection to `url` holding `pins(profile)`), waits for the
    /// server to record it, and judges it. Only the connections made during `connect` count.
    ///
    /// A refusal is a result, not a failure: when `connect` throws — which is how a Swift client refuses a
    /// server — the error is caught and recorded as the client's claim ("refused", with the error as its detail),
    /// and the server's observation decides. When `connect` returns, the client makes no claim and the observation
    /// alone decides.
    public func verdict(
        _ profile: PinProfile, client: String = "client", _ connect: () async throws -> Void
    ) async -> Verdict {
        if scenario.isMultiStep {
            return .notRun(
                scenario: scenario.id, profile: profile, engine: engine, client: client, expected: expected(profile),
                status: .unsupported,
                reason: "this scenario is \(scenario.steps.count) connections that share the client's TLS session cache; a closure that connects once cannot show it: use verdict(_:running:) with a PinningClient that keeps sessions across steps")
        }
        let before = server.connectionsAccepted
        let t0 = ContinuousClock.now
        var outcome: ClientOutcome?
        do {
            try await connect()
        } catch {
            outcome = ClientOutcome(claim: .refused, detail: String(describing: error))
        }
        let ms = milliseconds(ContinuousClock.now - t0)
        let seen = (await server.settle(timeout: .seconds(10)) ?? server.observations()).filter { $0.id > before }
        return Verdict.judge(
            scenario: scenario.id, profile: profile, engine: engine, client: client, expected: expected(profile),
            evidence: ServerEvidence(seen), outcome: outcome, clientAuth: scenario.server.clientAuth,
            expectedCategory: scenario.refusal, clientMilliseconds: ms, rule: scenario.rule(profile, platform: nil))
    }

    /// Runs `connect` with the ready target of `profile` — the pins in force for the host it asks for
    /// (``ClientTarget/effectivePins``: none where the scenario declares them for other hosts), the host name to verify,
    /// the address to connect to (``ClientTarget/ip``: host-aware scenarios name hosts that do not resolve), the trust
    /// roots and the client identity — and judges the connection it makes, as ``verdict(_:client:_:)-(_,_,()->Void)``
    /// does. Build the client from the target, so no scenario's scope or address can be forgotten:
    ///
    /// ```swift
    /// let verdict = try await server.verdict(profile) { target in
    ///     let client = try MyPinnedClient(roots: target.trustRootsDER, pins: target.effectivePins,
    ///                                     identity: target.clientCredentials)
    ///     _ = try await client.get(host: target.host, address: target.ip, port: target.port)
    /// }
    /// ```
    public func verdict(
        _ profile: PinProfile, client: String = "client", _ connect: (ClientTarget) async throws -> Void
    ) async throws -> Verdict {
        let target = try target(profile)
        return await verdict(profile, client: client) { try await connect(target) }
    }

    /// Runs an in-process client for `profile` and judges it (server observation and the client's claim). For a
    /// scenario made of several connections (`scenario.steps`), the steps run on servers of their own, started
    /// for this cell (the verdict has one entry per step); a client that cannot keep sessions across connections
    /// gets an `unsupported` verdict.
    public func verdict(_ profile: PinProfile, running client: any PinningClient) async throws -> Verdict {
        if scenario.isMultiStep {
            let engine = Engines.all.first { $0.name == self.engine } ?? Engines.openssl
            return await CheckRunner(pki: pki, catalogue: Catalogue(scenarios: [scenario])).runSteps(
                of: scenario, profile: profile, engine: engine, client: .inProcess(client), timeout: .seconds(10),
                files: files)
        }
        let before = server.connectionsAccepted
        let target = try target(profile)
        let t0 = ContinuousClock.now
        let outcome = await client.run(target)
        let ms = milliseconds(ContinuousClock.now - t0)
        let seen = (await server.settle(timeout: .seconds(10)) ?? server.observations()).filter { $0.id > before }
        return Verdict.judge(
            scenario: scenario.id, profile: profile, engine: engine, client: client.name,
            expected: scenario.expected(profile, platform: client.platform, checks: client.checks), evidence: ServerEvidence(seen), outcome: outcome,
            clientAuth: scenario.server.clientAuth, expectedCategory: scenario.refusal, clientMilliseconds: ms,
            rule: scenario.rule(profile, platform: client.platform, checks: client.checks))
    }

    /// The lab revocation responder of the scenario (`server.responder`), `IP:PORT` on loopback, started with the
    /// first target or context that needs it; `nil` when the scenario has none.
    public var revocationResponder: String? { try? files.revocationResponder(for: scenario) }

    public func stop() async {
        await server.stop()
        files.responders?.stopAll()
    }
}

extension CheckRunner {
    /// Starts the server of one scenario on one engine. Files (trust store, client certificate) are written to
    /// `workDirectory`, which must exist and outlive the server. Throws `TLSEngineError` with code `.unsupported`
    /// when the engine cannot serve the scenario exactly.
    public func startServer(
        _ scenarioID: String, engine: any TLSEngine = Engines.openssl, workDirectory: URL,
        options: FixtureServer.Options = .init()
    ) async throws -> ScenarioServer {
        let s = try catalogue.scenario(scenarioID)
        let server = try await FixtureServer.start(
            engine: engine, configuration: try serverConfiguration(for: s), options: options, label: s.id)
        do {
            let files = try CellFiles(pki: pki, directory: workDirectory)
            try await files.prepareCredentials(for: s)  // off the cooperative pool: it may wait for the PKI's lock
            return try ScenarioServer(scenario: s, server: server, pki: pki, files: files)
        } catch {
            await server.stop()
            throw error
        }
    }
}
