import Foundation
import PinningLab
import PinningLabTestSupport

/// One lab PKI for the whole test process, in a temporary folder (keys are generated there once and reused by
/// later runs; nothing is committed).
enum TestLab {
    static let directory = TestPKIFolder.url

    /// Opened off Swift's cooperative pool (`Lab.openPKI`): a synchronous open blocked a cooperative thread while
    /// the folder was made or locked by another test's `pinlab` process, and with two such threads (two cores) every
    /// test of the process stalled for ~56 s at start-up — long enough for servers' timeouts to fire.
    static func pki() async throws -> LabPKI { try await Lab.openPKI(directory: directory) }

    static func runner() async throws -> CheckRunner {
        CheckRunner(pki: try await pki(), catalogue: try Catalogue.bundled())
    }

    /// Runs a tool and returns its exit status and combined output (with `posix_spawn`, not Foundation's
    /// `Process`, which can crash in a test process with many descriptors open).
    static func run(_ args: [String]) async throws -> (status: Int32, output: String) {
        let r = await ChildProcess.run(args, timeout: .seconds(60))
        if let e = r.launchError { throw ToolError(description: e) }
        return (r.status, r.output)
    }
}

struct ToolError: Error, CustomStringConvertible { var description: String }

/// A cell address without the engine: `scenario/profile`.
struct Cell: Hashable, CustomStringConvertible, Comparable {
    var scenario: String
    var profile: PinProfile
    var description: String { "\(scenario)/\(profile)" }
    static func < (a: Cell, b: Cell) -> Bool { a.description < b.description }
}

extension CheckReport {
    /// The cells with `status` on `engine`.
    func cells(_ status: Verdict.Status, engine: String) -> Set<Cell> {
        Set(
            verdicts.filter { $0.status == status && $0.engine == engine }.map {
                Cell(scenario: $0.scenario, profile: $0.profile)
            })
    }
}

/// Cells of several scenarios under several profiles.
func cells(_ scenarios: [String], _ profiles: [PinProfile]) -> Set<Cell> {
    var out: Set<Cell> = []
    for s in scenarios { for p in profiles { out.insert(Cell(scenario: s, profile: p)) } }
    return out
}
