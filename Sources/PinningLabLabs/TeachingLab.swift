import PinningLabCore
public import PinningLabModel
import PinningLab

/// One teaching lab: a short exercise around a few scenarios, graded on real servers by `pinlab lab check N`.
///
/// The labs themselves (the Markdown pages, the starter clients, the reference solutions) live in the repository's
/// `labs/` folder; this is the part the grader needs: which cells to run, which cells the starter is meant to get
/// wrong, and what to say about each cell a learner gets wrong.
public struct TeachingLab: Sendable, Hashable {
    /// 1 to 10.
    public var number: Int
    /// The folder under `labs/`, e.g. `01-why-pin`.
    public var slug: String
    public var title: String
    /// One sentence: what the learner can do at the end.
    public var goal: String
    public var scenarios: [String]
    public var profiles: [PinProfile]
    /// The file name of the Python starter in `labs/starters/python/` (and of the solution in
    /// `labs/instructor/python/`).
    public var pythonFile: String
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
    public var connections: Int = 1
    /// What a client graded by this lab declares it checks beyond chain and pins (`nil`: nothing, the labs about
    /// pins): lab 10 grades clients as hard-fail revocation checkers.
    public var clientChecks: ClientChecks? = nil
    /// The built-in client that solves the lab (the picture's "correct" row): `correct`, or one that also keeps the
    /// lab's ``clientChecks``.
    public var referenceClient = "correct"
    /// Whether the lab has a Swift starter at all (the Swift lab plumbing cannot express every lab: resumed sessions,
    /// revocation).
    public var swiftStarterExists = true

    public init(
        number: Int, slug: String, title: String, goal: String, scenarios: [String], profiles: [PinProfile],
        pythonFile: String, mistake: String, starterFails: Set<LabCell>, explanations: [CellExplanation],
        lesson: String, tryNext: String, teachingClient: String? = nil
    ) {
        self.number = number
        self.slug = slug
        self.title = title
        self.goal = goal
        self.scenarios = scenarios
        self.profiles = profiles
        self.pythonFile = pythonFile
        self.mistake = mistake
        self.starterFails = starterFails
        self.explanations = explanations
        self.lesson = lesson
        self.tryNext = tryNext
        self.teachingClient = teachingClient
    }

    /// The step placeholders the grading command ends with (`{url.1} {url.2}`), so that one process makes every
    /// connection of a cell; empty for a lab of one connection per cell.
    public var stepArguments: [String] { connections > 1 ? (1...connections).map { "{url.\($0)}" } : [] }

    /// Whether the lab has a Swift starter in `Examples/Labs`: the Swift lab plumbing (SwiftNIO SSL) offers no
    /// client session resumption, so the labs of several connections are Python only.
    public var hasSwiftStarter: Bool { connections == 1 && swiftStarterExists }

    /// `labs/01-why-pin/README.md`, relative to the repository root.
    public var pagePath: String { "labs/\(slug)/README.md" }
    /// `labs/starters/python/lab01_why_pin.py`.
    public var pythonStarterPath: String { "labs/starters/python/\(pythonFile)" }
    /// `labs/instructor/python/lab01_why_pin.py`.
    public var pythonSolutionPath: String { "labs/instructor/python/\(pythonFile)" }
    /// The Swift starter's file: `Examples/Labs/Starters/Lab01WhyPin.swift` (the solution has the same name under
    /// `Examples/Labs/Instructor/`).
    public var swiftStarterPath: String {
        let words = slug.split(separator: "-").dropFirst().map { w in
            w == "tls" ? "TLS" : w.prefix(1).uppercased() + w.dropFirst()
        }
        return "Examples/Labs/Starters/Lab\(slug.prefix(2))\(words.joined()).swift"
    }
    /// The Swift starter, built in the `Examples` package (`swift build --product lab-starter`).
    public var swiftStarterCommand: String { "Examples/.build/debug/lab-starter \(number)" }

    /// The command that grades the Python starter, as a learner types it from the repository root.
    public var gradeCommand: String {
        (["pinlab lab check \(number) -- python3 \(pythonStarterPath)"] + stepArguments).joined(separator: " ")
    }

    /// The explanation for a cell: scenario and profile first, then the scenario alone.
    public func explanation(scenario: String, profile: PinProfile) -> CellExplanation? {
        explanations.first { $0.scenario == scenario && $0.profile == profile }
            ?? explanations.first { $0.scenario == scenario && $0.profile == nil }
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
    public init(given: String) { self.given = given }
    public var description: String {
        "'\(given)' is not a lab; the labs are "
            + TeachingLabs.all.map { "\($0.number) (\($0.slug))" }.joined(separator: ", ") + "."
    }
}
