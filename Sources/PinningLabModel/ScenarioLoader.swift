public import Foundation
import PinningLabBase
import PinningLabPKI
import PinningLabTLSTypes
internal import Yams

/// Reads and validates scenario files. Every problem is reported as a `ScenarioError` naming the file, the line,
/// the field, what is wrong and how to fix it.
public enum ScenarioLoader {
    /// The keys a scenario file may hold, in the order the documentation lists them.
    public static let topLevelFields = [
        "id", "title", "tags", "order", "teaching", "server", "parties", "client", "refusal", "expect", "steps",
        "policy", "varies", "notes", "expect-if", "expect-served", "mastg",
    ]
    /// The refusal categories a scenario may name.
    public static let refusalCategories: [RefusalCategory] = [
        .pinMismatch, .chainInvalid, .hostname, .clientAuth, .protocolError,
    ]
    static let serverFields = [
        "chain", "alternatives", "tls", "client-auth", "resumption", "ticket-key", "early-data", "ocsp-staple",
        "responder", "ech",
    ]
    static let stepFields = ["host", "party", "pins", "rotate-to", "early-data", "expect"]
    static let tlsFields = ["versions", "ciphers", "alpn", "groups"]
    /// The ALPN protocols a fixture server can speak.
    static let alpnProtocols = ["h2", "http/1.1"]
    static let clientAuthFields = ["mode", "trust"]
    static let clientFields = ["trust", "pinned", "backup", "present", "host", "pin-scope"]
    static let pinScopeFields = ["domain", "subdomains"]

    /// Parses one scenario.
    /// - Parameters:
    ///   - yaml: the file's text.
    ///   - file: the name shown in errors, e.g. `scenarios/rekey.yaml`.
    ///   - identities: the PKI names the scenario may refer to.
    ///   - expectedID: when set, the scenario's id must equal it (the file name without `.yaml`).
    public static func parse(
        yaml: String, file: String, identities: IdentityDirectory = .lab, expectedID: String? = nil
    ) throws -> Scenario {
        let r = Reader(file: file, identities: identities)
        guard let root = try r.yaml.compose(yaml) else {
            throw ScenarioError(
                .notAMapping, file: file, line: 1, problem: "the file is empty.",
                fix: "write a scenario with the fields \(topLevelFields.joined(separator: ", ")).")
        }
        return try r.scenario(root, expectedID: expectedID)
    }

    /// Parses one scenario file from disk; the id must equal the file name without `.yaml`.
    public static func load(
        contentsOf url: URL, displayName: String? = nil, identities: IdentityDirectory = .lab
    ) throws -> Scenario {
        let name = displayName ?? url.lastPathComponent
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw ScenarioError(
                .unreadable, file: name,
                problem:
                    "the file cannot be read as UTF-8 text (\(Storage.whyUnreadable(url.path, fallback: error.localizedDescription))).",
                fix: "check that the file exists, is readable and is saved as UTF-8.")
        }
        let id = url.deletingPathExtension().lastPathComponent
        var s = try parse(yaml: text, file: name, identities: identities, expectedID: id)
        s.source = name
        return s
    }
}

/// Walks the composed YAML node tree and builds a `Scenario`, failing on the first problem.
struct Reader {  // internal: ScenarioChecks.swift extends it
    let file: String
    let identities: IdentityDirectory

    /// The shared YAML node reader, raising `ScenarioError`s of this file.
    var yaml: YAMLReader {
        YAMLReader { [file] fault, line, column, field, problem, fix in
            let code: ScenarioError.Code
            switch fault {
            case .syntax, .duplicateKeys: code = .syntax
            case .notAMapping: code = .notAMapping
            case .wrongType: code = .wrongType
            case .unknownField: code = .unknownField
            case .missingField: code = .missingField
            }
            return ScenarioError(code, file: file, line: line, column: column, field: field, problem: problem, fix: fix)
        }
    }

    func fail(
        _ code: ScenarioError.Code, _ node: Node?, _ field: String, _ problem: String, fix: String
    ) -> ScenarioError {
        ScenarioError(
            code, file: file, line: node?.mark?.line, column: node?.mark?.column, field: field,
            problem: problem, fix: fix)
    }

    func kind(_ node: Node) -> String { YAMLReader.describe(node) }

    func mapping(_ node: Node, _ field: String, allowed: [String]) throws -> Node.Mapping {
        try yaml.mapping(node, field, allowed: allowed)
    }

    func required(_ m: Node.Mapping, _ key: String, in parent: Node, _ field: String, hint: @autoclosure () -> String)
        throws -> Node
    {
        try yaml.required(m, key, in: parent, field, fix: hint())
    }

    func string(_ node: Node, _ field: String, fix: @autoclosure () -> String) throws -> String {
        try yaml.string(node, field, fix: fix())
    }

    func nonEmptyString(_ node: Node, _ field: String, fix: @autoclosure () -> String) throws -> String {
        let s = try string(node, field, fix: fix()).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !s.isEmpty else { throw fail(.wrongType, node, field, "the value is empty.", fix: fix()) }
        return s
    }

    func list(_ node: Node, _ field: String, fix: @autoclosure () -> String) throws -> [(String, Node)] {
        try yaml.strings(node, field, fix: fix())
    }

    /// The one of `choices` whose name is the string at `node`; else `code`, "'TEXT' is not `what`.", and a fix with the
    /// nearest name, every name and `more` (what the names mean).
    func choice<T: RawRepresentable>(
        _ choices: [T], _ node: Node, _ field: String, _ code: ScenarioError.Code, isNot what: String, more: String = ""
    ) throws -> T where T.RawValue == String {
        let names = choices.map(\.rawValue)
        let text = try string(node, field, fix: "use one of \(names.joined(separator: ", ")).")
        guard let i = names.firstIndex(of: text) else {
            let hint = suggestion(text, in: names).map { "Did you mean '\($0)'? " } ?? ""
            throw fail(
                code, node, field, "'\(text)' is not \(what).",
                fix: "\(hint)Use one of \(names.joined(separator: ", "))\(more).")
        }
        return choices[i]
    }

    /// An identity name that exists in the PKI and, when `roles` is given, has one of those roles.
    func identity(_ name: String, _ node: Node, _ field: String, roles: [Role]?, purpose: String) throws -> String {
        guard let entry = identities[name] else {
            let candidates = roles.map { r in r.flatMap { identities.names(withRole: $0) } } ?? identities.names
            let hint = suggestion(name, in: candidates).map { "Did you mean '\($0)'? " } ?? ""
            throw fail(
                .unknownIdentity, node, field, "'\(name)' is not an identity of the PKI.",
                fix: "\(hint)Use one of: \(candidates.joined(separator: ", ")) (`pinlab pki list` shows them all).")
        }
        if let roles, !roles.contains(entry.role) {
            let allowed = roles.flatMap { identities.names(withRole: $0) }
            throw fail(
                .wrongRole, node, field,
                "'\(name)' is \(entry.role.withArticle) but \(purpose) must be \(roles.map(\.withArticle).joined(separator: " or ")).",
                fix: "use one of: \(allowed.joined(separator: ", ")).")
        }
        return name
    }

    /// The identity named by the string at `node` (`fix` says what to write when it is not a string).
    func identity(at node: Node, _ field: String, fix: String, roles: [Role], purpose: String) throws -> String {
        try identity(try string(node, field, fix: fix), node, field, roles: roles, purpose: purpose)
    }

    func scenario(_ root: Node, expectedID: String?) throws -> Scenario {
        let top = try mapping(root, "", allowed: ScenarioLoader.topLevelFields)

        // id
        let idNode = try required(
            top, "id", in: root, "", hint: "add `id: <file name without .yaml>` as the first line.")
        let id = try nonEmptyString(
            idNode, "id", fix: "write the id as lower-case words joined by dashes, e.g. `id: expired-leaf`.")
        let idOK =
            id.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
            }
            && !(id.first == "-" || id.first == ".")
        guard idOK else {
            throw fail(
                .invalidID, idNode, "id", "'\(id)' is not a valid scenario id.",
                fix: "use lower-case letters, digits, dots and dashes only, starting with a letter or digit.")
        }
        if let expectedID, expectedID != id {
            throw fail(
                .idMismatch, idNode, "id", "the id '\(id)' does not match the file name '\(expectedID).yaml'.",
                fix: "rename the file to '\(id).yaml' or change the id to '\(expectedID)'.")
        }

        let title = try nonEmptyString(
            try required(top, "title", in: root, "", hint: "add `title: <one line saying what the server does>`."),
            "title", fix: "write a one-line title; quote it if it contains ': '.")
        let teaching = try nonEmptyString(
            try required(
                top, "teaching", in: root, "",
                hint:
                    "add `teaching: >` followed by an indented paragraph: what happens in production, what a correct client does and why."
            ),
            "teaching", fix: "write a paragraph: what happens in production, what a correct client does and why.")
        var tags: [String] = []
        if let t = top["tags"] {
            tags = try list(t, "tags", fix: "write tags as a list, e.g. `tags: [rotation]`.").map(\.0)
        }
        var mastg: [String] = []
        if let m = top["mastg"] {
            let tests = MASTG.entries.filter { $0.id.hasPrefix("MASTG-TEST-") }.map(\.id)
            for (id, node) in try list(
                m, "mastg", fix: "write the MASTG tests as a list, e.g. `mastg: [MASTG-TEST-0283]`.")
            {
                guard tests.contains(id) else {
                    let hint = suggestion(id, in: tests).map { "Did you mean '\($0)'? " } ?? ""
                    throw fail(
                        .unknownMASTGTest, node, "mastg", "'\(id)' is not an OWASP MASTG test PinningLab lists.",
                        fix:
                            "\(hint)name one of \(tests.joined(separator: ", ")), or add the test with its title as OWASP/owasp-mastg has it to MASTG.entries (Sources/PinningLabModel/MASTG.swift)."
                    )
                }
                mastg.append(id)
            }
        }

        var order: Int?
        if let o = top["order"] {
            let text = try string(o, "order", fix: "write a whole number, e.g. `order: 120`.")
            guard let n = Int(text), n >= 0 else {
                throw fail(
                    .wrongType, o, "order", "'\(text)' is not a whole number of 0 or more.",
                    fix:
                        "write the scenario's place in the teaching order as a whole number, e.g. `order: 120` (the catalogue sorts by it, then by id; leave gaps of 10 so a scenario fits between two others)."
                )
            }
            order = n
        }

        let server = try serverSide(
            try required(
                top, "server", in: root, "",
                hint: "add a `server:` mapping with at least `chain: [leaf, intermediate]`."))
        let client = try clientSide(
            try required(top, "client", in: root, "", hint: "add a `client:` mapping with at least `trust: lab-root`."),
            server: server)

        var parties: [String: Scenario.Server] = [:]
        if let pn = top["parties"] {
            for (k, v) in try yaml.mapping(
                pn, "parties", fix: "write one server per party, e.g. `interceptor: {chain: [proxy-leaf-api]}`.")
            {
                let name = k.string ?? ""
                guard !name.isEmpty, name != Scenario.genuineParty,
                    name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" })
                else {
                    throw fail(
                        .wrongType, k, "parties.\(name)", "'\(name)' cannot name a party.",
                        fix:
                            "use letters, digits and dashes; `\(Scenario.genuineParty)` is the scenario's own `server`."
                    )
                }
                parties[name] = try serverSide(v, "parties.\(name)")
            }
        }

        // expect, or steps (each with its own expect)
        var steps: [Scenario.Step] = []
        let expectations: [PinProfile: Expectation]
        if let stepsNode = top["steps"] {
            if let e = top["expect"] {
                throw fail(
                    .unknownField, e, "expect", "a scenario with `steps` states its expectations per step.",
                    fix: "move the `expect:` rows into the steps (the last step's row is the scenario's).")
            }
            guard case .sequence(let seq) = stepsNode, seq.count >= 2 else {
                throw fail(
                    .wrongType, stepsNode, "steps", "`steps` must list at least two connections.",
                    fix:
                        "write a list of steps, each with `host`, `party`, `pins` and `expect`; a scenario of one connection needs no `steps`."
                )
            }
            for (i, n) in seq.enumerated() {
                steps.append(try step(n, "steps[\(i)]", parties: parties, defaultHost: nil))
            }
            expectations = steps.last!.expectations
        } else {
            let expectNode = try required(
                top, "expect", in: root, "",
                hint:
                    "add an `expect:` mapping with accept or refuse for each of \(PinProfile.all.map(\.rawValue).joined(separator: ", "))."
            )
            expectations = try self.expectations(expectNode)
            if let pn = top["parties"], !parties.isEmpty {
                throw fail(
                    .unknownField, pn, "parties", "parties answer steps, but the scenario has no `steps`.",
                    fix: "add `steps:` naming the parties, or remove `parties`.")
            }
        }

        var notes: [PinProfile: String] = [:]
        if let n = top["notes"] {
            for (profile, v) in try profileMapping(
                n, "notes", fix: "write one line per profile, e.g. `leaf-spki: \"K2 was the backup\"`.")
            {
                notes[profile] = try nonEmptyString(
                    v, "notes.\(profile.rawValue)", fix: "write the note as text; quote it if it contains ': '.")
            }
        }

        let conditional = try top["expect-if"].map { try conditionalExpectations($0, expectations: expectations) }
        let served = try top["expect-served"].map {
            try servedExpectations($0, server: server, expectations: expectations)
        }
        var refusal: RefusalCategory?
        if let r = top["refusal"] {
            let category = try choice(
                ScenarioLoader.refusalCategories, r, "refusal", .badRefusal, isNot: "a refusal category")
            guard
                expectations.values.contains(.refuse)
                    || steps.contains(where: { $0.expectations.values.contains(.refuse) })
                    || conditional?.entries.contains(where: { $0.expectations.values.contains(.refuse) }) == true
                    || served?.values.contains(where: { $0.values.contains(.refuse) }) == true
            else {
                throw fail(
                    .badRefusal, r, "refusal", "the scenario names a refusal category but expects no refusal.",
                    fix: "remove `refusal`, or expect `refuse` for the profiles a correct client refuses.")
            }
            refusal = category
        }

        let policy = try top["policy"].map { try self.policy($0, expectations: expectations) }
        var pathVariance: Set<PinProfile> = []
        let variance =
            try top["varies"].map { try self.variance($0, expectations: expectations, pathBuilding: &pathVariance) }
            ?? [:]

        var scenario = Scenario(
            id: id, title: title, tags: tags, order: order, teaching: teaching, server: server,
            client: client, expectations: expectations, notes: notes, refusal: refusal, source: file,
            policy: policy, variance: variance)
        scenario.parties = parties
        scenario.steps = steps
        scenario.pathVariance = pathVariance
        scenario.conditional = conditional
        scenario.mastg = mastg
        if let n = top["expect-served"], let served {
            scenario.servedExpectations = served
            if !steps.isEmpty {
                throw fail(
                    .unknownField, n, "expect-served", "a scenario with `steps` cannot follow the certificate served.",
                    fix: "give the host's alternatives a one-connection scenario of their own.")
            }
        }
        return scenario
    }

    /// `expect-served:` — per alternative chain of `server` (by its first identity), the profiles whose expectation
    /// differs when that chain is served; unlisted profiles follow `expect`.
    func servedExpectations(
        _ node: Node, server: Scenario.Server, expectations: [PinProfile: Expectation]
    ) throws -> [String: [PinProfile: Expectation]] {
        let alternatives = server.alternatives.map { $0[0] }
        let shape =
            "write one line per alternative chain of `server.alternatives` (its first identity), e.g. `leaf-rsa-2048: {leaf-spki: refuse}`."
        guard !alternatives.isEmpty else {
            throw fail(
                .unknownField, node, "expect-served", "the server holds one chain, so no other can be served.",
                fix: "add `server.alternatives`, or remove `expect-served`.")
        }
        var out: [String: [PinProfile: Expectation]] = [:]
        for (k, v) in try yaml.mapping(node, "expect-served", fix: shape) {
            let key = k.string ?? ""
            let field = "expect-served.\(key)"
            guard alternatives.contains(key) else {
                let hint = suggestion(key, in: alternatives).map { "Did you mean '\($0)'? " } ?? ""
                throw fail(
                    .wrongType, k, field, "'\(key)' is not the first certificate of one of the host's alternatives.",
                    fix: "\(hint)name one of \(alternatives.joined(separator: ", ")); `expect` is for `server.chain`.")
            }
            var row: [PinProfile: Expectation] = [:]
            for (profile, pv) in try profileMapping(
                v, field,
                fix: "write one line per profile, e.g. `leaf-spki: refuse`; unlisted profiles follow `expect`.")
            {
                guard case .scalar = pv, let e = Expectation(rawValue: pv.string ?? "") else {
                    throw fail(
                        .wrongType, pv, "\(field).\(profile.rawValue)",
                        "'\(pv.string ?? kind(pv))' is not an expectation.",
                        fix: "write `accept` or `refuse`.")
                }
                row[profile] = e
            }
            guard row.contains(where: { expectations[$0.key] != $0.value }) else {
                throw fail(
                    .wrongType, v, field, "every line expects what `expect` says, so serving '\(key)' changes nothing.",
                    fix: "list only the profiles whose outcome differs when '\(key)' is served, or remove the line.")
            }
            out[key] = row
        }
        return out
    }

    /// `policy:` — `reason:` and one line per platform: `accept`/`refuse` for every profile, or a mapping per profile.
    func policy(_ node: Node, expectations: [PinProfile: Expectation]) throws -> Scenario.Policy {
        let names = PlatformPolicy.names
        let shape =
            "write `policy:` with `reason: <why the platform decides>` and one line per platform, e.g. `ats: refuse` or `jdk: {none: accept, leaf-cert: accept, …}` (platforms: \(names.joined(separator: ", ")))."
        let m = try yaml.mapping(node, "policy", fix: shape)
        var reason: String?
        var out: [PlatformPolicy: [PinProfile: Expectation]] = [:]
        for (k, v) in m {
            let key = k.string ?? ""
            if key == "reason" {
                reason = try nonEmptyString(
                    v, "policy.reason",
                    fix: "say in one sentence why the platform, not the pinning logic, decides these cells.")
                continue
            }
            guard let platform = PlatformPolicy.named(key) else {
                let hint = didYouMean(key, names + ["reason"])
                throw fail(
                    .badPolicy, k, "policy.\(key)", "'\(key)' is not a platform policy.",
                    fix:
                        "\(hint.isEmpty ? "" : hint + " ")Platforms: \(names.joined(separator: ", ")) (the Catalogue article lists their sources)."
                )
            }
            let field = "policy.\(key)"
            if case .scalar = v {
                let text = v.string ?? ""
                guard let e = Expectation(rawValue: text) else {
                    throw fail(
                        .badPolicy, v, field, "'\(text)' is not an expectation.",
                        fix: "write `\(key): accept` or `\(key): refuse` (every profile), or a mapping per profile.")
                }
                out[platform] = Dictionary(uniqueKeysWithValues: PinProfile.all.map { ($0, e) })
            } else {
                var row: [PinProfile: Expectation] = [:]
                for (profile, pv) in try profileMapping(
                    v, field,
                    fix: "write one line per profile, e.g. `none: accept`, or `\(key): accept` for every profile.")
                {
                    guard case .scalar = pv, let e = Expectation(rawValue: pv.string ?? "") else {
                        throw fail(
                            .badPolicy, pv, "\(field).\(profile.rawValue)",
                            "'\(pv.string ?? YAMLReader.describe(pv))' is not an expectation.",
                            fix: "write `accept` or `refuse`.")
                    }
                    row[profile] = e
                }
                let missing = PinProfile.all.filter { row[$0] == nil }
                if !missing.isEmpty {
                    throw fail(
                        .badPolicy, v, "\(field).\(missing[0].rawValue)",
                        "no expectation on \(key) for the profile(s) \(missing.map(\.rawValue).joined(separator: ", ")).",
                        fix: "list every profile under `\(field)`, or write `\(key): accept|refuse` for all of them.")
                }
                out[platform] = row
            }
        }
        guard let reason else {
            throw fail(
                .badPolicy, node, "policy.reason", "the policy gives no reason.",
                fix: "add `reason: <why the platform, not the pinning logic, decides these cells>` under `policy`.")
        }
        guard !out.isEmpty else {
            throw fail(
                .badPolicy, node, "policy", "the policy names no platform.",
                fix:
                    "add one line per platform whose clients differ from `expect`, e.g. `openssl-default: accept` (platforms: \(names.joined(separator: ", ")))."
            )
        }
        let decides = PinProfile.all.contains { p in
            Set(out.values.compactMap { $0[p] } + [expectations[p] ?? .refuse]).count > 1
        }
        guard decides else {
            throw fail(
                .badPolicy, node, "policy",
                "every platform listed expects what `expect` says, so no platform decides any cell.",
                fix: "remove `policy`, or list the platforms whose correct clients do otherwise.")
        }
        return Scenario.Policy(reason: reason, expectations: out)
    }

    /// `varies:` — profile: reason, where correct verifiers legitimately differ; the expectation must be accept.
    func variance(_ node: Node, expectations: [PinProfile: Expectation], pathBuilding: inout Set<PinProfile>) throws
        -> [PinProfile: String]
    {
        var out: [PinProfile: String] = [:]
        if case .scalar = node {
            // One reason for every profile.
            let why = try nonEmptyString(
                node, "varies", fix: "say which verifiers differ and why, quoted if it contains ': '.")
            if let p = PinProfile.all.first(where: { expectations[$0] != .accept }) {
                throw fail(
                    .badVariance, node, "varies",
                    "`expect.\(p.rawValue)` is refuse: an acceptance there is a flaw, so the cell cannot vary.",
                    fix: "list the profiles that may vary (`varies: {none: \"…\"}`), each expected to accept.")
            }
            for p in PinProfile.all { out[p] = why }
            return out
        }
        for (profile, v) in try profileMapping(
            node, "varies", fix: "write one line per profile: `none: \"OpenSSL accepts, GnuTLS refuses: …\"`.")
        {
            let field = "varies.\(profile.rawValue)"
            var reasonNode = v
            if case .mapping = v {
                // `{reason: "…", path-building: true}`: verifiers validate different paths here.
                let m = try mapping(v, field, allowed: ["reason", "path-building"])
                reasonNode = try required(
                    m, "reason", in: v, field, hint: "add `reason: \"which verifiers differ and why\"`.")
                if let pb = m["path-building"] {
                    guard case .scalar = pb, pb.string == "true" || pb.string == "false" else {
                        throw fail(
                            .badVariance, pb, "\(field).path-building", "not true or false.",
                            fix: "write `path-building: true` when the verifiers differ in the path they validate.")
                    }
                    if pb.string == "true" { pathBuilding.insert(profile) }
                }
            }
            let why = try nonEmptyString(
                reasonNode, field, fix: "say which verifiers differ and why, quoted if it contains ': '.")
            guard expectations[profile] == .accept else {
                throw fail(
                    .badVariance, v, field,
                    "`expect.\(profile.rawValue)` is refuse: an acceptance there is a flaw, so the cell cannot vary.",
                    fix:
                        "mark only cells a correct client may accept (`expect: accept`) as varying, or remove the line."
                )
            }
            out[profile] = why
        }
        return out
    }

    func step(_ node: Node, _ field: String, parties: [String: Scenario.Server], defaultHost: String?) throws
        -> Scenario.Step
    {
        let m = try mapping(node, field, allowed: ScenarioLoader.stepFields)
        let host = try hostName(
            try required(
                m, "host", in: node, field, hint: "add `host: api.pinning.test`, the name the client asks for."),
            "\(field).host", spelling: true)
        var party = Scenario.genuineParty
        if let pn = m["party"] {
            party = try nonEmptyString(
                pn, "\(field).party", fix: "name `\(Scenario.genuineParty)` or a party under `parties`.")
            guard party == Scenario.genuineParty || parties[party] != nil else {
                let known = [Scenario.genuineParty] + parties.keys.sorted()
                throw fail(
                    .unknownIdentity, pn, "\(field).party", "'\(party)' is not a party of this scenario.",
                    fix: "use one of \(known.joined(separator: ", ")), or define it under `parties`.")
            }
        }
        var pins = Scenario.Step.Pins.inForce
        if let pn = m["pins"] {
            let names = Scenario.Step.Pins.all.map(\.rawValue)
            let text = try string(pn, "\(field).pins", fix: "write `pins: in-force` or `pins: absent`.")
            guard let p = Scenario.Step.Pins.all.first(where: { $0.rawValue == text }) else {
                throw fail(
                    .wrongType, pn, "\(field).pins", "'\(text)' is not \(names.joined(separator: " or ")).",
                    fix: "write `pins: in-force` (the client applies its pins) or `pins: absent` (it has none yet).")
            }
            pins = p
        }
        var rotateTo: [String]?
        if let rn = m["rotate-to"] {
            let rotated = try serverSide(Node.mapping(Node.Mapping([(Node("chain"), rn)])), "\(field).rotate-to")
            rotateTo = rotated.chain
        }
        var earlyData = false
        if let en = m["early-data"] {
            let text = try string(en, "\(field).early-data", fix: "write `early-data: send` or `early-data: none`.")
            guard text == "send" || text == "none" else {
                throw fail(
                    .wrongType, en, "\(field).early-data", "'\(text)' is not send or none.",
                    fix:
                        "write `early-data: send` (the client sends its request as 0-RTT early data when its session allows) or `early-data: none`."
                )
            }
            earlyData = text == "send"
        }
        let expectNode = try required(
            m, "expect", in: node, field, hint: "add `expect:` with accept or refuse for each pin profile.")
        let expectations = try self.expectations(expectNode, field: "\(field).expect")
        var step = Scenario.Step(host: host, party: party, pins: pins, rotateTo: rotateTo, expectations: expectations)
        step.earlyData = earlyData
        return step
    }

    /// A chain of identity names, leaf first (`server.chain`, one of `server.alternatives`): not empty, its first
    /// a leaf, none listed twice.
    func chainList(_ chainNode: Node, _ listField: String) throws -> [String] {
        let entries = try list(
            chainNode, listField, fix: "list identity names, leaf first: `chain: [leaf-v1, lab-intermediate-a]`.")
        guard !entries.isEmpty else {
            throw fail(
                .emptyChain, chainNode, listField,
                "the chain references no certificate; a server must send at least its own.",
                fix: "list the certificates the server sends, leaf first: `chain: [leaf-v1, lab-intermediate-a]`.")
        }
        var chain: [String] = []
        for (i, (name, n)) in entries.enumerated() {
            let field = "\(listField)[\(i)]"
            if i == 0 {
                _ = try identity(
                    name, n, field, roles: [.leaf],
                    purpose: "the first certificate of the chain (the server's own, whose key the server uses)")
            } else {
                _ = try identity(name, n, field, roles: nil, purpose: "")
            }
            if let first = chain.firstIndex(of: name) {
                throw fail(
                    .duplicateInChain, n, field, "'\(name)' is already listed at \(listField)[\(first)].",
                    fix: "list each certificate once.")
            }
            chain.append(name)
        }
        return chain
    }

    func serverSide(_ node: Node, _ field: String = "server") throws -> Scenario.Server {
        let m = try mapping(node, field, allowed: ScenarioLoader.serverFields)
        let chainNode = try required(
            m, "chain", in: node, field,
            hint: "list the certificates the server sends, leaf first: `chain: [leaf-v1, lab-intermediate-a]`.")
        let chain = try chainList(chainNode, "\(field).chain")
        var alternatives: [[String]] = []
        if let an = m["alternatives"] {
            let shape =
                "list more chains of the same host, each leaf first: `alternatives: [[leaf-rsa-2048, lab-intermediate-a]]`."
            guard case .sequence(let seq) = an, !seq.isEmpty else {
                throw fail(
                    .wrongType, an, "\(field).alternatives", "`alternatives` must be a list of chains.", fix: shape)
            }
            for (i, n) in seq.enumerated() {
                let alternative = try chainList(n, "\(field).alternatives[\(i)]")
                let firsts = [chain[0]] + alternatives.map { $0[0] }
                if firsts.contains(alternative[0]) {
                    throw fail(
                        .duplicateInChain, n, "\(field).alternatives[\(i)]",
                        "'\(alternative[0])' is already the server certificate of another chain of this host.",
                        fix: "give each alternative its own server certificate (an RSA, ECDSA or ML-DSA one).")
                }
                alternatives.append(alternative)
            }
        }

        var versions: [TLSVersion] = [.tls12, .tls13]
        var ciphers: [String] = []
        var alpn = ["http/1.1"]
        var groups: [String] = []
        if let t = m["tls"] {
            let tm = try mapping(t, "\(field).tls", allowed: ScenarioLoader.tlsFields)
            if let v = tm["versions"] {
                let all = TLSVersion.all.map(\.scenarioName)
                let items = try list(v, "\(field).tls.versions", fix: "e.g. `versions: [tls1.2, tls1.3]`.")
                guard !items.isEmpty else {
                    throw fail(
                        .badTLSVersion, v, "\(field).tls.versions", "the list of TLS versions is empty.",
                        fix:
                            "name at least one of \(all.joined(separator: ", ")), or remove the field for the default (tls1.2, tls1.3)."
                    )
                }
                versions = []
                for (i, (name, n)) in items.enumerated() {
                    guard let version = TLSVersion(scenarioName: name) else {
                        let hint = suggestion(name, in: all).map { "Did you mean '\($0)'? " } ?? ""
                        throw fail(
                            .badTLSVersion, n, "\(field).tls.versions[\(i)]",
                            "'\(name)' is not a TLS version this lab knows.",
                            fix: "\(hint)Use \(all.joined(separator: ", ")).")
                    }
                    versions.append(version)
                }
                versions = Array(Set(versions)).sorted()
            }
            if let a = tm["alpn"] {
                let known = ScenarioLoader.alpnProtocols
                let items = try list(a, "\(field).tls.alpn", fix: "e.g. `alpn: [h2, http/1.1]`.")
                guard !items.isEmpty else {
                    throw fail(
                        .wrongType, a, "\(field).tls.alpn", "the list of ALPN protocols is empty.",
                        fix:
                            "name at least one of \(known.joined(separator: ", ")), or remove the field for the default (http/1.1)."
                    )
                }
                alpn = []
                for (i, (name, n)) in items.enumerated() {
                    guard known.contains(name) else {
                        let hint = suggestion(name, in: known).map { "Did you mean '\($0)'? " } ?? ""
                        throw fail(
                            .wrongType, n, "\(field).tls.alpn[\(i)]",
                            "'\(name)' is not an ALPN protocol a fixture server speaks.",
                            fix: "\(hint)Use \(known.joined(separator: " or ")), in the server's order of preference.")
                    }
                    if !alpn.contains(name) { alpn.append(name) }
                }
            }
            if let g = tm["groups"] {
                let known = TLSCodePoint.groupNames.values.sorted()
                let items = try list(g, "\(field).tls.groups", fix: "e.g. `groups: [x25519, secp256r1]`.")
                guard !items.isEmpty else {
                    throw fail(
                        .wrongType, g, "\(field).tls.groups", "the list of key-exchange groups is empty.",
                        fix: "name at least one group (IANA names, e.g. x25519), or remove the field for the default.")
                }
                for (i, (name, n)) in items.enumerated() {
                    guard known.contains(name) else {
                        let hint = suggestion(name, in: known).map { "Did you mean '\($0)'? " } ?? ""
                        throw fail(
                            .wrongType, n, "\(field).tls.groups[\(i)]",
                            "'\(name)' is not a key-exchange group this lab knows.",
                            fix: "\(hint)Use IANA names: \(known.joined(separator: ", ")).")
                    }
                    if !groups.contains(name) { groups.append(name) }
                }
            }
            if let c = tm["ciphers"] {
                for (i, (name, n)) in try list(
                    c, "\(field).tls.ciphers", fix: "e.g. `ciphers: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]`."
                ).enumerated() {
                    let ok = name.hasPrefix("TLS_") && name.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }
                    guard ok else {
                        throw fail(
                            .badCipherSuite, n, "\(field).tls.ciphers[\(i)]",
                            "'\(name)' is not an IANA cipher suite name.",
                            fix:
                                "write IANA names such as TLS_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, not OpenSSL names."
                        )
                    }
                    guard CipherSuite.named(name) != nil else {
                        let known = CipherSuite.all.map(\.ianaName)
                        let hint = suggestion(name, in: known).map { "did you mean \($0)? " } ?? ""
                        throw fail(
                            .badCipherSuite, n, "\(field).tls.ciphers[\(i)]",
                            "'\(name)' is not a cipher suite PinningLab can serve on both engines.",
                            fix: "\(hint)known suites: \(known.joined(separator: ", ")).")
                    }
                    ciphers.append(name)
                }
            }
        }

        var mode = ClientAuthentication.none
        var trust: [String] = []
        if let ca = m["client-auth"] {
            let cm = try mapping(ca, "\(field).client-auth", allowed: ScenarioLoader.clientAuthFields)
            let modeNode = try required(
                cm, "mode", in: ca, "\(field).client-auth", hint: "add `mode: required` (or optional, none).")
            mode = try choice(
                ClientAuthentication.all, modeNode, "\(field).client-auth.mode", .badClientAuthMode,
                isNot: "a client authentication mode")
            if let tn = cm["trust"] {
                for (i, (name, n)) in try list(tn, "\(field).client-auth.trust", fix: "e.g. `trust: [client-ca]`.")
                    .enumerated()
                {
                    trust.append(
                        try identity(
                            name, n, "\(field).client-auth.trust[\(i)]", roles: [.root, .intermediate],
                            purpose: "a CA the server accepts client certificates from"))
                }
            }
            if mode != .none && trust.isEmpty {
                throw fail(
                    .missingClientAuthTrust, cm["trust"] ?? ca, "\(field).client-auth.trust",
                    "client authentication is \(mode) but no CA is listed to verify client certificates.",
                    fix: "add `trust: [client-ca]`.")
            }
        }
        var resumption = SessionResumption.Mode.off
        if let r = m["resumption"] {
            resumption = try choice(
                SessionResumption.Mode.all, r, "\(field).resumption", .wrongType, isNot: "a resumption mode",
                more: ": session IDs (TLS 1.2), tickets (TLS 1.2 and 1.3), both, or off")
        }
        var ticketKey: String?
        if let k = m["ticket-key"] {
            ticketKey = try nonEmptyString(
                k, "\(field).ticket-key",
                fix: "name the key the parties that stand for one server share, e.g. `ticket-key: interceptor`.")
            guard resumption.tickets else {
                throw fail(
                    .wrongType, k, "\(field).ticket-key", "a ticket key is named but this server issues no tickets.",
                    fix: "add `resumption: tickets` (or both), or remove `ticket-key`.")
            }
        }
        var earlyData = false
        if let en = m["early-data"] {
            let text = try string(en, "\(field).early-data", fix: "write `early-data: accept` or `early-data: reject`.")
            guard text == "accept" || text == "reject" else {
                throw fail(
                    .wrongType, en, "\(field).early-data", "'\(text)' is not accept or reject.",
                    fix:
                        "write `early-data: accept` (resumed TLS 1.3 clients may send 0-RTT data) or `early-data: reject` (the default)."
                )
            }
            earlyData = text == "accept"
            guard !earlyData || (resumption.tickets && versions.contains(.tls13)) else {
                throw fail(
                    .wrongType, en, "\(field).early-data",
                    "early data needs TLS 1.3 session tickets, and this server issues none.",
                    fix: "add `resumption: tickets` (or both) and offer TLS 1.3, or remove `early-data`.")
            }
        }
        var server = Scenario.Server(
            chain: chain, tlsVersions: versions, cipherSuites: ciphers, clientAuth: mode,
            clientAuthTrust: trust, resumption: resumption, ticketKey: ticketKey)
        server.earlyData = earlyData
        server.alpn = alpn
        if let n = m["ocsp-staple"] {
            server.ocspStaple = try ocspStaple(n, field: "\(field).ocsp-staple")
            if let first = chain.first, identities[first]?.issuer == first {
                throw fail(
                    .badStaple, n, "\(field).ocsp-staple", "'\(first)' is self-signed: no CA answers for it.",
                    fix: "staple for a chain whose first certificate a lab CA issued, or remove ocsp-staple.")
            }
        }
        if let n = m["responder"] {
            server.responder = try responderMode(n, field: "\(field).responder")
        }
        server.alternatives = alternatives
        server.groups = groups
        if let n = m["ech"] {
            server.ech = try choice(
                EncryptedClientHelloService.allCases, n, "\(field).ech", .wrongType,
                isNot: "a way a server holding the ECH key answers an offer")
        }
        return server
    }

    func clientSide(_ node: Node, server: Scenario.Server) throws -> Scenario.Client {
        let m = try mapping(node, "client", allowed: ScenarioLoader.clientFields)
        let trustNode = try required(
            m, "trust", in: node, "client",
            hint: "add `trust: lab-root` (or lab-root+proxy-root for a device with a proxy's root installed).")
        let trustText = try string(
            trustNode, "client.trust", fix: "write root names joined by '+', e.g. `trust: lab-root+proxy-root`.")
        let roots = identities.names(withRole: .root)
        let parts = TrustProfile(rawValue: trustText).roots
        for part in parts {
            // A trust anchor is a root, or an intermediate installed as one (`intermediate-as-trust-anchor`: Apple
            // platforms, Android, the JDK, Go and curl accept any certificate of the store as an anchor).
            guard let e = identities[part], e.role == .root || e.role == .intermediate else {
                let hint = suggestion(part, in: roots).map { "Did you mean '\($0)'? " } ?? ""
                let what =
                    identities[part] == nil
                    ? "is not an identity of the PKI"
                    : "is \(identities[part]!.role.withArticle), not a root (or a CA certificate installed as an anchor)"
                throw fail(
                    .badTrustProfile, trustNode, "client.trust", "bad trust profile '\(trustText)': '\(part)' \(what).",
                    fix:
                        "\(hint)A trust profile is one or more roots joined by '+': lab-root, lab-root+proxy-root (roots: \(roots.joined(separator: ", ")))."
                )
            }
        }
        if Set(parts).count != parts.count {
            throw fail(
                .badTrustProfile, trustNode, "client.trust",
                "bad trust profile '\(trustText)': a root is listed twice.",
                fix: "list each root once, e.g. lab-root+proxy-root.")
        }

        var pinned = Scenario.defaultPinnedIdentity
        if let p = m["pinned"] {
            pinned = try identity(
                at: p, "client.pinned", fix: "name the leaf the client was built for.",
                roles: [.leaf], purpose: "the identity the client was built for")
            if let e = identities[pinned], e.issuer == e.name || identities[e.issuer]?.role == .root {
                throw fail(
                    .wrongRole, p, "client.pinned",
                    "'\(pinned)' has no intermediate above it, so the profile intermediate-spki would pin nothing.",
                    fix: "pin a leaf issued by an intermediate, e.g. leaf-v1.")
            }
        }
        let backup =
            try m["backup"].map {
                try identity(
                    at: $0, "client.backup", fix: "name the identity whose key is the backup pin.",
                    roles: [.leaf], purpose: "the backup pin's identity")
            } ?? Scenario.defaultBackupIdentity
        var present: String?
        if let c = m["present"] {
            let name = try identity(
                at: c, "client.present", fix: "name the client certificate to present, e.g. client-valid.",
                roles: [.client], purpose: "the certificate the client presents")
            guard server.clientAuth != .none else {
                throw fail(
                    .presentWithoutClientAuth, c, "client.present",
                    "the client is told to present '\(name)' but the server never asks for a client certificate.",
                    fix: "add `client-auth: {mode: required, trust: [client-ca]}` under `server`, or remove `present`.")
            }
            present = name
        }
        var host = Scenario.defaultHost
        if let h = m["host"] {
            host = try hostName(h, "client.host", spelling: true)
        }
        var scope: PinScope?
        if let p = m["pin-scope"] {
            let sm = try mapping(p, "client.pin-scope", allowed: ScenarioLoader.pinScopeFields)
            let domain = try hostName(
                try required(
                    sm, "domain", in: p, "client.pin-scope",
                    hint: "add `domain: api.pinning.test`, the host the pins are declared for."),
                "client.pin-scope.domain")
            var subdomains = false
            if let sd = sm["subdomains"] {
                let text = try string(
                    sd, "client.pin-scope.subdomains", fix: "write `subdomains: true` or `subdomains: false`.")
                switch text {
                case "true", "yes": subdomains = true
                case "false", "no": subdomains = false
                default:
                    throw fail(
                        .wrongType, sd, "client.pin-scope.subdomains", "'\(text)' is not true or false.",
                        fix:
                            "write `subdomains: true` (the pins also cover every name below the domain) or `subdomains: false`."
                    )
                }
            }
            scope = PinScope(domain: domain, includeSubdomains: subdomains)
        }
        return Scenario.Client(
            trust: TrustProfile(rawValue: trustText), pinned: pinned, backup: backup, present: present,
            host: host, pinScope: scope)
    }

    /// `client.host` or `client.pin-scope.domain`: a lower-case DNS name that lab-root's name constraints permit (`localhost`, or a name ending
    /// in `.test` or `.localhost`), so that a lab certificate can be issued for it and no real site is named. With
    /// `spelling` (the host a client asks for), the name may be spelled as a user or server could write it: with
    /// upper-case letters and one trailing dot (`API.Pinning.Test`, `api.pinning.test.`); its normal form
    /// (``PinScope/normalizedHost(_:)``) must be a permitted name.
    func hostName(_ node: Node, _ field: String, spelling: Bool = false) throws -> String {
        let fix =
            "write a DNS name under .test, e.g. `host: other.pinning.test` (lab-root may only certify localhost and names under test or localhost)."
        let spelled = try nonEmptyString(node, field, fix: fix)
        let text = spelling ? PinScope.normalizedHost(spelled) : spelled
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        let wellFormed =
            labels.allSatisfy { label in
                !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                    && label.unicodeScalars.allSatisfy {
                        ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
                    }
            } && !(labels.last ?? "").allSatisfy(\.isNumber)
        guard wellFormed else {
            let allowed =
                spelling
                ? "letters, digits and dashes in dot-separated labels, optionally one trailing dot"
                : "lower-case letters, digits and dashes in dot-separated labels"
            throw fail(
                .badHost, node, field,
                "'\(spelled)' is not a DNS host name (\(allowed); no IP address, port, scheme or wildcard).",
                fix: fix)
        }
        let permitted = text == "localhost" || text.hasSuffix(".test") || text.hasSuffix(".localhost")
        guard permitted else {
            throw fail(
                .badHost, node, field,
                "'\(spelled)' is outside lab-root's name constraints, so no lab certificate can be valid for it.",
                fix: fix)
        }
        return spelled
    }

    /// A mapping whose keys are pin profiles (`expect:`, `notes:`), in file order.
    func profileMapping(_ node: Node, _ field: String, fix: String) throws -> [(PinProfile, Node)] {
        let profiles = PinProfile.all.map(\.rawValue)
        return try yaml.mapping(node, field, fix: fix).map { k, v in
            let name = k.string ?? ""
            guard profiles.contains(name) else {
                let hint = didYouMean(name, profiles)
                throw fail(
                    .unknownProfile, k, "\(field).\(name)", "'\(name)' is not a pin profile.",
                    fix: "\(hint.isEmpty ? "" : hint + " ")Pin profiles: \(profiles.joined(separator: ", ")).")
            }
            return (PinProfile(rawValue: name), v)
        }
    }

    func expectations(_ node: Node, field: String = "expect") throws -> [PinProfile: Expectation] {
        var out: [PinProfile: Expectation] = [:]
        let lines = PinProfile.all.map { "`\($0.rawValue): accept`" }.joined(separator: ", ")
        for (profile, v) in try profileMapping(node, field, fix: "write one line per profile: \(lines).") {
            let text = (v.string ?? "")
            guard case .scalar = v, let e = Expectation(rawValue: text) else {
                throw fail(
                    .badExpectation, v, "\(field).\(profile.rawValue)", "'\(text)' is not an expectation.",
                    fix: "write `accept` (the client must send its request) or `refuse` (it must not).")
            }
            out[profile] = e
        }
        let missing = PinProfile.all.filter { out[$0] == nil }
        if !missing.isEmpty {
            throw fail(
                .missingExpectation, node, "\(field).\(missing[0].rawValue)",
                "no expectation for the pin profile(s) \(missing.map(\.rawValue).joined(separator: ", ")).",
                fix:
                    "add \(missing.map { "`\($0.rawValue): accept|refuse`" }.joined(separator: ", ")) under `\(field)`."
            )
        }
        return out
    }
}
