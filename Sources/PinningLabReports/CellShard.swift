import PinningLabBase

/// One of N deterministic parts of a run (`pinlab check --shard K/N`), so a CI matrix or a device farm can split the
/// catalogue across machines and join the JSON reports with `pinlab report merge`.
///
/// Which cells a shard holds is cut by cost so that the N pieces finish together (`ShardPlan`): every process of a
/// run computes the same cut from the run's cells (and `--shard-weights`, an earlier run's report, when given), and
/// the N shards are disjoint and together hold every cell.
public struct CellShard: Sendable, Hashable, CustomStringConvertible, Codable {
    /// K, from 1.
    public let index: Int
    /// N.
    public let count: Int

    public init(index: Int, count: Int) throws {
        guard count >= 1, (1...count).contains(index) else {
            throw CheckSetupError(
                .runOption, problem: "shard \(index)/\(count) does not exist.",
                fix: "give K/N with 1 ≤ K ≤ N, e.g. --shard 1/4 … --shard 4/4.")
        }
        self.index = index
        self.count = count
    }

    /// Parses `K/N`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw CheckSetupError(
                .runOption, problem: "--shard '\(text)' is not of the form K/N.",
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
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a shard K/N with 1 ≤ K ≤ N"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
