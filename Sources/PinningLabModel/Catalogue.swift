public import Foundation
import PinningLabBase
import PinningLabPKI
import PinningLabTLSTypes

/// The scenario catalogue: every scenario of a directory of `*.yaml` files, validated, in teaching order.
/// The bundled catalogue (`Catalogue.bundled()`) is the one source of truth the CLI, the library and the docs use.
public struct Catalogue: Sendable, Hashable {
    public private(set) var scenarios: [Scenario]

    public init(scenarios: [Scenario]) {
        self.scenarios = scenarios.sorted(by: Catalogue.teachingOrder)
    }

    public var ids: [String] { scenarios.map(\.id) }
    public subscript(id: String) -> Scenario? { scenarios.first { $0.id == id } }

    /// The scenario with this id, or an error that names the closest ids.
    public func scenario(_ id: String) throws -> Scenario {
        if let s = self[id] { return s }
        let hint = suggestion(id, in: ids).map { "Did you mean '\($0)'? " } ?? ""
        throw ScenarioError(
            .unknownScenario, field: "scenario id",
            problem: "no scenario has the id '\(id)'.",
            fix: "\(hint)`pinlab scenarios list` shows all \(scenarios.count) ids.")
    }

    /// The scenarios with these ids, in catalogue order; each id must exist. An empty list keeps everything.
    public func selecting(_ ids: [String]) throws -> Catalogue {
        if ids.isEmpty { return self }
        for id in ids { _ = try scenario(id) }
        return Catalogue(scenarios: scenarios.filter { ids.contains($0.id) })
    }

    /// Loads every `*.yaml` file of a directory (not recursively). Collects one error per broken file and
    /// duplicate ids, and throws them all at once.
    public static func load(directory: URL, identities: IdentityDirectory = .lab, displayPrefix: String? = nil) throws
        -> Catalogue
    {
        let prefix = displayPrefix ?? (directory.lastPathComponent + "/")
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "yaml" || $0.pathExtension == "yml" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        } catch {
            throw CatalogueError(errors: [
                ScenarioError(
                    .unreadable, file: directory.path,
                    problem: "the scenario directory cannot be read (\(error.localizedDescription)).",
                    fix: "pass a directory that holds scenario files (*.yaml).")
            ])
        }
        if files.isEmpty {
            throw CatalogueError(errors: [
                ScenarioError(
                    .emptyCatalogue, file: directory.path,
                    problem: "the directory holds no scenario file (*.yaml).",
                    fix: "pass the directory that holds the scenario files, e.g. scenarios/.")
            ])
        }
        return try assemble(
            files.map { url in
                let name = prefix + url.lastPathComponent
                return (name, { try ScenarioLoader.load(contentsOf: url, displayName: name, identities: identities) })
            })
    }

    /// Loads scenario files given as text (`name` as shown in errors, e.g. `scenarios/rekey.yaml`; the id must be
    /// its last component without `.yaml`), with the checks of `load(directory:)`: the embedded copy of the bundled
    /// catalogue is read this way.
    static func load(texts: [(name: String, text: String)], identities: IdentityDirectory = .lab) throws -> Catalogue {
        try assemble(
            texts.sorted { $0.name < $1.name }.map { file in
                (
                    file.name,
                    {
                        let id = String(file.name.split(separator: "/").last ?? "").replacingOccurrences(
                            of: ".yaml", with: "")
                        var s = try ScenarioLoader.parse(
                            yaml: file.text, file: file.name, identities: identities, expectedID: id)
                        s.source = file.name
                        return s
                    }
                )
            })
    }

    /// Every file's scenario (each loader throws a `ScenarioError`), with one error per broken file, duplicate id or
    /// duplicate scenario, thrown all at once.
    /// The files are parsed side by side (their YAML was a quarter of a one-cell `pinlab check`'s samples in
    /// `perf record`); errors and duplicates are then collected in file order.
    private static func assemble(_ files: [(name: String, load: @Sendable () throws -> Scenario)]) throws -> Catalogue {
        var errors: [ScenarioError] = []
        var scenarios: [Scenario] = []
        var seen: [String: String] = [:]
        let parsed = Locked([Result<Scenario, any Error>?](repeating: nil, count: files.count))
        let loads = files.map(\.load)
        DispatchQueue.concurrentPerform(iterations: loads.count) { i in
            let r = Result { try loads[i]() }
            parsed.withLock { $0[i] = r }
        }
        for ((name, _), result) in zip(files, parsed.withLock { $0 }) {
            do {
                guard let result else { continue }
                let s = try result.get()
                if let other = seen[s.id] {
                    errors.append(
                        ScenarioError(
                            .duplicateID, file: name, line: 1, field: "id",
                            problem: "the id '\(s.id)' is already used by \(other).",
                            fix: "give each scenario its own id."))
                    continue
                }
                seen[s.id] = name
                scenarios.append(s)
            } catch let e as ScenarioError {
                errors.append(e)
            }
        }
        for group in identicalGroups(scenarios) {
            let first = group[0].source ?? group[0].id
            for other in group.dropFirst() {
                errors.append(
                    ScenarioError(
                        .duplicateScenario, file: other.source ?? other.id, line: 1, field: "",
                        problem:
                            "the scenario '\(other.id)' shows exactly what \(first) shows: the same chain, trust, TLS versions, ciphers, client authentication, host, pin scope, CT, expected rows and steps (and alternatives, groups, ECH).",
                        fix:
                            "make it show something no other scenario does (change what the server presents, what the client trusts or asks for), or remove it."
                    ))
            }
        }
        if !errors.isEmpty { throw CatalogueError(errors: errors) }
        return Catalogue(scenarios: scenarios)
    }

    /// Groups of scenarios (two or more, by id) that show the same thing: the same chain on the wire, trust
    /// profile, TLS versions, cipher suites, client authentication (mode, trusted CAs, certificate presented),
    /// host name, pin scope and expected row. Empty for a good catalogue; `load(directory:)` refuses a catalogue that has one.
    public var identicalScenarios: [[String]] { Self.identicalGroups(scenarios).map { $0.map(\.id) } }

    private struct Substance: Hashable {
        var chain: [String]
        var trust: String
        var versions: [TLSVersion]
        var ciphers: [String]
        var clientAuth: ClientAuthentication
        var clientAuthTrust: [String]
        var present: String?
        var host: String
        var pinScope: PinScope?
        var row: String
        var resumption: SessionResumption.Mode
        var parties: [String: Scenario.Server]
        var steps: [Scenario.Step]
        /// The stapled OCSP response, and the rows per declared client check.
        var staple: OCSPVariant?
        var responder: RevocationResponderMode?
        var conditional: ConditionalExpectations?
        /// Whether CT is turned on for the host (the `ct` tag: the runner gives the client the lab's log list).
        var certificateTransparency: Bool
        /// The host's other chains and what serving each changes, its groups and its ECH service.
        var alternatives: [[String]]
        var served: [String: [PinProfile: Expectation]]
        var groups: [String]
        var ech: EncryptedClientHelloService?

        init(_ s: Scenario) {
            alternatives = s.server.alternatives
            served = s.servedExpectations
            groups = s.server.groups
            ech = s.server.ech
            certificateTransparency = s.tags.contains("ct")
            staple = s.server.ocspStaple
            responder = s.server.responder
            conditional = s.conditional
            resumption = s.server.resumption
            parties = s.parties
            steps = s.steps
            chain = s.server.chain
            trust = s.client.trust.rawValue
            versions = s.server.tlsVersions
            ciphers = s.server.cipherSuites
            clientAuth = s.server.clientAuth
            clientAuthTrust = s.server.clientAuthTrust
            present = s.client.present
            host = s.client.host
            pinScope = s.client.pinScope
            row = s.expectedRow
        }
    }

    private static func identicalGroups(_ scenarios: [Scenario]) -> [[Scenario]] {
        var groups: [Substance: [Scenario]] = [:]
        var order: [Substance] = []
        for s in scenarios.sorted(by: teachingOrder) {
            let key = Substance(s)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(s)
        }
        return order.compactMap { groups[$0]!.count > 1 ? groups[$0]! : nil }
    }

    /// Checks that ids are unique across already parsed scenarios (for catalogues built in code).
    public static func checkUnique(_ scenarios: [Scenario]) throws {
        var seen: [String: String] = [:]
        for s in scenarios {
            if let other = seen[s.id] {
                throw ScenarioError(
                    .duplicateID, file: s.source ?? s.id, line: 1, field: "id",
                    problem: "the id '\(s.id)' is already used by \(other).", fix: "give each scenario its own id.")
            }
            seen[s.id] = s.source ?? s.id
        }
    }

    /// The directory of the catalogue bundled with the library.
    public static var bundledDirectory: URL? {
        BuiltInLab.scenariosDirectory
    }

    private static let bundledResult: Result<Catalogue, CatalogueError> = {
        if BuiltInLab.resourceBundleIsMissing {
            // A binary copied away from its build folder: the copy embedded in the code (the same files).
            let texts = BuiltInLab.embeddedScenarioFiles
            do {
                return .success(try load(texts: texts))
            } catch let e as CatalogueError {
                return .failure(e)
            } catch {
                return .failure(CatalogueError(errors: []))
            }
        }
        guard let dir = bundledDirectory else {
            return .failure(
                CatalogueError(errors: [
                    ScenarioError(
                        .unreadable, file: "PinningLab resources",
                        problem: "the bundled scenarios folder is missing from the PinningLabModel resource bundle.",
                        fix: "rebuild the package; if it persists, report a packaging bug.")
                ]))
        }
        do {
            return .success(try load(directory: dir, displayPrefix: "scenarios/"))
        } catch let e as CatalogueError {
            return .failure(e)
        } catch {
            return .failure(CatalogueError(errors: []))
        }
    }()

    /// The catalogue bundled with the library (loaded and validated once).
    public static func bundled() throws -> Catalogue { try bundledResult.get() }

    /// Teaching order: by each scenario's `order:` (the bundled catalogue: the baseline first, then rotation,
    /// validity, host name, scope, trust, chain, weak crypto, protocol, key types and mutual TLS), then by id;
    /// scenarios without an order after those with one.
    static func teachingOrder(_ a: Scenario, _ b: Scenario) -> Bool {
        (a.order ?? Int.max, a.id) < (b.order ?? Int.max, b.id)
    }

    /// The catalogue as a Markdown table: id, what the server does, the expected outcome per pin profile
    /// (A accept, X refuse). The Catalogue article of the documentation is this table.
    public func markdownTable() -> String {
        var out =
            "| scenario | what the server does | " + PinProfile.all.map { "`\($0.rawValue)`" }.joined(separator: " | ")
            + " | a correct client refuses for |\n"
        out += "|---|---|" + PinProfile.all.map { _ in ":-:" }.joined(separator: "|") + "|---|\n"
        for s in scenarios {
            let title = s.title.replacingOccurrences(of: "|", with: "\\|")
            out +=
                "| `\(s.id)` | \(title) | "
                + PinProfile.all.map { s.expected($0) == .accept ? "A" : "X" }.joined(separator: " | ")
                + " | \(s.refusal?.rawValue ?? "—") |\n"
        }
        return out
    }
}
