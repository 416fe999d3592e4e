public import Foundation

extension CheckReport {
    /// Reads a report written by `pinlab check --format json`. `file` names it in errors. Its engines must be ones the
    /// engine registry knows (``Engines/names``).
    public static func decode(json: Data, file: String) throws -> CheckReport {
        try decode(json: json, file: file, engines: Engines.names)
    }
}
