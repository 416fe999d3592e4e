// Reading the labs as data: the list of lab folders (`labs/labs.yaml`) and one lab's definition
// (`labs/NN-name/lab.yaml`), through the package's one YAML node reader. Every problem is a `LabDefinitionError` that
// names the file, the line, the field and the fix.
public import Foundation
import PinningLab
import PinningLabBase
import PinningLabModel
import PinningLabPKI
import Yams

/// A lab list or lab definition that cannot be read: the file, the line and field, what is wrong, and the fix.
public struct LabDefinitionError: Error, Sendable, CustomStringConvertible, LocalizedError, Equatable {
    /// The file as its author finds it: `labs/03-rotation/lab.yaml`, or the path of a folder added from elsewhere.
    public var file: String
    /// 1-based, when the problem is at a node of the file.
    public var line: Int?
    public var column: Int?
    /// The field, as a dotted path: `starter-fails.rekey[0]`, `explanations[2].missed`; "" for the whole file.
    public var field: String
    public var problem: String
    public var fix: String

    public init(file: String, line: Int? = nil, column: Int? = nil, field: String, problem: String, fix: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.problem = problem
        self.fix = fix
    }

    /// `labs/03-rotation/lab.yaml:12:5: starter-fails.rekey[0]: 'leaf' is not a pin profile of this lab. Fix: …`
    public var description: String {
        var s = file
        if let line { s += ":\(line)" + (column.map { ":\($0)" } ?? "") }
        s += ": "
        if !field.isEmpty { s += "\(field): " }
        s += problem
        if !fix.isEmpty { s += " Fix: \(fix)" }
        return s
    }

    public var errorDescription: String? { description }
}

/// Reads one file of the labs: `labs.yaml` (``folders(_:)``) or a lab's `lab.yaml` (``lab(_:number:slug:folder:)``).
struct LabDefinitionReader {
    /// The file, as errors name it.
    let file: String

    var yaml: YAMLReader {
        YAMLReader { [file] _, line, column, field, problem, fix in
            LabDefinitionError(file: file, line: line, column: column, field: field, problem: problem, fix: fix)
        }
    }

    func fail(_ node: Node?, _ field: String, _ problem: String, fix: String) -> LabDefinitionError {
        LabDefinitionError(
            file: file, line: node?.mark?.line, column: node?.mark?.column, field: field, problem: problem, fix: fix)
    }

    /// Turns whatever the reader raised into this file's error (the reader only raises ``LabDefinitionError``s).
    func reading<T>(_ body: () throws -> T) throws(LabDefinitionError) -> T {
        do {
            return try body()
        } catch let error as LabDefinitionError {
            throw error
        } catch {
            throw LabDefinitionError(file: file, field: "", problem: "\(error)", fix: "")
        }
    }

    // MARK: The list

    /// The lab folders `labs.yaml` names, in order, each with its node (for the line of a later error).
    func folders(_ text: String) throws(LabDefinitionError) -> [(name: String, number: Int, node: Node)] {
        try reading {
            let fix =
                "write `labs:` and under it one `- NN-name` line per lab folder beside this file, in teaching order."
            guard let root = try yaml.compose(text) else {
                throw fail(nil, "", "the file is empty.", fix: fix)
            }
            let m = try yaml.mapping(root, "", allowed: ["labs"])
            let list = try yaml.required(m, "labs", in: root, "", fix: fix)
            var seen: [Int: String] = [:]
            var out: [(name: String, number: Int, node: Node)] = []
            for (i, (name, node)) in try yaml.strings(list, "labs", fix: fix).enumerated() {
                let field = "labs[\(i)]"
                guard let number = Self.number(ofFolder: name) else {
                    throw fail(
                        node, field, "'\(YAMLReader.excerpt(name))' is not a lab folder's name.",
                        fix:
                            "name the folder by its number and a few words, lower case with dashes: `11-pinning-in-a-webview`."
                    )
                }
                if let other = seen[number] {
                    throw fail(
                        node, field, "'\(name)' has the number \(number) of '\(other)'.",
                        fix: "give each lab its own number: rename the folder and its entry here.")
                }
                seen[number] = name
                out.append((name, number, node))
            }
            return out
        }
    }

    /// The number a lab folder's name starts with (`03-rotation` → 3), or nil for a name that is not `NN-words`.
    static func number(ofFolder name: String) -> Int? {
        let parts = name.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].isEmpty, let n = Int(parts[0]), n > 0, parts[0].allSatisfy(\.isASCII),
            parts[1].allSatisfy({ ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" })
        else { return nil }
        return n
    }

    // MARK: One lab

    static let fields = [
        "title", "goal", "scenarios", "profiles", "connections", "client-checks", "mistake", "starter-fails",
        "explanations", "lesson", "try-next", "teaching-client", "reference-client", "swift-starter", "starter",
    ]
    static let explanationFields = ["scenario", "profile", "should-have", "missed"]

    /// The lab a `lab.yaml` defines. `number` and `slug` come from its folder's name; `folder` is the folder as a
    /// learner reaches it. `files`, the folder on disk when the definition is read from one (not the embedded copy a
    /// binary carries, whose folder may be elsewhere), must hold the starter the definition names.
    func lab(
        _ text: String, number: Int, slug: String, folder: String, files: URL? = nil
    ) throws(LabDefinitionError) -> TeachingLab {
        try reading {
            guard let root = try yaml.compose(text) else {
                throw fail(
                    nil, "", "the file is empty.",
                    fix: "write the lab's fields: \(Self.fields.joined(separator: ", ")) (see labs/README.md).")
            }
            let m = try yaml.mapping(root, "", allowed: Self.fields)
            func prose(_ key: String, _ what: String) throws -> String {
                let node = try yaml.required(m, key, in: root, "", fix: "add `\(key):` with \(what).")
                let value = try yaml.string(
                    node, key, fix: "write \(what) as one text (use `>-` and indented lines for a long one).")
                guard !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                    throw fail(node, key, "is empty.", fix: "write \(what).")
                }
                return value
            }
            func optional(_ key: String) throws -> (String, Node)? {
                guard let node = m[key] else { return nil }
                let value = try yaml.string(node, key, fix: "write one name.")
                return value.isEmpty ? nil : (value, node)
            }

            let title = try prose("title", "the lab's title, as `pinlab lab list` shows it")
            let goal = try prose("goal", "one sentence: what the learner can do at the end")

            let scenariosNode = try yaml.required(
                m, "scenarios", in: root, "",
                fix: "add `scenarios: [baseline, …]`: the catalogue's scenarios the lab grades.")
            var scenarios: [String] = []
            for (i, (s, node)) in try yaml.strings(
                scenariosNode, "scenarios", fix: "list the scenario ids: [baseline, rekey]."
            ).enumerated() {
                if scenarios.contains(s) {
                    throw fail(node, "scenarios[\(i)]", "'\(s)' is listed twice.", fix: "list each scenario once.")
                }
                scenarios.append(s)
            }
            guard !scenarios.isEmpty else {
                throw fail(
                    scenariosNode, "scenarios", "the lab grades no scenario.",
                    fix: "list at least one scenario id (`pinlab list`).")
            }

            let profilesNode = try yaml.required(
                m, "profiles", in: root, "",
                fix: "add `profiles: [leaf-spki]`: the pin profiles graded (\(Self.profileNames)).")
            var profiles: [PinProfile] = []
            for (i, (p, node)) in try yaml.strings(
                profilesNode, "profiles", fix: "list pin profiles: [\(Self.profileNames)]."
            ).enumerated() {
                let profile = try self.profile(p, node, "profiles[\(i)]", among: PinProfile.all)
                if profiles.contains(profile) {
                    throw fail(node, "profiles[\(i)]", "'\(p)' is listed twice.", fix: "list each profile once.")
                }
                profiles.append(profile)
            }
            guard !profiles.isEmpty else {
                throw fail(
                    profilesNode, "profiles", "the lab grades no pin profile.",
                    fix: "list at least one of \(Self.profileNames).")
            }

            var connections = 1
            if let node = m["connections"] {
                let value = try yaml.string(node, "connections", fix: "write a whole number.")
                guard let n = Int(value), (1...9).contains(n) else {
                    throw fail(
                        node, "connections",
                        "'\(YAMLReader.excerpt(value))' is not a number of connections from 1 to 9.",
                        fix:
                            "write how many connections each cell of the lab makes (its scenarios' steps), e.g. `connections: 2`, or leave the field out for 1."
                    )
                }
                connections = n
            }

            var clientChecks: ClientChecks?
            if let (value, node) = try optional("client-checks") {
                do {
                    clientChecks = try ClientChecks(parsing: value, what: "client-checks")
                } catch {
                    throw fail(
                        node, "client-checks", "'\(YAMLReader.excerpt(value))' is not a declaration of checks.",
                        fix: "write \(ClientChecks.syntax), e.g. `client-checks: revocation=hard`.")
                }
            }

            let mistake = try prose("mistake", "one sentence: the mistake the starter makes")

            let failsFix =
                "write one line per scenario the starter gets wrong, with the profiles under which it does: `rekey: [leaf-spki+backup]`."
            let failsNode = try yaml.required(m, "starter-fails", in: root, "", fix: failsFix)
            var starterFails: Set<LabCell> = []
            for (k, v) in try yaml.mapping(failsNode, "starter-fails", fix: failsFix) {
                let scenario = k.string ?? ""
                let field = YAMLReader.path("starter-fails", scenario)
                guard scenarios.contains(scenario) else {
                    throw fail(
                        k, field, "'\(YAMLReader.excerpt(scenario))' is not one of the lab's scenarios.",
                        fix: Self.among(scenario, scenarios, "scenarios"))
                }
                for (i, (p, node)) in try yaml.strings(v, field, fix: failsFix, singleAllowed: true).enumerated() {
                    starterFails.insert(LabCell(scenario, try profile(p, node, "\(field)[\(i)]", among: profiles)))
                }
            }
            guard !starterFails.isEmpty else {
                throw fail(
                    failsNode, "starter-fails", "the starter gets no cell wrong.",
                    fix: "a starter teaches by its mistake: \(failsFix)")
            }

            let explanationsFix =
                "write a list of `- scenario:` entries, each with `should-have:` and `missed:` (and `profile:` to say something for one profile only)."
            let explanationsNode = try yaml.required(m, "explanations", in: root, "", fix: explanationsFix)
            guard let items = explanationsNode.sequence else {
                throw fail(
                    explanationsNode, "explanations",
                    "expected a list, found \(YAMLReader.describe(explanationsNode)).", fix: explanationsFix)
            }
            var explanations: [CellExplanation] = []
            for (i, item) in items.enumerated() {
                let field = "explanations[\(i)]"
                let e = try yaml.mapping(item, field, allowed: Self.explanationFields)
                func entry(_ key: String, _ what: String) throws -> (String, Node) {
                    let node = try yaml.required(e, key, in: item, field, fix: "add `\(key):` with \(what).")
                    let value = try yaml.string(node, YAMLReader.path(field, key), fix: "write \(what) as one text.")
                    guard !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                        throw fail(node, YAMLReader.path(field, key), "is empty.", fix: "write \(what).")
                    }
                    return (value, node)
                }
                let (scenario, scenarioNode) = try entry("scenario", "the scenario this explanation is about")
                guard scenarios.contains(scenario) else {
                    throw fail(
                        scenarioNode, YAMLReader.path(field, "scenario"),
                        "'\(YAMLReader.excerpt(scenario))' is not one of the lab's scenarios.",
                        fix: Self.among(scenario, scenarios, "scenarios"))
                }
                var profile: PinProfile?
                if let node = e["profile"] {
                    let p = try yaml.string(
                        node, YAMLReader.path(field, "profile"), fix: "write one profile of the lab.")
                    profile = try self.profile(p, node, YAMLReader.path(field, "profile"), among: profiles)
                }
                let shouldHave = try entry("should-have", "what a correct client does here, and why")
                let missed = try entry("missed", "the line of reasoning a client that gets it wrong missed")
                explanations.append(CellExplanation(scenario, profile, shouldHave: shouldHave.0, missed: missed.0))
            }

            let lesson = try prose("lesson", "the lab's lesson in one or two sentences")
            let tryNext = try prose("try-next", "what to try next in the starter")

            func builtInClient(_ key: String) throws -> String? {
                guard let (name, node) = try optional(key) else { return nil }
                guard BuiltInClients.named(name) != nil else {
                    throw fail(
                        node, key, "'\(YAMLReader.excerpt(name))' is not a built-in client.",
                        fix: Self.among(name, BuiltInClients.names, "built-in clients"))
                }
                return name
            }
            let teachingClient = try builtInClient("teaching-client")
            let referenceClient = try builtInClient("reference-client") ?? "correct"
            let swiftStarter = try optional("swift-starter")?.0

            let starterNode = m["starter"]
            let starter = try optional("starter")?.0 ?? LabLanguage.python.starterFile
            let starters = LabLanguage.allCases.map { "`starter: \($0.starterFile)` (\($0))" }
                .joined(separator: " or ")
            guard LabLanguage(starterFile: starter) != nil else {
                throw fail(
                    starterNode, "starter", "'\(YAMLReader.excerpt(starter))' is not a starter the grader can run.",
                    fix: [
                        didYouMean(starter, LabLanguage.allCases.map(\.starterFile)),
                        "Write \(starters), the file beside lab.yaml; leave the field out for starter.py.",
                    ].filter { !$0.isEmpty }.joined(separator: " "))
            }
            if let files, !FileManager.default.fileExists(atPath: files.appendingPathComponent(starter).path) {
                throw fail(
                    starterNode, "starter",
                    starterNode == nil
                        ? "the starter is \(starter) (the default), but \(files.appendingPathComponent(starter).path) is missing."
                        : "names \(starter), but \(files.appendingPathComponent(starter).path) is missing.",
                    fix:
                        "create \(starter) beside lab.yaml (the client with the lab's mistake in place), or name the starter the folder holds: \(starters)."
                )
            }

            return TeachingLab(
                number: number, slug: slug, folder: folder, title: title, goal: goal, scenarios: scenarios,
                profiles: profiles, mistake: mistake, starterFails: starterFails, explanations: explanations,
                lesson: lesson, tryNext: tryNext, teachingClient: teachingClient, connections: connections,
                clientChecks: clientChecks, referenceClient: referenceClient, swiftStarter: swiftStarter,
                starter: starter)
        }
    }

    static var profileNames: String { PinProfile.all.map(\.rawValue).joined(separator: ", ") }

    /// A profile named in the file, which must be one of `allowed` (the catalogue's, or the lab's own).
    func profile(_ name: String, _ node: Node, _ field: String, among allowed: [PinProfile]) throws -> PinProfile {
        let profile = PinProfile(rawValue: name)
        guard allowed.contains(profile) else {
            let what = allowed == PinProfile.all ? "a pin profile" : "one of the lab's profiles"
            throw fail(
                node, field, "'\(YAMLReader.excerpt(name))' is not \(what).",
                fix: Self.among(
                    name, allowed.map(\.rawValue), allowed == PinProfile.all ? "profiles" : "lab's profiles"))
        }
        return profile
    }

    /// "Did you mean 'x'? The lab's scenarios: a, b, c."
    static func among(_ given: String, _ valid: [String], _ what: String) -> String {
        let hint = didYouMean(given, valid)
        return "\(hint.isEmpty ? "" : hint + " ")The \(what): \(valid.joined(separator: ", "))."
    }
}
