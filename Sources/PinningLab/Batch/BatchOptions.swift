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

    public init(cellTimeout: Duration = .seconds(10), batchTimeout: Duration = .seconds(300),
                environmentVariable: String = "PINLAB_BATCH") {
        self.cellTimeout = cellTimeout
        self.batchTimeout = batchTimeout
        self.environmentVariable = environmentVariable
    }
}
