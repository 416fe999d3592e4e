package import Foundation

/// The one way the project writes JSON documents: pretty-printed, keys sorted, slashes as they are, dates in
/// ISO 8601. Reports, listings, manifests and pin files all go through it, so they read alike and a format option
/// is changed in one place.
package enum JSONOutput {
    package static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        return e
    }

    /// `value` as a JSON document (no final newline).
    package static func string(_ value: some Encodable) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }
}
