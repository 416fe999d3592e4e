import Foundation
import PinningLab
import PinningLabBase

/// One request as the control API's handlers see it: already routed, independent of the HTTP library (so the
/// handlers can be driven directly in tests).
struct ControlRequest: Sendable {
    /// Path parameters by name (`id`, `name`, `profile`).
    var parameters: [String: String] = [:]
    /// Query parameters; the first value of a repeated one wins.
    var query: [String: String] = [:]
    var body: Data = Data()

    /// A path parameter that the route guarantees.
    func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// A query parameter that must be one of `allowed` (`default` when absent).
    func choice(_ name: String, _ allowed: [String], default value: String) throws(ControlError) -> String {
        guard let given = query[name] else { return value }
        guard allowed.contains(given) else {
            throw .badRequest(
                name, "'\(given)' is not a valid \(name).", fix: "use one of: \(allowed.joined(separator: ", ")).")
        }
        return given
    }

    /// A query parameter holding a whole number in `range` (`default` when absent).
    func integer(_ name: String, in range: ClosedRange<Int>, default value: Int) throws(ControlError) -> Int {
        guard let given = query[name] else { return value }
        guard let n = Int(given), range.contains(n) else {
            throw .badRequest(
                name, "'\(given)' is not a whole number in \(range.lowerBound)...\(range.upperBound).",
                fix: "pass \(name)=N with N from \(range.lowerBound) to \(range.upperBound).")
        }
        return n
    }

    /// The body as a JSON object whose keys are all in `allowed`.
    func jsonObject(allowed: [String]) throws(ControlError) -> [String: any Sendable] {
        guard !body.isEmpty else {
            throw .badRequest(
                "body", "the request has no body.",
                fix: "send a JSON object with Content-Type: application/json, e.g. {\"\(allowed[0])\": …}.")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        } catch {
            throw .badRequest(
                "body", "the body is not valid JSON.", fix: "send a JSON object, e.g. {\"\(allowed[0])\": …}.")
        }
        guard let object = parsed as? [String: Any] else {
            throw .badRequest(
                "body", "the body is JSON but not an object.", fix: "send a JSON object, e.g. {\"\(allowed[0])\": …}.")
        }
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw .badRequest(
                unknown, "'\(unknown)' is not a field of this request.",
                fix: "send only: \(allowed.joined(separator: ", ")).")
        }
        var out: [String: any Sendable] = [:]
        for (k, v) in object {
            switch v {
            case let s as String: out[k] = s
            case let a as [Any]: out[k] = a.map { ($0 as? String) as (any Sendable)? ?? NonString() }
            case is NSNull: out[k] = NonString()
            default: out[k] = NonString()
            }
        }
        return out
    }

    /// A value of the body that is not a string (or a list of strings): reported by `string` and `strings`.
    struct NonString: Sendable {}

    /// A string field of a body parsed by `jsonObject`.
    static func string(_ object: [String: any Sendable], _ key: String, required: Bool, example: String)
        throws(ControlError) -> String?
    {
        guard let v = object[key] else {
            if required {
                throw .badRequest(key, "the field '\(key)' is missing.", fix: "add \"\(key)\": \"\(example)\".")
            }
            return nil
        }
        guard let s = v as? String, !s.isEmpty else {
            throw .badRequest(key, "'\(key)' must be a non-empty string.", fix: "e.g. \"\(key)\": \"\(example)\".")
        }
        return s
    }

    /// A list-of-strings field of a body parsed by `jsonObject`.
    static func strings(_ object: [String: any Sendable], _ key: String, maxCount: Int, example: String)
        throws(ControlError) -> [String]?
    {
        guard let v = object[key] else { return nil }
        guard let list = v as? [any Sendable], (1...maxCount).contains(list.count) else {
            throw .badRequest(
                key, "'\(key)' must be a list of 1 to \(maxCount) names.", fix: "e.g. \"\(key)\": \(example).")
        }
        var names: [String] = []
        for item in list {
            guard let s = item as? String, !s.isEmpty else {
                throw .badRequest(
                    key, "every entry of '\(key)' must be a non-empty string.", fix: "e.g. \"\(key)\": \(example).")
            }
            names.append(s)
        }
        return names
    }
}

/// What a handler answers: a status, a media type and the body.
struct ControlReply: Sendable {
    var status: Int
    var contentType: String
    var body: Data
    var headers: [String: String] = [:]

    static func json(_ value: some Encodable, status: Int = 200) -> ControlReply {
        do {
            let data = try JSONOutput.encoder().encode(value)
            return ControlReply(status: status, contentType: "application/json", body: data + Data("\n".utf8))
        } catch {
            return .error(ControlError(500, field: nil, "the response could not be encoded: \(error)"))
        }
    }

    static func text(_ text: String, contentType: String = "text/plain; charset=utf-8") -> ControlReply {
        ControlReply(status: 200, contentType: contentType, body: Data(text.utf8))
    }

    static func error(_ e: ControlError) -> ControlReply {
        var r = json(e, status: e.status)
        r.contentType = "application/json"
        return r
    }
}
