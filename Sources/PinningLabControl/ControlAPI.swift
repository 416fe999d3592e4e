import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabPKI  // Locked

/// The control API's routes and handlers, independent of the HTTP server that carries them.
///
/// Every route is one row of `routes`: the HTTP server registers exactly these, and a test compares them with the
/// paths and operations of openapi.yaml in both directions.
final class ControlAPI: Sendable {
    struct Route: Sendable {
        var method: String
        /// OpenAPI form: `/servers/{id}`.
        var path: String
        /// Answered without the bearer token (`GET /health`, the live view's page and assets): routes that return no
        /// lab data.
        var open = false
        var handle: @Sendable (ControlRequest) async throws(ControlError) -> ControlReply

        /// Path parameter names, in order.
        var parameterNames: [String] {
            path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) }
        }
    }

    let pki: LabPKI
    let catalogue: Catalogue
    let registry: ServerRegistry
    let runner: CheckRunner
    let index: IdentityIndex
    let openAPIDocument: String
    /// The live view of the scenario servers (`GET /live`).
    let live: LiveRoutes
    /// The cell queue for devices (`/queues`, `/leases`).
    let devices: DeviceQueues
    /// `pinlab serve --control on http://127.0.0.1:PORT/`, set once the server listens.
    let liveSource = Locked("pinlab serve --control")
    /// Longest wait of `GET /servers/{id}/observations?wait=`.
    static let maxWaitSeconds = 10

    init(pki: LabPKI, catalogue: Catalogue, registry: ServerRegistry, openAPIDocument: String) {
        self.pki = pki
        self.catalogue = catalogue
        self.registry = registry
        self.runner = CheckRunner(pki: pki, catalogue: catalogue)
        self.index = IdentityIndex(pki)
        self.openAPIDocument = openAPIDocument
        devices = DeviceQueues(
            catalogue: catalogue, pki: pki, registry: registry, runner: runner, index: index,
            folder: pki.directory.appendingPathComponent("control/queues", isDirectory: true))
        let source = liveSource
        live = LiveRoutes(
            feed: Self.liveFeed(registry: registry, catalogue: catalogue, index: index) { source.withLock { $0 } })
    }

    var routes: [Route] {
        [
            Route(method: "GET", path: "/health", open: true) { [self] _ in await health() },
            Route(method: "GET", path: "/openapi.yaml") { [self] _ in
                .text(openAPIDocument, contentType: "application/yaml")
            },
            Route(method: "GET", path: "/scenarios") { [self] r throws(ControlError) in try scenarios(r) },
            Route(method: "GET", path: "/scenarios/{id}") { [self] r throws(ControlError) in
                .json(try scenario(r.parameter("id")))
            },
            Route(method: "GET", path: "/scenarios/{id}/pins") { [self] r throws(ControlError) in try scenarioPins(r) },
            Route(method: "GET", path: "/identities") { [self] _ in
                .json(["identities": pki.identities.map(IdentityView.init)])
            },
            Route(method: "GET", path: "/identities/{name}") { [self] r throws(ControlError) in try await identity(r) },
            Route(method: "GET", path: "/pins") { [self] r throws(ControlError) in try pins(r) },
            Route(method: "GET", path: "/trust/{profile}") { [self] r throws(ControlError) in try trust(r) },
            Route(method: "GET", path: "/ech") { [self] r throws(ControlError) in try await ech(r) },
            Route(method: "GET", path: "/servers") { [self] _ in
                .json(["servers": await registry.all.map { ServerView($0, index: index) }])
            },
            Route(method: "POST", path: "/servers") { [self] r throws(ControlError) in try await startServer(r) },
            Route(method: "GET", path: "/servers/{id}") { [self] r throws(ControlError) in
                .json(ServerView(try await registry.entry(r.parameter("id")), index: index))
            },
            Route(method: "DELETE", path: "/servers/{id}") { [self] r throws(ControlError) in
                .json(ServerView(try await registry.stop(r.parameter("id")), index: index))
            },
            Route(method: "POST", path: "/servers/{id}/rotate") { [self] r throws(ControlError) in try await rotate(r)
            },
            Route(method: "GET", path: "/servers/{id}/observations") { [self] r throws(ControlError) in
                try await observations(r)
            },
            Route(method: "POST", path: "/batch") { [self] r throws(ControlError) in try await startBatch(r) },
            Route(method: "DELETE", path: "/batch/{id}") { [self] r throws(ControlError) in
                let stopped = try await registry.stopBatch(r.parameter("id"))
                return .json(
                    StoppedBatchView(batch: r.parameter("id"), servers: stopped.map { ServerView($0, index: index) }))
            },
        ] + live.routes + deviceQueueRoutes
    }

    // MARK: - Handlers

    func health() async -> ControlReply {
        .json(
            HealthView(
                engines: Engines.names, scenarios: catalogue.scenarios.count,
                servers: await registry.all.count, pkiDirectory: pki.directory.path))
    }

    func scenarios(_ r: ControlRequest) throws(ControlError) -> ControlReply {
        var list = catalogue.scenarios
        if let tag = r.query["tag"] { list = list.filter { $0.tags.contains(tag) } }
        return .json(["scenarios": list])
    }

    func scenario(_ id: String, field: String = "id") throws(ControlError) -> Scenario {
        guard let s = catalogue[id] else {
            throw .notFound(
                field, "no scenario has the id '\(id)'.",
                fix: "GET /scenarios lists all \(catalogue.scenarios.count) ids.")
        }
        return s
    }

    func identityNamed(_ name: String, field: String) throws(ControlError) -> Identity {
        guard let id = pki[name] else {
            throw .notFound(field, "the lab PKI has no identity named '\(name)'.", fix: "GET /identities lists them.")
        }
        return id
    }

    func scenarioPins(_ r: ControlRequest) throws(ControlError) -> ControlReply {
        let s = try scenario(r.parameter("id"))
        guard let profileName = r.query["profile"] else {
            throw .badRequest(
                "profile", "the query parameter 'profile' is missing.",
                fix: "add ?profile= one of \(PinProfile.all.map(\.rawValue).joined(separator: ", ")).")
        }
        let profileNames = PinProfile.all.map(\.rawValue)
        _ = try r.choice("profile", profileNames, default: profileName)
        let profile = PinProfile(rawValue: profileName)
        let format = try r.choice("format", PinFormat.all.map(\.rawValue), default: PinFormat.json.rawValue)
        let pinnedNames = [s.client.pinned, s.client.backup] + s.server.chains.flatMap { $0 } + s.client.trust.roots
        let missing = pinnedNames.filter { pki[$0] == nil }
        if !missing.isEmpty {
            throw ControlError(
                422, field: "id",
                "the pins of '\(s.id)' name identities this lab PKI lacks: \(Array(Set(missing)).sorted().joined(separator: ", ")).",
                fix: "start the control API on a PKI made with the post-quantum part (pinlab pki init --post-quantum).")
        }
        do {
            if format == PinFormat.json.rawValue {
                let entries = try s.pinEntries(for: profile, in: pki)
                return .json(
                    ScenarioPinsView(
                        scenario: s.id, profile: profile.rawValue, expect: s.expected(profile).rawValue,
                        pins: entries.map {
                            PinView(
                                identity: $0.identity, key: $0.keyName, kind: $0.kind.rawValue,
                                base64: $0.base64, hex: $0.hex)
                        }))
            }
            if profile.pinsCertificates {
                throw ControlError.badRequest(
                    "format", "'\(format)' writes SPKI pins, and the profile \(profile) pins the whole certificate.",
                    fix: "use format=json for certificate pins.")
            }
            return .text(PinFormat(rawValue: format).render(try s.pinnedIdentities(for: profile, in: pki)))
        } catch let e as ControlError {
            throw e
        } catch {
            throw ControlError(500, field: nil, "the pins of '\(s.id)' could not be resolved: \(error)")
        }
    }

    func pins(_ r: ControlRequest) throws(ControlError) -> ControlReply {
        let format = try r.choice("format", PinFormat.all.map(\.rawValue), default: PinFormat.json.rawValue)
        let names = (r.query["names"] ?? "leaf-v1,leaf-v3-rekey").split(
            separator: ",", omittingEmptySubsequences: false
        )
        .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.contains(where: \.isEmpty) else {
            throw .badRequest(
                "names", "'names' holds an empty name.",
                fix: "names=leaf-v1,leaf-v3-rekey (comma-separated, no empty entries).")
        }
        var ids: [Identity] = []
        for n in names { ids.append(try identityNamed(n, field: "names")) }
        let text = PinFormat(rawValue: format).render(ids)
        return format == PinFormat.json.rawValue ? .text(text, contentType: "application/json") : .text(text)
    }

    func trust(_ r: ControlRequest) throws(ControlError) -> ControlReply {
        let profile = TrustProfile(rawValue: r.parameter("profile"))
        let format = try r.choice("format", ["pem", "der"], default: "pem")
        var roots: [Identity] = []
        for name in profile.roots {
            guard let id = pki[name], id.role == .root else {
                throw .notFound(
                    "profile", "'\(profile)' is not a trust profile: '\(name)' is not a root of the lab PKI.",
                    fix: "use lab-root or lab-root+proxy-root (roots joined by '+'); GET /identities lists the roots.")
            }
            // A root to install on a device: never one whose key a seed reveals and that could vouch for any site.
            do { try pki.checkInstallable(id) } catch {
                throw ControlError(
                    409, field: "profile", "'\(name)' is not handed out for installation: \(error)",
                    fix: "re-key it: pinlab pki proxy-root --rekey --dir \(pki.directory.path)")
            }
            roots.append(id)
        }
        if format == "der" {
            guard roots.count == 1 else {
                throw .badRequest(
                    "format", "DER holds one certificate and '\(profile)' has \(roots.count) roots.",
                    fix: "use format=pem, or fetch each root: GET /trust/lab-root?format=der.")
            }
            return ControlReply(
                status: 200, contentType: IdentityExportFormat.der.mediaType, body: Data(roots[0].certificateDER))
        }
        return .text(PEM.encode(roots.map(\.certificateDER)), contentType: IdentityExportFormat.pem.mediaType)
    }

    func identity(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let id = try identityNamed(r.parameter("name"), field: "name")
        let formatName = try r.choice("format", IdentityExportFormat.all.map(\.rawValue), default: "pem")
        let format = IdentityExportFormat(rawValue: formatName)
        if format.isSecret && !(id.role == .leaf || id.role == .client) {
            throw .badRequest(
                "format", "'\(id.name)' is \(id.role.withArticle): its key is not handed out.",
                fix: "keys and PKCS#12 files are served for leaf and client identities only.")
        }
        let password = r.query["password"]
        if let password, password.isEmpty || password.count > 128 {
            throw .badRequest(
                "password", "the PKCS#12 password must have 1 to 128 characters.",
                fix: "leave it out for the lab's password, 'pinninglab'.")
        }
        if password != nil && format != .p12 {
            throw .badRequest(
                "password", "'password' applies to format=p12 only.", fix: "add format=p12 or drop password.")
        }
        let pki = self.pki
        let bytes: [UInt8]
        do {
            // PKCS#12 encryption is a C call of tens of milliseconds: off the cooperative pool.
            bytes = try await onDedicatedThread(named: "pinlab.ctl.block") {
                Result { try pki.export(id, as: format, password: password) }
            }.get()
        } catch {
            throw ControlError(500, field: nil, "'\(id.name)' could not be exported as \(format): \(error)")
        }
        var reply = ControlReply(status: 200, contentType: format.mediaType, body: Data(bytes))
        let ext = ["der": "cer", "p12": "p12", "key": "key.pem"][format.rawValue] ?? "pem"
        reply.headers["Content-Disposition"] = "attachment; filename=\"\(id.name).\(ext)\""
        return reply
    }

    func startServer(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let body = try r.jsonObject(allowed: ["scenario", "engine"])
        let scenarioID = try ControlRequest.string(body, "scenario", required: true, example: "rekey") ?? ""
        // An unknown scenario is named before a missing engine: it is the first thing to fix.
        let s = try scenario(scenarioID, field: "scenario")
        let engineName = try ControlRequest.string(body, "engine", required: true, example: "gnutls") ?? ""
        guard let engine = Engines.engine(named: engineName) else {
            throw .notFound(
                "engine", "there is no engine named '\(engineName)'.",
                fix: "use one of: \(Engines.names.joined(separator: ", ")).")
        }
        let entry = try await registry.start(scenario: s.id, engine: engine)
        var reply = ControlReply.json(ServerView(entry, index: index), status: 201)
        reply.headers["Location"] = "/servers/\(entry.id)"
        return reply
    }

    func rotate(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let entry = try await registry.entry(r.parameter("id"))
        let body = try r.jsonObject(allowed: ["identity", "chain", "party"])
        let identityName = try ControlRequest.string(body, "identity", required: false, example: "leaf-v1")
        let target = try entry.server(
            party: try ControlRequest.string(body, "party", required: false, example: "genuine"))
        let chainNames = try ControlRequest.strings(
            body, "chain", maxCount: 10, example: "[\"leaf-v1\", \"lab-intermediate-a\"]")
        guard let keyName = identityName ?? chainNames?.first else {
            throw .badRequest(
                "identity", "give 'identity' (its key and usual chain), 'chain' (the exact chain), or both.",
                fix: "e.g. {\"identity\": \"leaf-v1\"}.")
        }
        let key = try identityNamed(keyName, field: identityName == nil ? "chain" : "identity")
        var chain: [[UInt8]]? = nil
        if let chainNames {
            var ders: [[UInt8]] = []
            for n in chainNames { ders.append(try identityNamed(n, field: "chain").certificateDER) }
            guard chainNames.contains(key.name) else {
                throw .badRequest(
                    "chain", "the chain does not hold '\(key.name)', whose key the server would use.",
                    fix: "include '\(key.name)' in 'chain', or name the identity the chain is for.")
            }
            chain = ders
        }
        var config = target.configuration.0
        var served = ServerIdentity(key, chain: chain)
        served.name = key.name
        config.identities = [served]
        do {
            try target.rotate(to: config)
        } catch {
            let status = error.code == .unsupported ? 422 : 400
            throw ControlError(
                status, field: chainNames == nil ? "identity" : "chain",
                "\(entry.server.engine) cannot serve that: \(error.reason)",
                fix: "choose another identity or chain; the server keeps serving what it served.")
        }
        return .json(ServerView(entry, index: index))
    }

    /// Longest `cellTimeoutSeconds` of `POST /batch`.
    static let maxCellTimeoutSeconds = 300.0

    /// `POST /batch`: one server per selected cell, registered under a batch id, and the batch document a harness
    /// reads (`pinlab check --print-schema batch-in`), with which server serves which cell.
    func startBatch(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let body = try r.jsonObject(allowed: ["scenarios", "profiles", "engines", "cellTimeoutSeconds"])
        let all = catalogue.scenarios
        var scenarios: [Scenario] = all
        if let ids = try ControlRequest.strings(
            body, "scenarios", maxCount: all.count, example: "[\"baseline\", \"rekey\"]")
        {
            scenarios = []
            for id in try Self.unique(ids, field: "scenarios") {
                scenarios.append(try scenario(id, field: "scenarios"))
            }
        }
        let profiles = try Self.selection(
            body, "profiles", of: PinProfile.all, named: \.rawValue,
            example: "[\"leaf-spki\", \"root-spki\"]"
        ) { name, known in
            .badRequest("profiles", "'\(name)' is not a pin profile.", fix: "use any of: \(known).")
        }
        // Any registered engine may be named; left out, the built-in two (as `--engine both`).
        let engines = try Self.selection(
            body, "engines", of: Engines.all, default: Engines.builtIn, named: \.name, example: "[\"openssl\"]"
        ) { name, known in
            .notFound("engines", "there is no engine named '\(name)'.", fix: "use any of: \(known).")
        }
        var cellTimeout = 10.0
        if body["cellTimeoutSeconds"] != nil {
            struct Field: Decodable { var cellTimeoutSeconds: Double }
            guard let t = try? JSONDecoder().decode(Field.self, from: r.body).cellTimeoutSeconds,
                t > 0, t <= Self.maxCellTimeoutSeconds
            else {
                throw .badRequest(
                    "cellTimeoutSeconds",
                    "'cellTimeoutSeconds' must be a number of seconds above 0 and at most \(Int(Self.maxCellTimeoutSeconds)).",
                    fix: "e.g. \"cellTimeoutSeconds\": 10 (the default).")
            }
            cellTimeout = t
        }
        // Report order, as `pinlab check --batch` lists cells: scenario, then engine, then profile.
        var cells: [ServerRegistry.BatchCellRequest] = []
        for s in scenarios {
            for e in engines {
                for p in PinProfile.all where profiles.contains(p) {
                    cells.append(.init(scenario: s.id, profile: p, engine: e))
                }
            }
        }
        let started = try await registry.startBatch(cells)
        let byID = Dictionary(cells.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let addresses = started.entries.compactMap { e -> BatchCellAddress? in
            guard let cell = e.cell.flatMap({ byID[$0] }) else { return nil }
            return BatchCellAddress(
                scenario: cell.scenario, profile: cell.profile, engine: cell.engine.name, port: e.server.port)
        }
        let document: BatchDocument
        do {
            document = try runner.batchDocument(
                addresses, workDirectory: registry.workDirectory,
                cellTimeout: .milliseconds(max(1, Int((cellTimeout * 1000).rounded()))))
        } catch {
            _ = try? await registry.stopBatch(started.id)
            throw ControlError(
                500, field: nil, "the batch document could not be written: \(error)",
                fix: "the servers of this batch are stopped; try again.")
        }
        var reply = ControlReply.json(
            BatchView(
                batch: started.id, document: document,
                servers: started.entries.map {
                    BatchView.CellServer(cell: $0.cell ?? "", server: $0.id, port: $0.server.port)
                },
                unsupported: started.unsupported.map { BatchView.Unsupported(cell: $0.cell, reason: $0.reason) }),
            status: 201)
        reply.headers["Location"] = "/batch/\(started.id)"
        return reply
    }

    /// The list without duplicates, or a 400 naming the field and the repeated entry.
    /// The entries of `all` a list field names, in the order given (all of them when the field is absent); an
    /// unknown name is the error `unknown` makes of it and the known names.
    static func selection<T>(
        _ body: [String: any Sendable], _ field: String, of all: [T], default chosen: [T]? = nil,
        named name: (T) -> String,
        example: String, unknown: (String, String) -> ControlError
    ) throws(ControlError) -> [T] {
        guard let names = try ControlRequest.strings(body, field, maxCount: all.count, example: example) else {
            return chosen ?? all
        }
        var out: [T] = []
        for n in try unique(names, field: field) {
            guard let x = all.first(where: { name($0) == n }) else {
                throw unknown(n, all.map(name).joined(separator: ", "))
            }
            out.append(x)
        }
        return out
    }

    static func unique(_ list: [String], field: String) throws(ControlError) -> [String] {
        var seen = Set<String>()
        for x in list where !seen.insert(x).inserted {
            throw .badRequest(field, "'\(x)' appears twice in '\(field)'.", fix: "name each entry once.")
        }
        return list
    }

    func observations(_ r: ControlRequest) async throws(ControlError) -> ControlReply {
        let entry = try await registry.entry(r.parameter("id"))
        let after = try r.integer("after", in: 0...Int(Int32.max), default: 0)
        let wait = try r.integer("wait", in: 0...Self.maxWaitSeconds, default: 0)
        let server = try entry.server(party: r.query["party"])
        if wait > 0 { _ = await server.settle(timeout: .seconds(wait)) }
        return .json(
            ObservationsView(
                server: entry.id, connectionsAccepted: server.connectionsAccepted,
                observations: server.observations(after: after).map { ObservationView($0, index: index) }))
    }
}
