import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// One line of a harness's output, parsed as far as it goes.
enum AnswerLine: Sendable {
    case decoded(BatchResult)
    /// Valid JSON naming a cell (and a step), but not a valid answer.
    case invalid(id: String, step: Int?, why: String)
    /// Not a JSON object with a string `id`.
    case malformed(text: String, why: String)

    init(_ text: String) {
        guard let data = text.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else {
            self = .malformed(text: text, why: "not a JSON object")
            return
        }
        guard let id = object["id"] as? String else {
            self = .malformed(text: text, why: "no string \"id\"")
            return
        }
        // Numbers are read with JSONDecoder, which tells `1` from `true` (a JSONSerialization NSNumber does not).
        var step: Int?
        if let n = object["step"] {
            guard let number = (try? JSONDecoder().decode(NumberField<Int>.self, from: data))?.step, number >= 1 else {
                self = .invalid(
                    id: id, step: nil,
                    why: "\"step\" must be a whole number from 1 (the step of a cell of several connections), got \(n)")
                return
            }
            step = number
        }
        let known: Set<String> = ["id", "step", "claim", "detail", "category", "milliseconds"]
        if let extra = object.keys.first(where: { !known.contains($0) }) {
            self = .invalid(
                id: id, step: step,
                why: "unknown field \"\(extra)\" (allowed: \(known.sorted().joined(separator: ", ")))")
            return
        }
        guard let claim = (object["claim"] as? String).flatMap(ClientOutcome.Claim.init(rawValue:)) else {
            self = .invalid(
                id: id, step: step,
                why:
                    "\"claim\" must be \"accepted\" or \"refused\", got \(object["claim"].map { "\($0)" } ?? "nothing")"
            )
            return
        }
        if let d = object["detail"], !(d is String) {
            self = .invalid(id: id, step: step, why: "\"detail\" must be a string")
            return
        }
        if let c = object["category"], !(c is String) {
            self = .invalid(id: id, step: step, why: "\"category\" must be a string")
            return
        }
        let milliseconds = (try? JSONDecoder().decode(NumberField<Double>.self, from: data))?.milliseconds
        if object["milliseconds"] != nil && milliseconds == nil {
            self = .invalid(id: id, step: step, why: "\"milliseconds\" must be a number")
            return
        }
        self = .decoded(
            BatchResult(
                id: id, step: step, claim: claim, detail: object["detail"] as? String,
                category: (object["category"] as? String).map(RefusalCategory.init(rawValue:)),
                milliseconds: milliseconds))
    }
}

/// The numeric fields of an answer line, each decoded on its own (a bad one is nil, the others still read).
private struct NumberField<N: Decodable>: Decodable {
    var step: N?
    var milliseconds: N?
    enum CodingKeys: String, CodingKey { case step, milliseconds }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        step = try? c.decodeIfPresent(N.self, forKey: .step)
        milliseconds = try? c.decodeIfPresent(N.self, forKey: .milliseconds)
    }
}

/// How one answer line reads, for tests: the key it answers (`id`, or `id#N` for step N), else why it is no answer.
package enum AnswerLineProbe {
    package static func parse(_ text: String) -> String {
        switch AnswerLine(text) {
        case .decoded(let a): return a.key
        case .invalid(_, _, let why), .malformed(_, let why): return why
        }
    }
}
