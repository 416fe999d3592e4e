import Foundation

/// The schemas the machine-readable reports follow. `pinlab check --print-schema json|junit` prints them, so CI
/// pipelines can validate reports with their own tools (`python3 -m jsonschema`, `xmllint --schema`). The files are
/// `Sources/PinningLabReports/Resources/schemas/` in the repository, shipped as resources of the library.
public enum ReportSchemas {
    /// JSON Schema (draft 2020-12) of `pinlab check --format json` (`check-report.schema.json`).
    public static let json = bundledSchema("check-report.schema.json")

    /// XML Schema of `pinlab check --format junit`: the common JUnit report layout (as read by Jenkins, GitLab,
    /// GitHub Actions reporters), with numeric attributes typed (`check-report-junit.xsd`).
    public static let junitXSD = bundledSchema("check-report-junit.xsd")

    /// JSON Schema of a baseline file (`pinlab check --write-baseline`, `baseline.schema.json`).
    public static let baseline = bundledSchema("baseline.schema.json")
}

/// A schema file of the library's resources (the bundle, or the copy embedded in the code when a copied binary has
/// no bundle next to it), without its final newline. A missing file (a broken installation) reads
/// as a sentence that says so, which no validator accepts as a schema.
package func bundledSchema(_ name: String) -> String {
    guard let text = EmbeddedResources.text("schemas/" + name) else {
        return
            "the schema \(name) is missing from the resources of PinningLabReports (schemas/): reinstall or rebuild PinningLab"
    }
    return text.hasSuffix("\n") ? String(text.dropLast()) : text
}
