public import Foundation
import Yams

/// The teaching labs, as data. Each lab is one folder under `labs/` (`labs/03-rotation/`: `lab.yaml`, `README.md`,
/// `starter.py` or `starter.go`, `instructor/`), and `labs/labs.yaml` names the folders in teaching order: adding a lab is one folder
/// and one line there. The definitions are embedded at build time (the EmbedLabs plugin), so a `pinlab` binary copied
/// anywhere knows every lab; the folders' other files are the learner's and the instructor's, read from the
/// repository.
///
/// More labs can come from a folder laid out the same way (its own `labs.yaml` and lab folders): `PINLAB_LABS_DIR`,
/// or ``load(adding:environment:)``. Their numbers follow the built-in ones'.
public enum TeachingLabs {
    /// Where the built-in labs are, relative to the repository root: the paths the labs' pages and commands show.
    public static let repositoryFolder = "labs"

    /// The environment variable that names a folder of more labs (its `labs.yaml` and lab folders).
    public static let environmentVariable = "PINLAB_LABS_DIR"

    /// The labs `pinlab lab` offers: the built-in ones, then those of `PINLAB_LABS_DIR`. Empty when a definition is
    /// broken: ``named(_:)`` and ``load(adding:environment:)`` then throw the ``LabDefinitionError``.
    public static var all: [TeachingLab] { (try? loaded.get()) ?? [] }

    /// The labs, loaded once (the embedded definitions and the environment's folder).
    static let loaded: Result<[TeachingLab], LabDefinitionError> = {
        do throws(LabDefinitionError) {
            return .success(try load())
        } catch {
            return .failure(error)
        }
    }()

    /// The labs `pinlab lab` offers, or the first broken definition's error.
    public static func current() throws(LabDefinitionError) -> [TeachingLab] { try loaded.get() }

    /// Loads the labs: the built-in ones (embedded), then those of the folder `PINLAB_LABS_DIR` names, then those of
    /// each folder of `folders`. Each folder holds a `labs.yaml` (`labs:` and one `- NN-name` line per lab) and the lab
    /// folders it names, each with its `lab.yaml`. A broken list or definition, a folder it names that is missing, or
    /// a number or name already taken throws an error that names the file, the field and the fix.
    public static func load(
        adding folders: [URL] = [], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(LabDefinitionError) -> [TeachingLab] {
        var labs = try builtIn()
        var extra = folders
        if let dir = environment[environmentVariable], !dir.isEmpty {
            extra.insert(URL(fileURLWithPath: dir), at: 0)
        }
        for dir in extra {
            let found = try load(folder: dir)
            for (lab, node, reader) in found {
                if let other = labs.first(where: { $0.number == lab.number || $0.slug == lab.slug }) {
                    throw reader.fail(
                        node, "labs",
                        "the lab '\(lab.slug)' has the number or name of the lab '\(other.slug)' (\(other.folder)).",
                        fix:
                            "number an added lab after the others (\((labs.map(\.number).max() ?? 0) + 1) or more) and rename its folder and entry."
                    )
                }
                labs.append(lab)
            }
        }
        return labs
    }

    /// The built-in labs, from the definitions embedded at build time.
    public static func builtIn() throws(LabDefinitionError) -> [TeachingLab] {
        let listFile = "\(repositoryFolder)/labs.yaml"
        guard let list = EmbeddedResources.files["labs.yaml"] else {
            throw LabDefinitionError(
                file: listFile, field: "", problem: "the list of labs was not embedded in this build.",
                fix: "create labs/labs.yaml and build again (the EmbedLabs plugin embeds it).")
        }
        let reader = LabDefinitionReader(file: listFile)
        return try reader.folders(list).map { (name, number, node) throws(LabDefinitionError) in
            let file = "\(repositoryFolder)/\(name)/lab.yaml"
            guard let text = EmbeddedResources.files["\(name)/lab.yaml"] else {
                throw reader.fail(
                    node, "labs", "lists the folder '\(name)', but \(file) was not found.",
                    fix: "create \(file) (see labs/README.md), or remove the entry.")
            }
            return try LabDefinitionReader(file: file).lab(
                text, number: number, slug: name, folder: "\(repositoryFolder)/\(name)")
        }
    }

    /// The labs of one folder laid out like `labs/` (its `labs.yaml` and the lab folders it names), read from disk.
    public static func labs(in folder: URL) throws(LabDefinitionError) -> [TeachingLab] {
        try load(folder: folder).map(\.0)
    }

    /// The labs of one folder laid out like `labs/`, each with the node of its entry in the list.
    static func load(folder dir: URL) throws(LabDefinitionError) -> [(TeachingLab, Node, LabDefinitionReader)] {
        let listURL = dir.appendingPathComponent("labs.yaml")
        let reader = LabDefinitionReader(file: listURL.path)
        guard let list = try? String(contentsOf: listURL, encoding: .utf8) else {
            throw LabDefinitionError(
                file: listURL.path, field: "",
                problem: "cannot be read (\(environmentVariable) or an added folder names \(dir.path)).",
                fix:
                    "create it with `labs:` and one `- NN-name` line per lab folder beside it, or point \(environmentVariable) at such a folder."
            )
        }
        return try reader.folders(list).map { (name, number, node) throws(LabDefinitionError) in
            let folder = dir.appendingPathComponent(name)
            let file = folder.appendingPathComponent("lab.yaml")
            guard let text = try? String(contentsOf: file, encoding: .utf8) else {
                throw reader.fail(
                    node, "labs", "lists the folder '\(name)', but \(file.path) cannot be read.",
                    fix:
                        "create \(name)/lab.yaml beside this file (see labs/README.md in the PinningLab repository), or remove the entry."
                )
            }
            let lab = try LabDefinitionReader(file: file.path).lab(
                text, number: number, slug: name, folder: folder.path, files: folder)
            return (lab, node, reader)
        }
    }

    /// The lab numbered `text` (`3`, `03`) or named by its folder (`03-rotation`); a broken definition throws its
    /// ``LabDefinitionError``, an unknown lab an ``UnknownLabError`` naming the valid ones.
    public static func named(_ text: String) throws -> TeachingLab {
        try named(text, in: try current())
    }

    /// The lab of `labs` numbered `text` or named by its folder.
    public static func named(_ text: String, in labs: [TeachingLab]) throws(UnknownLabError) -> TeachingLab {
        let t = text.trimmingCharacters(in: .whitespaces)
        if let n = Int(t), let lab = labs.first(where: { $0.number == n }) { return lab }
        if let lab = labs.first(where: { $0.slug == t }) { return lab }
        throw UnknownLabError(given: text, labs: labs)
    }
}
