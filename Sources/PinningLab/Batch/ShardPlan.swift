public import Foundation
import PinningLabModel

/// What each cell cost in an earlier run, read from that run's JSON report (`--shard-weights REPORT.json`): the
/// client's time per cell (``Verdict/Timings/clientMilliseconds``), by cell id `scenario/profile/engine`.
///
/// Keep the merged report of the last full run (a CI cache, an artefact) and give it to every shard of the next
/// one: the shards are then cut from measured costs. Cells the report does not hold are estimated from their
/// connections, at the report's own median time per connection.
public struct ShardWeights: Sendable, Hashable {
    /// Milliseconds by cell id.
    public var millisecondsByCell: [String: Double]

    /// The costs named by a hash (FNV-1a 64 of the sorted `id=milliseconds` lines), so that the reports of one
    /// run's pieces can show they were cut alike.
    public var fingerprint: String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for (id, ms) in millisecondsByCell.sorted(by: { $0.key < $1.key }) {
            for b in "\(id)=\(Int(ms.rounded()))\n".utf8 {
                h ^= UInt64(b)
                h = h &* 0x0000_0100_0000_01b3
            }
        }
        let hex = String(h, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    public init(millisecondsByCell: [String: Double]) {
        self.millisecondsByCell = millisecondsByCell
    }

    /// The client times of a report's cells (cells that did not run — skipped, unsupported — are left out).
    public init(_ report: CheckReport) {
        var m: [String: Double] = [:]
        for v in report.verdicts where v.status != .skipped && v.status != .unsupported {
            m[BatchCell.id(scenario: v.scenario, profile: v.profile, engine: v.engine)] = max(
                0, v.timings.clientMilliseconds)
        }
        self.init(millisecondsByCell: m)
    }

    /// Reads the JSON report at `url`; an error names the file and what to give instead.
    public init(contentsOf url: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw CheckSetupError(
                .runOption, problem: "--shard-weights \(url.path): cannot be read (\(error.localizedDescription)).",
                fix:
                    "give the JSON report of an earlier run (pinlab check --format json --output FILE, or the merged shards)."
            )
        }
        let report: CheckReport
        do { report = try CheckReport.decode(json: data, file: url.path) } catch {
            throw CheckSetupError(
                .runOption, problem: "--shard-weights \(url.path) is not a pinlab JSON report: \(error)",
                fix:
                    "give the JSON report of an earlier run (pinlab check --format json --output FILE, or the merged shards)."
            )
        }
        self.init(report)
        if millisecondsByCell.isEmpty {
            throw CheckSetupError(
                .runOption, problem: "--shard-weights \(url.path) holds no cell that ran, so it weighs nothing.",
                fix:
                    "give the report of a run that judged cells, or leave --shard-weights out to estimate costs from each cell's connections."
            )
        }
    }
}

/// Which shard each cell of a run belongs to: the one rule every sharded run uses (`pinlab check`, `lab check`,
/// batch runs), cut so that the N pieces finish together.
///
/// Every cell has a cost — measured in an earlier run (``ShardWeights``) or estimated from its plan (one unit per
/// connection; a cell the client does not run costs nothing) — and the cells, costliest first (ties by id), go one by
/// one to the shard with the least cost so far (ties to the lowest). The cut depends only on the run's cells, the
/// costs and N, so every process of a run computes the same one and the N shards are disjoint and together hold every
/// cell; `pinlab report merge` joins them.
package struct ShardPlan: Sendable {
    package let shard: CellShard
    private let owner: [String: Int]
    /// The cost of each shard (in the weights' milliseconds, or in connections when estimated), from shard 1.
    package let loads: [Double]
    /// How the cut was made, as the report records it (``CheckReport/shardCut``).
    package let cut: String

    /// - Parameters:
    ///   - cells: every cell of the whole run (all shards), with the number of connections it makes and whether the
    ///     client runs it.
    package init(shard: CellShard, cells: [(id: String, connections: Int, runs: Bool)], weights: ShardWeights?) {
        let perConnection: Double
        if let weights {
            let measured = cells.compactMap { c in
                weights.millisecondsByCell[c.id].map { $0 / Double(max(1, c.connections)) }
            }.sorted()
            perConnection = measured.isEmpty ? 1 : max(0.001, measured[measured.count / 2])
        } else {
            perConnection = 1
        }
        let costed = cells.map { c -> (id: String, cost: Double) in
            guard c.runs else { return (c.id, 0) }
            if let ms = weights?.millisecondsByCell[c.id] { return (c.id, ms) }
            return (c.id, Double(max(1, c.connections)) * perConnection)
        }.sorted { $0.cost != $1.cost ? $0.cost > $1.cost : $0.id < $1.id }
        var loads = [Double](repeating: 0, count: shard.count)
        var owner: [String: Int] = [:]
        owner.reserveCapacity(costed.count)
        for c in costed {
            var least = 0
            for i in 1..<loads.count where loads[i] < loads[least] { least = i }
            loads[least] += c.cost
            owner[c.id] = least + 1
        }
        self.shard = shard
        self.owner = owner
        self.loads = loads
        self.cut = Self.cut(weights: weights)
    }

    /// The plan of a run over `scenarios` × `engines` × every profile, where `runs` says which profiles the client
    /// runs (the others cost nothing).
    package init(
        shard: CellShard, scenarios: [Scenario], engines: [String], runs: (PinProfile) -> Bool, weights: ShardWeights?
    ) {
        var cells: [(id: String, connections: Int, runs: Bool)] = []
        cells.reserveCapacity(scenarios.count * engines.count * PinProfile.all.count)
        for s in scenarios {
            let connections = s.isMultiStep ? s.steps.count : 1
            for e in engines {
                for p in PinProfile.all {
                    cells.append((BatchCell.id(scenario: s.id, profile: p, engine: e), connections, runs(p)))
                }
            }
        }
        self.init(shard: shard, cells: cells, weights: weights)
    }

    /// The name of the cut made with `weights` (or estimated, without).
    package static func cut(weights: ShardWeights?) -> String {
        weights.map { "weights \($0.fingerprint)" } ?? "estimated"
    }

    /// Whether the cell belongs to this plan's shard (a cell the plan never saw belongs to none).
    package func contains(_ cellID: String) -> Bool { owner[cellID] == shard.index }

    /// The shard (from 1) a cell belongs to.
    package func shard(of cellID: String) -> Int? { owner[cellID] }
}
