import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// The result of a batch run: the report, plus what the harness did wrong that belongs to no cell (an unknown id,
/// a line that is not JSON, a non-zero exit status). `pinlab check --batch` prints them and exits 1.
public struct BatchRun: Sendable {
    public var report: CheckReport
    public var problems: [String]
    public var deviates: Bool { report.deviates || !problems.isEmpty }
}
