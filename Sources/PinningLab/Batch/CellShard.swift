import PinningLabCore
public import PinningLabModel

/// One of N deterministic parts of a run (`pinlab check --shard K/N`), so a CI matrix or a device farm can split the
/// catalogue across machines and join the JSON reports with `pinlab report merge`.
///
/// A cell belongs to shard `(FNV-1a-64 of "scenario/profile/engine") mod N + 1`: the same cell always lands in the
/// same shard on every machine and in every run, whatever else the catalogue holds (adding a scenario moves no other
/// cell), and the N shards are disjoint and together hold every cell.
public struct CellShard: Sendable, Hashable, CustomStringConvertible, Codable {
    /// K, from 1.
    public let index: Int
    /// N.
    public let count: Int

    public init(index: Int, count: Int) throws {
        guard count >= 1, (1...count).contains(index) else {
            throw CheckSetupError(.runOption, problem: "shard \(index)/\(count) does not exist.",
                                       fix: "give K/N with 1 ≤ K ≤ N, e.g. --shard 1/4 … --shard 4/4.")
        }
        self.index = index
        self.count = count
    }

    /// Parses `K/N`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw CheckSetupError(.runOption, problem: "--shard '\(text)' is not of the form K/N.",
                                       fix: "give the shard number and the number of shards, e.g. --shard 2/4.")
        }
        try self.init(index: k, count: n)
    }

    public var description: String { "\(index)/\(count)" }

    /// `"K/N"` in a report.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        do { try self.init(parsing: text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a shard K/N with 1 ≤ K ≤ N"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    /// Whether the cell belongs to this shard.
    public func contains(scenario: String, profile: PinProfile, engine: String) -> Bool {
        Self.shard(of: BatchCell.id(scenario: scenario, profile: profile, engine: engine), count: count) == index
    }

    /// The shard (from 1) a cell id belongs to when the run is split in `count`.
    public static func shard(of cellID: String, count: Int) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in cellID.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        return Int(h % UInt64(max(1, count))) + 1
    }
}

/// How far a check has come: `pinlab check` draws it on a terminal.
public struct CheckProgress: Sendable, Hashable {
    /// Cells judged so far, and the cells the run will judge (skipped cells are not counted).
    public var done: Int
    public var total: Int
    /// Cells judged so far that deviate (fail, disagree, error).
    public var deviations: Int
    /// Seconds since the run started.
    public var elapsedSeconds: Double

    public init(done: Int, total: Int, deviations: Int, elapsedSeconds: Double) {
        self.done = done
        self.total = total
        self.deviations = deviations
        self.elapsedSeconds = elapsedSeconds
    }

    /// The time left at the pace so far, once a cell is done.
    public var estimatedSecondsLeft: Double? {
        done == 0 ? nil : elapsedSeconds / Double(done) * Double(total - done)
    }
}
