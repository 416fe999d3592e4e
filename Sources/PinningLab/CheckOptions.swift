public import Foundation
public import PinningLabCore
public import PinningLabModel
import PinningLabPKI

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
    /// What each cell cost in an earlier run (`--shard-weights REPORT.json`), so that the shards finish together;
    /// `nil` estimates each cell's cost from its connections. Read only when ``shard`` is set.
    public var shardWeights: ShardWeights?
    /// Called after each judged cell (from any task; keep it short).
    public var progress: (@Sendable (CheckProgress) -> Void)?
    /// The platform TLS policy the client follows (`--platform`); `nil` keeps what the client declares
    /// (``PinningClient/platform``), and with neither the catalogue's `expect` judges every cell.
    public var platform: PlatformPolicy?
    /// What the client claims to check (`--client-checks revocation=hard,ct=required`); `nil` keeps what the client
    /// declares (``PinningClient/checks``). Cells whose outcome depends on an undeclared check are undecided.
    public var clientChecks: ClientChecks?

    public init(
        engines: [any TLSEngine] = Engines.builtIn, profiles: Set<PinProfile>? = nil, scenarios: [String] = [],
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
