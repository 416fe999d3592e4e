import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// One line of a harness's output, parsed as far as it goes.
enum AnswerLine: Sendable {
    case decoded(BatchResult)
    /// Valid JSON naming a cell, but not a valid answer.
    case invalid(id: String, why: String)
    /// Not a JSON object with a string `id`.
    case malformed(text: String, why: String)

    init(_ text: String) {
        guard let data = text.data(using: .utf8),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            self = .malformed(text: text, why: "not a JSON object")
            return
        }
        guard let id = object["id"] as? String else {
            self = .malformed(text: text, why: "no string \"id\"")
            return
        }
        let known: Set<String> = ["id", "claim", "detail", "category", "milliseconds"]
        if let extra = object.keys.first(where: { !known.contains($0) }) {
            self = .invalid(id: id, why: "unknown field \"\(extra)\" (allowed: \(known.sorted().joined(separator: ", ")))")
            return
        }
        guard let claim = (object["claim"] as? String).flatMap(ClientOutcome.Claim.init(rawValue:)) else {
            self = .invalid(id: id, why: "\"claim\" must be \"accepted\" or \"refused\", got \(object["claim"].map { "\($0)" } ?? "nothing")")
            return
        }
        if let d = object["detail"], !(d is String) {
            self = .invalid(id: id, why: "\"detail\" must be a string")
            return
        }
        if let c = object["category"], !(c is String) {
            self = .invalid(id: id, why: "\"category\" must be a string")
            return
        }
        if let m = object["milliseconds"], !(m is NSNumber) || m is Bool {
            self = .invalid(id: id, why: "\"milliseconds\" must be a number")
            return
        }
        self = .decoded(BatchResult(
            id: id, claim: claim, detail: object["detail"] as? String,
            category: (object["category"] as? String).map(RefusalCategory.init(rawValue:)),
            milliseconds: (object["milliseconds"] as? NSNumber)?.doubleValue))
    }
}
