import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// One answer of a batch harness: a JSON object on one line of its standard output
/// (``BatchSchemas/output``, `pinlab check --print-schema batch-out`).
public struct BatchResult: Sendable, Hashable, Codable {
    /// The cell's `id` from the batch document.
    public var id: String
    /// The step this line answers (1, 2, …) in a cell of several connections (``BatchCell/steps``); absent for a
    /// cell of one connection.
    public var step: Int?
    /// What the client says it did: `accepted` (it sent its request) or `refused`.
    public var claim: ClientOutcome.Claim
    /// Why, in the client's words (its exception, its verification error).
    public var detail: String?
    /// Why it refused, when the client can tell: `pin-mismatch`, `chain-invalid`, `hostname`, `client-auth`, …
    public var category: RefusalCategory?
    /// How long the client spent on the cell.
    public var milliseconds: Double?

    public init(
        id: String, step: Int? = nil, claim: ClientOutcome.Claim, detail: String? = nil,
        category: RefusalCategory? = nil, milliseconds: Double? = nil
    ) {
        self.id = id
        self.step = step
        self.claim = claim
        self.detail = detail
        self.category = category
        self.milliseconds = milliseconds
    }

    /// The line a harness prints: compact JSON, sorted keys.
    public func jsonLine() throws -> String {
        try JSONOutput.line(self)
    }

    /// The key a line is matched to the document by: the cell's id, with `#N` for step N.
    var key: String { Self.key(id, step: step) }
    static func key(_ id: String, step: Int?) -> String { step.map { "\(id)#\($0)" } ?? id }
}
