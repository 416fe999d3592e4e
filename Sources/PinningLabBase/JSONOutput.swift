package import Foundation

/// The one way the project writes JSON: keys sorted, slashes as they are, dates in ISO 8601; documents
/// pretty-printed, lines (`--log`, batch answers) compact. Reports, listings, manifests, grades, pin files and JSON
/// lines all go through it, so they read alike and a format option is changed in one place.
package enum JSONOutput {
    package static func encoder(pretty: Bool = true) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .iso8601
        return e
    }

    /// `value` as a JSON document (no final newline).
    package static func string(_ value: some Encodable) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }

    /// `value` as one line of JSON (no newline).
    package static func line(_ value: some Encodable) throws -> String {
        String(decoding: try encoder(pretty: false).encode(value), as: UTF8.self)
    }
}
