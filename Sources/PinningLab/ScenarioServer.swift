public import Foundation
public import PinningLabCore
public import PinningLabModel
public import PinningLabPKI

/// The fixture server of one scenario on one engine, with everything a client under test needs: the URL, the trust
/// store, the pins of every profile, the client certificate to present — and the verdicts of the cells it serves.
///
/// Every verdict it gives goes through the same cell and judge as `pinlab check` and `Lab.check`: declare the
/// client's checks and platform (`verdict(_:checks:platform:_:)`), and the cell is judged as `pinlab check
/// --client-checks … --platform …` judges it.
public final class ScenarioServer: Sendable {
    public let scenario: Scenario
    /// The running server; `nil` when the engine cannot serve this scenario exactly (``unsupportedReason``): every
    /// verdict is then `unsupported`, and no client is run.
    public let server: FixtureServer?
    /// Why the engine cannot serve this scenario, or `nil` when it serves it.
    public let unsupportedReason: String?
    public let pki: LabPKI
    /// The engine's name: `openssl`, `gnutls`, or a registered engine's.
    public var engine: String { tlsEngine.name }
    /// The host name the client asks for (the scenario's `client.host`, `localhost` unless it says otherwise); the
    /// client connects to `ip`, whatever the name.
    public var host: String { scenario.client.host }
    public var ip: String { server?.host ?? "127.0.0.1" }
    /// The server's port (0 when the engine cannot serve the scenario).
    public var port: Int { server?.port ?? 0 }
    /// `https://HOST:PORT/`.
    public var url: URL { URL(string: "https://\(host):\(port)/")! }
    /// The roots of the scenario's trust profile (DER), and the same as a PEM file.
    public let trustRootsDER: [[UInt8]]
    public let trustFile: URL
    /// The same roots as PEM text, one block per root.
    public var trustRootsPEM: String { PEM.encode(trustRootsDER) }
    /// The client certificate the scenario says to present, with its files; `nil` when it presents none.
    public let clientCredentials: ClientCredentials?
    private let files: CellFiles
    /// How long a client run by a verdict may take (its target's timeout; 5 s more before it is abandoned).
    public static let clientTimeout: Duration = .seconds(10)
    private let tlsEngine: any TLSEngine
    private let runner: CheckRunner

    init(
        scenario: Scenario, server: FixtureServer?, unsupportedReason: String? = nil, engine: any TLSEngine,
        runner: CheckRunner, files: CellFiles
    ) throws {
        self.scenario = scenario
        self.server = server
        self.unsupportedReason = unsupportedReason
        self.tlsEngine = engine
        self.runner = runner
        self.pki = runner.pki
        self.files = files
        // A scenario no engine serves here may name identities this PKI lacks (the post-quantum part): its client
        // side is never run, so what cannot be made is left empty rather than failing the server.
        let trust: (path: String, roots: [[UInt8]])
        if unsupportedReason != nil {
            trust = (try? files.trustFile(scenario)) ?? (path: "/dev/null", roots: [])
            clientCredentials = try? files.credentials(scenario)
        } else {
            trust = try files.trustFile(scenario)
            clientCredentials = try files.credentials(scenario)
        }
        trustRootsDER = trust.roots
        trustFile = URL(fileURLWithPath: trust.path)
    }

    /// The running server, for the control API (which starts only servers an engine can serve).
    package var running: FixtureServer {
        guard let server else {
            preconditionFailure("the \(engine) server of \(scenario.id) did not start: \(unsupportedReason ?? "")")
        }
        return server
    }

    /// What a correct client does under `profile` (no platform named, no checks declared).
    public func expected(_ profile: PinProfile) -> Expectation { scenario.expected(profile) }

    /// The cell this server serves under `profile`, for a client on `platform` that declares `checks`.
    public func cell(
        _ profile: PinProfile, client: String = "client", checks: ClientChecks = .undeclared,
        platform: PlatformPolicy? = nil
    ) -> Cell {
        Cell(scenario: scenario, profile: profile, engine: engine, client: client, platform: platform, checks: checks)
    }

    /// The pins a client built for this scenario holds under `profile` (declared for ``pinScope``).
    /// On a server no engine could start (``unsupportedReason``) whose scenario names identities this PKI lacks (the
    /// post-quantum part), the pins that cannot be made are none: a client built from them is never run, and the
    /// cell's verdict is `unsupported` with the reason, as for every other cell of such a server.
    public func pins(_ profile: PinProfile) throws -> PinSet {
        do {
            return try scenario.pinSet(for: profile, in: pki)
        } catch  where unsupportedReason != nil {
            return PinSet(kind: profile.pinsCertificates ? .certificateSHA256 : .spkiSHA256, hashes: [])
        }
    }

    /// The hosts the pins are declared for; `nil` declares them for ``host`` itself.
    public var pinScope: PinScope? { scenario.client.pinScope }
    /// Whether the pins are declared for ``host``: a client that models scopes pins only then.
    public var pinsApply: Bool { scenario.client.pinsApply }

    /// The target to hand a `PinningClient` for `profile`.
    public func target(_ profile: PinProfile, timeout: Duration = ScenarioServer.clientTimeout) throws -> ClientTarget {
        try files.target(for: scenario, profile: profile, port: port, timeout: timeout)
    }

    /// The values of the command-template placeholders for `profile`.
    public func context(_ profile: PinProfile) throws -> CellContext {
        try files.context(for: scenario, profile: profile, port: port)
    }

    /// Observations of every connection finished so far.
    public func observations() -> [Observation] { server?.observations() ?? [] }

    /// Runs `connect` with the ready target of `profile` and judges the connection it makes — the one idiom.
    ///
    /// The target holds what a client built for this cell holds: the pins in force for the host it asks for
    /// (``ClientTarget/effectivePins``: none where the scenario declares them for other hosts), the host name to
    /// verify, the address to connect to (``ClientTarget/ip``), the trust roots and the client identity. Build the
    /// client from it, so no scenario's scope or address can be forgotten:
    ///
    /// ```swift
    /// let verdict = await server.verdict(profile) { target in
    ///     let client = try MyPinnedClient(roots: target.trustRootsDER, pins: target.effectivePins,
    ///                                     identity: target.clientCredentials)
    ///     _ = try await client.get(host: target.host, address: target.ip, port: target.port)
    /// }
    /// ```
    ///
    /// A refusal is a result, not a failure: when `connect` throws — which is how a Swift client refuses a server —
    /// the error is recorded as the client's claim ("refused", with the error as its detail), and the server's
    /// observation decides. When `connect` returns, the client makes no claim and the observation alone decides.
    ///
    /// - Parameters:
    ///   - checks: what the client checks beyond its pins (revocation, CT): the revocation and CT scenarios are judged
    ///     by the scenario's expectation for them, and are `policy` (undecided) while nothing is declared.
    ///   - platform: the platform whose TLS policy the client follows (App Transport Security, Android, the JDK).
    ///   - keepsSessionsAcrossSteps: whether `connect` keeps the TLS session cache of ``ClientTarget/sessionCache``
    ///     across calls: a scenario of several connections calls `connect` once per step, and is `unsupported`
    ///     without it.
    public func verdict(
        _ profile: PinProfile, client: String = "client", checks: ClientChecks = .undeclared,
        platform: PlatformPolicy? = nil, keepsSessionsAcrossSteps: Bool = false,
        _ connect: (ClientTarget) async throws -> Void
    ) async -> Verdict {
        await withoutActuallyEscaping(connect) { connect in
            await execute(
                cell(profile, client: client, checks: checks, platform: platform),
                .inProcess(
                    run: { target in
                        do {
                            try await connect(target)
                            return .finished(nil)
                        } catch {
                            return .finished(ClientOutcome(claim: .refused, detail: String(describing: error)))
                        }
                    },
                    keepsSessionsAcrossSteps: keepsSessionsAcrossSteps))
        }
    }

    /// Runs `connect` (which should make one client connection to `url` holding `pins(profile)`) and judges it.
    @available(
        *, deprecated,
        message:
            "take the target: server.verdict(profile) { target in … } hands the client the pins in force for the host it asks for and the address to connect to"
    )
    public func verdict(
        _ profile: PinProfile, client: String = "client", _ connect: () async throws -> Void
    ) async -> Verdict {
        await verdict(profile, client: client) { (_: ClientTarget) in try await connect() }
    }

    /// Runs an in-process client for `profile` and judges it, with the platform and checks the client declares.
    /// For a scenario made of several connections (`scenario.steps`), the steps run on servers of their own on this
    /// server's engine, started for this cell; a client that cannot keep sessions across connections gets an
    /// `unsupported` verdict.
    public func verdict(_ profile: PinProfile, running client: any PinningClient) async -> Verdict {
        await execute(
            cell(profile, client: client.name, checks: client.checks, platform: client.platform),
            CellClient.of(.inProcess(client), timeout: Self.clientTimeout))
    }

    /// Runs the cell on this server (or its parties) with the executor for its kind of client.
    private func execute(_ cell: Cell, _ client: CellClient) async -> Verdict {
        if let unsupportedReason { return cell.notRun(.unsupported, unsupportedReason) }
        if cell.isMultiStep {
            return await runner.runSteps(
                cell, engine: tlsEngine, client: client, timeout: Self.clientTimeout, files: files)
        }
        return await runner.runConnection(cell, on: running, client: client, timeout: Self.clientTimeout, files: files)
    }

    /// The lab revocation responder of the scenario (`server.responder`), `IP:PORT` on loopback, started with the
    /// first target or context that needs it; `nil` when the scenario has none.
    public var revocationResponder: String? { try? files.revocationResponder(for: scenario) }

    public func stop() async {
        await server?.stop()
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
        try await startServer(
            scenarioID, engine: engine, workDirectory: workDirectory, options: options, unsupported: .throwing)
    }

    /// What ``startServer(_:engine:workDirectory:options:unsupported:)`` does with a scenario the engine cannot serve.
    package enum UnsupportedScenario: Sendable {
        /// Throws the engine's `TLSEngineError` (`.unsupported`).
        case throwing
        /// Returns a server without a running server, whose every verdict is `unsupported` with the reason.
        case verdict
    }

    package func startServer(
        _ scenarioID: String, engine: any TLSEngine, workDirectory: URL, options: FixtureServer.Options,
        unsupported: UnsupportedScenario
    ) async throws -> ScenarioServer {
        let s = try catalogue.scenario(scenarioID)
        var server: FixtureServer?
        var reason: String?
        do {
            server = try await FixtureServer.start(
                engine: engine, configuration: try serverConfiguration(for: s), options: options, label: s.id)
        } catch let e as TLSEngineError where e.code == .unsupported && unsupported == .verdict {
            reason = "\(engine.name) cannot serve this scenario: \(e.reason)"
        }
        do {
            let files = try CellFiles(pki: pki, directory: workDirectory)
            if reason == nil {
                try await files.prepareCredentials(for: s)  // off the cooperative pool: it may wait for the PKI's lock
            }
            return try ScenarioServer(
                scenario: s, server: server, unsupportedReason: reason, engine: engine, runner: self, files: files)
        } catch {
            await server?.stop()
            throw error
        }
    }
}
