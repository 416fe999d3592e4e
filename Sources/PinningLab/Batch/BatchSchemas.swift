import PinningLabReports

/// The JSON Schemas (draft 2020-12) of the batch protocol. `pinlab check --print-schema batch-in|batch-out` prints
/// them; the tests validate real documents and answers against them with Python's jsonschema.
public enum BatchSchemas {
    /// The document a harness reads: ``BatchDocument`` (`batch-in.schema.json`).
    public static let input = bundledSchema("batch-in.schema.json")

    /// One line of a harness's standard output: ``BatchResult`` (`batch-out.schema.json`).
    public static let output = bundledSchema("batch-out.schema.json")
}
