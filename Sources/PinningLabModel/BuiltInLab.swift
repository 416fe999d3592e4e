public import Foundation
import PinningLabBase
public import PinningLabPKI

/// The lab the package ships: the PKI spec (`pki/lab.yaml`) and the scenario catalogue (`scenarios/`), bundled as
/// resources of this module. `Lab` and `Catalogue.bundled()` read them from here.
///
/// The same files are embedded in the code (the EmbedResources build-tool plugin): a binary copied away from its
/// build folder, which has no resource bundle next to it, reads those instead.
public enum BuiltInLab {
    /// The built-in lab PKI spec file. Without a resource bundle (a copied binary), a copy of the embedded file in a
    /// private temporary folder of this process.
    public static var specURL: URL {
        guard let bundle = EmbeddedResources.bundle else {
            return embeddedFolder.appendingPathComponent("pki/lab.yaml")
        }
        return bundle.url(forResource: "lab", withExtension: "yaml", subdirectory: "pki")
            ?? bundle.resourceURL!.appendingPathComponent("pki/lab.yaml")
    }

    /// The built-in lab PKI spec, parsed and validated.
    public static func spec() throws -> PKISpec {
        if EmbeddedResources.bundle == nil, let text = EmbeddedResources.files["pki/lab.yaml"] {
            return try PKISpec.parse(yaml: text, file: "pki/lab.yaml")
        }
        return try PKISpec.load(contentsOf: specURL)
    }

    /// The name a PKI folder's state file records for the built-in spec with its post-quantum part
    /// (`pinlab pki init --post-quantum`), in the place of a spec file's path: later commands open the folder with
    /// ``spec(postQuantum:)`` again.
    public static let postQuantumSpecName = "builtin:pki/lab.yaml+pki/post-quantum.yaml"

    /// The name that opens a PKI folder with the built-in spec alone, said explicitly (`--no-post-quantum`):
    /// ``PKIOptions/specFile`` set to it replaces what the folder was made from and records nothing.
    public static let builtInSpecName = "builtin:pki/lab.yaml"

    /// The built-in lab PKI spec, with its opt-in post-quantum part (`pki/post-quantum.yaml`: ML-DSA-65 and
    /// ML-DSA-87 identities) added when `postQuantum` is true.
    public static func spec(postQuantum: Bool) throws -> PKISpec {
        let base = try spec()
        guard postQuantum else { return base }
        return try base.adding(part: try text("pki/post-quantum.yaml"), file: "pki/post-quantum.yaml")
    }

    /// A bundled text file (`pki/post-quantum.yaml`), from the resource bundle or the embedded copy.
    private static func text(_ path: String) throws -> String {
        if EmbeddedResources.bundle == nil, let text = EmbeddedResources.files[path] { return text }
        let url =
            EmbeddedResources.bundle?.resourceURL?.appendingPathComponent(path)
            ?? embeddedFolder.appendingPathComponent(path)
        guard let data = try? Data(contentsOf: url), let text = String(data: data, encoding: .utf8) else {
            throw PKIError(
                .fileUnreadable, "the built-in \(path) is missing from this build", file: url.path,
                fix: "rebuild pinlab (the file is a resource of PinningLabModel)")
        }
        return text
    }

    /// The directory of the built-in scenario catalogue. Without a resource bundle (a copied binary), a copy of the
    /// embedded files in a private temporary folder of this process.
    public static var scenariosDirectory: URL? {
        guard let bundle = EmbeddedResources.bundle else { return embeddedFolder.appendingPathComponent("scenarios") }
        return bundle.url(forResource: "scenarios", withExtension: nil)
    }

    /// Whether this process runs without the module's resource bundle (a copied binary).
    static var resourceBundleIsMissing: Bool { EmbeddedResources.bundle == nil }

    /// The embedded scenario files, named as the bundled catalogue shows them (`scenarios/rekey.yaml`).
    static var embeddedScenarioFiles: [(name: String, text: String)] {
        EmbeddedResources.files.filter { $0.key.hasPrefix("scenarios/") && $0.key.hasSuffix(".yaml") }
            .map { ($0.key, $0.value) }
    }

    /// The embedded files written once into a scratch folder only this user can read (``ScratchFolders``, 0700):
    /// removed when the process exits normally, and by `pinlab`'s SIGINT/SIGTERM handler with every other scratch
    /// folder. Only the public URLs above need it; the spec and the catalogue are read from memory.
    private static let embeddedFolder: URL = {
        guard let folder = try? ScratchFolders.make("pinlab-resources") else {
            return FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-resources-unavailable")
        }
        for (path, text) in EmbeddedResources.files {
            let url = folder.appendingPathComponent(path)
            try? FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? text.write(to: url, atomically: false, encoding: .utf8)
        }
        atexit { ScratchFolders.removeAll() }
        return folder
    }()
}
