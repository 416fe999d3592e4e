import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// Runs the built `pinlab` in `folder` (its current directory), with `HOME` set to `home` when given.
private func pinlab(in folder: URL, _ args: [String], home: URL? = nil) async throws -> CLI.Result {
    let bin = try #require(
        CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
    var env = ProcessInfo.processInfo.environment
    env["NO_COLOR"] = "1"
    if let home { env["HOME"] = home.path }
    let r = await ChildProcess.run(
        ["/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", folder.path, bin.path] + args,
        environment: env, timeout: TestTimeouts.command)
    return CLI.Result(status: r.status, stdout: r.stdoutText, stderr: r.stderrText)
}

/// A small spec of one's own (no RSA key: quick to make): `my-root` and `my-leaf`.
private func writeOwnSpec(in folder: URL, comment: String = "") throws -> URL {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let url = folder.appendingPathComponent("spec.yaml")
    try """
    version: 1\(comment.isEmpty ? "" : "\n# \(comment)")
    entities:
      my-root: { role: root, nameConstraints: { permitted: [localhost, .test] } }
      my-leaf: { role: leaf, issuer: my-root, hosts: [localhost] }

    """.write(to: url, atomically: true, encoding: .utf8)
    return url
}

private func scratch(_ label: String) -> URL {
    TestScratch.root.appendingPathComponent("pinlab-folder-safety-\(label)-\(UUID().uuidString)")
}

/// An empty list option ('', ',', ' , ') is refused with exit status 2 and the fix: it used to mean what leaving
/// the option out means — every scenario, every profile — so an empty CI variable silently ran all 960 cells.
@Suite("Empty list options are refused")
struct EmptyListOptionTests {
    @Test(arguments: [
        (["check", "--client", "correct", "--scenarios", ""], "--scenarios"),
        (["check", "--client", "correct", "--scenarios", ","], "--scenarios"),
        (["check", "--client", "correct", "--scenarios", " , "], "--scenarios"),
        (["check", "--client", "correct", "--profiles", ""], "--profiles"),
        (["check", "--client", "correct", "--profiles", ",,"], "--profiles"),
        (["check", "--client", "correct", "--scenarios", "baseline", "--profiles", ","], "--profiles"),
        (["serve", "--identity", "leaf-v1", "--chain", ""], "--chain"),
        (["serve", "--identity", "leaf-v1", "--client-auth", "required", "--client-ca", ","], "--client-ca"),
        (["bench", "batch", "--scenarios", ""], "--scenarios"),
    ])
    func anEmptyListIsRefused(_ args: [String], _ option: String) async throws {
        let r = try await CLI.run(args + CLI.dirArgs)
        #expect(r.status == 2, "\(args) → \(r.status): \(r.stdout.suffix(300)) \(r.stderr)")
        #expect(
            r.stderr.contains("\(option) '") && r.stderr.contains("names nothing") && r.stderr.contains("Fix:"),
            "\(r.stderr)")
        #expect(!r.stdout.contains("cells"), "no cell ran: \(r.stdout.suffix(300))")
    }

    @Test func aListWithItemsStillRuns() async throws {
        let r = try await CLI.run(
            [
                "check", "--client", "correct", "--engine", "openssl", "--scenarios", "baseline,",
                "--profiles", "none, leaf-spki",
            ] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("2 pass"), "\(r.stdout)")
    }
}

/// A PKI made from a spec of one's own remembers it (path and SHA-256 in state.json): a command without --spec
/// uses it while the file is unchanged, and refuses to replace the folder with the built-in PKI otherwise.
@Suite("A PKI made from a spec of one's own")
struct OwnSpecPKITests {
    @Test func commandsWithoutSpecUseTheRememberedOneAndNeverReplaceIt() async throws {
        let top = scratch("own-spec")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let d = top.appendingPathComponent("d").path
        let made = try await CLI.run(["pki", "init", "--dir", d, "--spec", spec.path])
        try #require(made.status == 0, "\(made.stderr)")
        let state = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: d).appendingPathComponent("state.json"))) as? [String: Any])
        let record = try #require(
            state["spec"] as? [String: String], "state.json records the spec: \(state.keys.sorted())")
        #expect(record["path"] == spec.standardizedFileURL.path)
        let pins = try await CLI.run(["pki", "pins", "my-leaf", "--format", "curl", "--dir", d, "--spec", spec.path])
        try #require(pins.status == 0, "\(pins.stderr)")

        // No --spec: the remembered spec, the same pins; nothing re-issued from the built-in spec.
        let list = try await CLI.run(["pki", "list", "--dir", d])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.split(separator: "\n").count == 3 && list.stdout.contains("my-leaf"), "\(list.stdout)")
        let again = try await CLI.run(["pki", "pins", "my-leaf", "--format", "curl", "--dir", d])
        #expect(again.status == 0 && again.stdout == pins.stdout, "\(again.stdout) \(again.stderr)")
        // A command taking --dir only (the catalogue's commands) does not replace it either.
        _ = try await CLI.run(["explain", "baseline", "--dir", d])
        let still = try await CLI.run(["pki", "pins", "my-leaf", "--format", "curl", "--dir", d])
        #expect(
            still.status == 0 && still.stdout == pins.stdout,
            "explain replaced the PKI: \(still.stdout) \(still.stderr)")

        // The spec changed: refused, naming the folder, the spec and the fix; the PKI is left as it was.
        _ = try writeOwnSpec(in: top, comment: "edited")
        let changed = try await CLI.run(["pki", "list", "--dir", d])
        #expect(changed.status == 2, "\(changed.stdout)")
        for word in [d, spec.standardizedFileURL.path, "changed", "--spec", "--force"] {
            #expect(changed.stderr.contains(word), "'\(word)' in \(changed.stderr)")
        }
        let serve = try await CLI.run(["serve", "--dir", d, "--identity", "my-leaf"])
        #expect(serve.status == 2 && serve.stderr.contains("--spec"), "\(serve.stderr)")
        // The spec is gone: refused too.
        try FileManager.default.removeItem(at: spec)
        let gone = try await CLI.run(["pki", "show", "my-leaf", "--dir", d])
        #expect(gone.status == 2 && gone.stderr.contains("gone"), "\(gone.stderr)")
        let kept = try await CLI.run([
            "pki", "pins", "my-leaf", "--format", "curl", "--dir", d, "--spec", try writeOwnSpec(in: top).path,
        ])
        #expect(
            kept.status == 0 && kept.stdout == pins.stdout, "the original spec again: \(kept.stdout) \(kept.stderr)")
    }

    @Test func forceReplacesItWithTheBuiltInPKI() async throws {
        let top = scratch("own-spec-force")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let d = top.appendingPathComponent("d").path
        try #require(try await CLI.run(["pki", "init", "--dir", d, "--spec", spec.path]).status == 0)
        try FileManager.default.removeItem(at: spec)
        let forced = try await CLI.run(["pki", "init", "--dir", d, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.contains("\(try Lab.builtInSpec().names.count) identities"), "\(forced.stdout)")
    }

    /// A deleted CA key is replaced by a new random one (every pin on it changes): every command says so.
    @Test func aDeletedCAKeyIsReplacedAndSaidOnStandardError() async throws {
        let top = scratch("ca-key")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let d = top.appendingPathComponent("d")
        try #require(try await CLI.run(["pki", "init", "--dir", d.path, "--spec", spec.path]).status == 0)
        let before = try await CLI.run(["pki", "pins", "my-root", "--format", "curl", "--dir", d.path])
        try FileManager.default.removeItem(at: d.appendingPathComponent("keys/my-root.pem"))
        let list = try await CLI.run(["pki", "list", "--dir", d.path])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(
            list.stderr.contains("warning:") && list.stderr.contains("keys/my-root.pem was missing")
                && list.stderr.contains("new random key") && list.stderr.contains("install its trust file again"),
            "\(list.stderr)")
        let after = try await CLI.run(["pki", "pins", "my-root", "--format", "curl", "--dir", d.path])
        #expect(after.stdout != before.stdout, "the root has a new key")
        #expect(!after.stderr.contains("was missing"), "said once: \(after.stderr)")
    }
}

/// The private key of a CA that is not name-constrained signs a certificate for any site: `pki export --format
/// key` or `p12` of one is refused without --allow-unconstrained-key, and warns with it.
@Suite("Unconstrained CA keys are not exported by accident")
struct UnconstrainedKeyExportTests {
    @Test(arguments: [
        ("proxy-root", "key"), ("proxy-root", "p12"), ("rogue-root", "key"), ("twin-root-a", "key"),
        ("client-ca", "key"), ("twin-intermediate-a", "key"),
    ])
    func refusedWithoutTheFlag(_ name: String, _ format: String) async throws {
        let out = TestScratch.root.appendingPathComponent("pinlab-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try await CLI.run(["pki", "export", name, "--format", format, "--out", out.path] + CLI.dirArgs)
        #expect(r.status == 2, "\(name) \(format): \(r.status) \(r.stderr)")
        #expect(
            r.stderr.contains("NOT name-constrained") && r.stderr.contains("--allow-unconstrained-key"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path), "no key was written")
    }

    @Test func theFlagAllowsItAndWarns() async throws {
        let r = try await CLI.run(
            ["pki", "export", "proxy-root", "--format", "key", "--allow-unconstrained-key"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("-----BEGIN \("PRIVATE KEY")-----"))
        #expect(
            r.stderr.contains("warning:") && r.stderr.contains("proxy-root") && r.stderr.contains("ANY site"),
            "\(r.stderr)")
    }

    @Test(arguments: ["leaf-v1", "lab-root", "lab-intermediate-a"])
    func constrainedOrLeafKeysNeedNoFlag(_ name: String) async throws {
        let r = try await CLI.run(["pki", "export", name, "--format", "key"] + CLI.dirArgs)
        #expect(r.status == 0 && r.stdout.contains("-----BEGIN \("PRIVATE KEY")-----"), "\(r.stderr)")
        #expect(!r.stderr.contains("NOT name-constrained"), "\(r.stderr)")
    }
}

/// Without --dir, a command uses the nearest `.pinninglab/` in the current folder or above (up to the home folder),
/// only one of this user's with mode 0700, and names it on standard error: a command run in a sub-folder no longer
/// makes a second PKI there whose pins differ from the one the servers use.
@Suite("The default PKI folder")
struct DefaultPKIFolderTests {
    @Test func aSubFolderUsesTheNearestPKIAbove() async throws {
        let top = scratch("nearest")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let made = try await pinlab(in: top, ["pki", "init", "--spec", spec.path])
        try #require(made.status == 0, "\(made.stderr)")
        #expect(
            made.stderr.contains(top.appendingPathComponent(".pinninglab").path),
            "the folder made is named: \(made.stderr)")
        let pins = try await pinlab(in: top, ["pki", "pins", "my-leaf", "--format", "curl", "--spec", spec.path])
        let sub = top.appendingPathComponent("app/src")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let below = try await pinlab(in: sub, ["pki", "pins", "my-leaf", "--format", "curl", "--spec", spec.path])
        #expect(below.status == 0, "\(below.stderr)")
        #expect(below.stdout == pins.stdout, "the same PKI: \(below.stdout) vs \(pins.stdout)")
        #expect(
            !FileManager.default.fileExists(atPath: sub.appendingPathComponent(".pinninglab").path), "no second PKI")
        let lines = below.stderr.split(separator: "\n").filter { $0.contains(".pinninglab") }
        #expect(
            lines.count == 1 && lines[0].contains(top.appendingPathComponent(".pinninglab").path), "\(below.stderr)")
        let export = try await pinlab(
            in: sub, ["export", "pins-json", "my-leaf", "--host", "localhost", "--spec", spec.path])
        #expect(
            export.status == 0
                && !FileManager.default.fileExists(atPath: sub.appendingPathComponent(".pinninglab").path),
            "\(export.stderr)")
    }

    @Test func theWalkStopsAtTheHomeFolder() async throws {
        let top = scratch("home")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        try #require(try await pinlab(in: top, ["pki", "init", "--spec", spec.path]).status == 0)
        let home = top.appendingPathComponent("home")
        let sub = home.appendingPathComponent("project")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let r = try await pinlab(in: sub, ["pki", "list", "--spec", spec.path], home: home)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            FileManager.default.fileExists(atPath: sub.appendingPathComponent(".pinninglab/state.json").path),
            "the PKI above the home folder is not used: \(r.stderr)")
        #expect(
            r.stderr.contains(sub.appendingPathComponent(".pinninglab").path), "the folder made is named: \(r.stderr)")
    }

    @Test func aFolderOpenToOthersIsRefusedAndNamed() async throws {
        let top = scratch("mode")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let folder = top.appendingPathComponent(".pinninglab")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o755)
        let sub = top.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let r = try await pinlab(in: sub, ["pki", "list", "--spec", spec.path])
        #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
        #expect(
            r.stderr.contains(folder.path) && r.stderr.contains("mode 755") && r.stderr.contains("chmod 700"),
            "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("state.json").path))
        #expect(!FileManager.default.fileExists(atPath: sub.appendingPathComponent(".pinninglab").path))
    }

    @Test func anotherUsersFolderIsRefused() async throws {
        guard geteuid() == 0 else { return }  // only root can give a folder to another user
        let top = scratch("owner")
        defer { try? FileManager.default.removeItem(at: top) }
        let spec = try writeOwnSpec(in: top)
        let folder = top.appendingPathComponent(".pinninglab")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o700)
        #expect(chown(folder.path, 65534, 65534) == 0)
        let sub = top.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let r = try await pinlab(in: sub, ["pki", "list", "--spec", spec.path])
        #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(folder.path) && r.stderr.contains("not to the user running pinlab"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sub.appendingPathComponent(".pinninglab").path))
    }
}
