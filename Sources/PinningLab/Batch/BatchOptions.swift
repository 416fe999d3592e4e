import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// Limits of a batch run.
public struct BatchOptions: Sendable {
    /// What one cell may take: the servers close a connection silent for this long, the document tells the client,
    /// and once the first answer has arrived the harness is stopped when no answer follows within twice this.
    public var cellTimeout: Duration
    /// The whole harness run, start-up included; the harness is killed after it.
    public var batchTimeout: Duration
    /// The environment variable naming the document's file.
    public var environmentVariable: String
    /// Whether the harness keeps state between connections (`pinlab check --batch --batch-steps`): the document then
    /// gives the cells of scenarios made of several connections their `steps`, and the harness answers every step
    /// (`"step": N`). Without it those cells are reported `unsupported`, never judged.
    public var steps: Bool

    public init(
        cellTimeout: Duration = .seconds(10), batchTimeout: Duration = .seconds(300),
        environmentVariable: String = "PINLAB_BATCH", steps: Bool = false
    ) {
        self.cellTimeout = cellTimeout
        self.batchTimeout = batchTimeout
        self.environmentVariable = environmentVariable
        self.steps = steps
    }
}
