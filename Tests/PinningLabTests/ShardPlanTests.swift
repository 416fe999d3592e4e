// The cut of a run into N shards by cost (ShardPlan): every cell in exactly one shard, the same cut in every process,
// the pieces' costs level, and measured costs (an earlier report) followed where they differ from the estimate.
import Foundation
import PinningLabModel
import Testing

@testable import PinningLab

@Suite("Shards cut by cost")
struct ShardPlanTests {
    static func catalogue() throws -> [Scenario] {
        try Catalogue.bundled().scenarios
    }

    @Test("every cell of the catalogue lands in exactly one of N shards, the same in every process")
    func disjointAndComplete() throws {
        let scenarios = try Self.catalogue()
        let engines = ["openssl", "gnutls"]
        let ids = scenarios.flatMap { s in
            engines.flatMap { e in PinProfile.all.map { BatchCell.id(scenario: s.id, profile: $0, engine: e) } }
        }
        for n in [1, 2, 3, 4, 7, 16] {
            var seen: [String: Int] = [:]
            for k in 1...n {
                let plan = ShardPlan(
                    shard: try CellShard(index: k, count: n), scenarios: scenarios, engines: engines,
                    runs: { _ in true }, weights: nil)
                for id in ids where plan.contains(id) {
                    #expect(seen[id] == nil, "\(id) is in shards \(seen[id] ?? 0) and \(k) of \(n)")
                    seen[id] = k
                }
                // A second process computes the same cut.
                let again = ShardPlan(
                    shard: try CellShard(index: k, count: n), scenarios: scenarios.reversed().reversed(),
                    engines: engines, runs: { _ in true }, weights: nil)
                #expect(ids.allSatisfy { plan.shard(of: $0) == again.shard(of: $0) })
            }
            #expect(seen.count == ids.count, "\(n) shards hold \(seen.count) of \(ids.count) cells")
        }
    }

    @Test("estimated costs: multi-connection cells count by their connections, and the shards' loads are level")
    func estimatedLoadsAreLevel() throws {
        let scenarios = try Self.catalogue()
        let plan = ShardPlan(
            shard: try CellShard(index: 1, count: 4), scenarios: scenarios, engines: ["openssl", "gnutls"],
            runs: { _ in true }, weights: nil)
        let connections = scenarios.reduce(0) { $0 + ($1.isMultiStep ? $1.steps.count : 1) } * 2 * PinProfile.all.count
        #expect(plan.loads.reduce(0, +) == Double(connections))
        let (lo, hi) = (plan.loads.min()!, plan.loads.max()!)
        #expect(
            hi - lo <= Double(scenarios.map { $0.isMultiStep ? $0.steps.count : 1 }.max()!),
            "the greedy cut leaves at most one cell's cost between the shards: \(plan.loads)")
        // The hash split this replaced was off by far more on the same cells (multi-step cells clumped).
        #expect(hi / lo < 1.05, "\(plan.loads)")
    }

    @Test("cells the client does not run cost nothing; measured costs decide over the estimate")
    func measuredCostsDecide() throws {
        let cells: [(id: String, connections: Int, runs: Bool)] = [
            ("slow/none/openssl", 1, true), ("a/none/openssl", 1, true), ("b/none/openssl", 1, true),
            ("c/none/openssl", 1, true), ("d/none/openssl", 1, true), ("skip/none/openssl", 9, false),
        ]
        // Estimated: five equal one-connection cells over two shards, 3 + 2; the skipped one costs nothing.
        let estimated = ShardPlan(shard: try CellShard(index: 1, count: 2), cells: cells, weights: nil)
        #expect(estimated.loads.sorted() == [2, 3])
        // Measured: "slow" took as long as the four others together, so it has a shard to itself.
        let weights = ShardWeights(millisecondsByCell: [
            "slow/none/openssl": 400, "a/none/openssl": 100, "b/none/openssl": 100,
            "c/none/openssl": 100, "d/none/openssl": 100,
        ])
        let measured = ShardPlan(shard: try CellShard(index: 1, count: 2), cells: cells, weights: weights)
        #expect(measured.loads == [400, 400], "\(measured.loads)")
        #expect(measured.shard(of: "slow/none/openssl") == 1)
        #expect(["a", "b", "c", "d"].allSatisfy { measured.shard(of: "\($0)/none/openssl") == 2 })
        // A cell the report does not hold is estimated at the report's median time per connection (100 ms here).
        let grown = cells + [("new/none/openssl", 2, true)]
        let withNew = ShardPlan(shard: try CellShard(index: 1, count: 2), cells: grown, weights: weights)
        #expect(withNew.loads.reduce(0, +) == 1000, "\(withNew.loads)")
    }

    @Test("a weights file that is not a report, or holds no cell that ran, is refused with the file named")
    func badWeightsFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pinlab-shard-weights-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let junk = dir.appendingPathComponent("junk.json")
        try Data("{\"not\": \"a report\"}".utf8).write(to: junk)
        #expect { try ShardWeights(contentsOf: junk) } throws: {
            "\($0)".contains(junk.path) && "\($0)".contains("not a pinlab JSON report")
        }
        let missing = dir.appendingPathComponent("missing.json")
        #expect { try ShardWeights(contentsOf: missing) } throws: {
            "\($0)".contains(missing.path) && "\($0)".contains("cannot be read")
        }
        let empty = dir.appendingPathComponent("empty.json")
        try Data(
            try CheckReport(
                client: "c", engines: [], profiles: PinProfile.all, startedAt: Date(), verdicts: [], scenarios: []
            ).jsonString().utf8
        ).write(to: empty)
        #expect { try ShardWeights(contentsOf: empty) } throws: { "\($0)".contains("holds no cell that ran") }
    }
}

@Suite("Shard cuts in reports")
struct ShardCutReportTests {
    @Test("the reports of a run's pieces record their cut, and merge refuses pieces cut differently")
    func mergeRefusesMixedCuts() async throws {
        let runner = try await TestLab.runner()
        let client = ClientUnderTest.inProcess(BuiltInClients.named("correct")!)
        let scenarios = ["baseline", "wrong-host"]
        let weights = ShardWeights(millisecondsByCell: ["baseline/none/openssl": 50])
        var estimated: [(file: String, report: CheckReport)] = []
        var measured: [(file: String, report: CheckReport)] = []
        for k in 1...2 {
            var o = CheckOptions(scenarios: scenarios, shard: try CellShard(index: k, count: 2))
            let e = try await runner.run(client, options: o)
            #expect(e.shardCut == "estimated")
            estimated.append(
                ("e\(k).json", try CheckReport.decode(json: Data(try e.jsonString().utf8), file: "e\(k).json")))
            o.shardWeights = weights
            let m = try await runner.run(client, options: o)
            #expect(m.shardCut == "weights \(weights.fingerprint)")
            measured.append(
                ("m\(k).json", try CheckReport.decode(json: Data(try m.jsonString().utf8), file: "m\(k).json")))
        }
        #expect(try CheckReport.merge(estimated).verdicts.count == 2 * 6 * 2)
        #expect(try CheckReport.merge(measured).verdicts.count == 2 * 6 * 2)
        #expect { try CheckReport.merge([estimated[0], measured[1]]) } throws: {
            "\($0)".contains("m2.json") && "\($0)".contains("same --shard-weights")
        }
        // The same costs name the same cut, whatever order they were read in.
        let again = ShardWeights(
            millisecondsByCell: Dictionary(uniqueKeysWithValues: weights.millisecondsByCell.reversed()))
        #expect(again.fingerprint == weights.fingerprint)
        #expect(ShardWeights(millisecondsByCell: ["baseline/none/openssl": 51]).fingerprint != weights.fingerprint)
    }
}
