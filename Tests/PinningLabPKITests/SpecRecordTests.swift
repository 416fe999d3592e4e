import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// A PKI folder made from a spec file of one's own records it (path and SHA-256 in state.json), and an opening with
/// another spec that names no file — the built-in one, as `pinlab` without --spec and `Lab.pki(directory:)` use — is
/// refused instead of replacing its identities, keys and pins.
@Suite("The spec a PKI folder was made from")
struct SpecRecordTests {
    static let own = """
        version: 1
        entities:
          my-root: { role: root, nameConstraints: { permitted: [localhost] } }
          my-leaf: { role: leaf, issuer: my-root, hosts: [localhost] }

        """

    func make(_ dir: URL) throws -> (spec: URL, pki: LabPKI) {
        let file = dir.appendingPathComponent("spec.yaml")
        try Self.own.write(to: file, atomically: true, encoding: .utf8)
        var o = Lab.libraryPKIOptions(directory: dir.appendingPathComponent("pki"))
        o.specFile = file.path
        return (file, try LabPKI.open(spec: try PKISpec.load(contentsOf: file), options: o))
    }

    @Test func anOpeningWithAnotherSpecIsRefusedAndTheFolderKept() throws {
        let dir = temporaryDirectory("spec-record")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, made) = try make(dir)
        let pkiDir = dir.appendingPathComponent("pki")
        #expect(LabPKI.recordedSpec(in: pkiDir) == PKISpecRecord(path: file.path, sha256: made.spec.fingerprint))
        let other = try PKISpec.parse(yaml: "version: 1\nentities:\n  r: { role: root }\n")
        do {
            _ = try LabPKI.open(spec: other, options: Lab.libraryPKIOptions(directory: pkiDir))
            Issue.record("an opening with another spec replaced the folder made from \(file.path)")
        } catch let e as PKIError {
            #expect(e.code == .specReplaced, "\(e)")
            #expect(e.description.contains(file.path) && e.description.contains("--force"), "\(e)")
        }
        // Kept as it was: the same spec (no file named) opens it without re-issuing.
        let again = try LabPKI.open(
            spec: try PKISpec.load(contentsOf: file), options: Lab.libraryPKIOptions(directory: pkiDir))
        #expect(!again.refresh.reissued && again["my-leaf"]?.pins == made["my-leaf"]?.pins)
        #expect(LabPKI.recordedSpec(in: pkiDir)?.path == file.path, "the record survives an opening without the path")
        // Naming a file, or replacing every key, is allowed.
        var forced = Lab.libraryPKIOptions(directory: pkiDir)
        forced.regenerateKeys = true
        #expect(try LabPKI.open(spec: other, options: forced)["r"] != nil)
        #expect(LabPKI.recordedSpec(in: pkiDir) == nil, "made from a spec without a file now")
    }

    @Test func aMissingCAKeyReplacedIsReported() throws {
        let dir = temporaryDirectory("spec-record-key")
        defer { try? FileManager.default.removeItem(at: dir) }
        let (file, made) = try make(dir)
        try FileManager.default.removeItem(at: made.keyFile("my-root"))
        var o = Lab.libraryPKIOptions(directory: dir.appendingPathComponent("pki"))
        o.specFile = file.path
        let again = try LabPKI.open(spec: try PKISpec.load(contentsOf: file), options: o)
        #expect(again.refresh.replacedMissingKeys == ["my-root"])
        #expect(again["my-root"]?.pins != made["my-root"]?.pins)
    }
}
