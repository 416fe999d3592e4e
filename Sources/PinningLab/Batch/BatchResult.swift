import Foundation
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// One answer of a batch harness: a JSON object on one line of its standard output
/// (``BatchSchemas/output``, `pinlab check --print-schema batch-out`).
public struct BatchResult: Sendable, Hashable, Codable {
    /// The cell's `id` from the batch document.
    public var id: String
    /// What the client says it did: `accepted` (it sent its request) or `refused`.
    public var claim: ClientOutcome.Claim
    /// Why, in the client's words (its exception, its verification error).
    public var detail: String?
    /// Why it refused, when the client can tell: `pin-mismatch`, `chain-invalid`, `hostname`, `client-auth`, …
    public var category: RefusalCategory?
    /// How long the client spent on the cell.
    public var milliseconds: Double?

    public init(id: String, claim: ClientOutcome.Claim, detail: String? = nil, category: RefusalCategory? = nil,
                milliseconds: Double? = nil) {
        self.id = id
        self.claim = claim
        self.detail = detail
        self.category = category
        self.milliseconds = milliseconds
    }

    /// The line a harness prints: compact JSON, sorted keys.
    public func jsonLine() throws -> String {
        try JSONOutput.line(self)
    }
}
