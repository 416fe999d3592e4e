public import Foundation
public import PinningLabPKI

/// The lab the package ships: the PKI spec (`pki/lab.yaml`) and the scenario catalogue (`scenarios/`), bundled as
/// resources of this module. `Lab` and `Catalogue.bundled()` read them from here.
public enum BuiltInLab {
    /// The built-in lab PKI spec file.
    public static var specURL: URL {
        Bundle.module.url(forResource: "lab", withExtension: "yaml", subdirectory: "pki")
            ?? Bundle.module.resourceURL!.appendingPathComponent("pki/lab.yaml")
    }

    /// The built-in lab PKI spec, parsed and validated.
    public static func spec() throws -> PKISpec {
        try PKISpec.load(contentsOf: specURL)
    }

    /// The directory of the built-in scenario catalogue.
    public static var scenariosDirectory: URL? {
        Bundle.module.url(forResource: "scenarios", withExtension: nil)
    }
}
