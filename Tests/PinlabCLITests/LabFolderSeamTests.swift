import Foundation
import PinningLab
import PinningLabLabs
import PinningLabTestSupport
import Testing

/// A teaching lab is one folder and one list entry (CONTRIBUTING.md's table): the folders under `labs/` are exactly
/// the list's, the embedded definitions are the files', and a lab folder made at test time outside the repository,
/// named in its own `labs.yaml`, is listed and graded by the same `pinlab lab check` on real servers — while a broken
/// definition is refused with its file, line, field and fix.
@Suite("teaching labs as data", .serialized)
struct LabFolderSeamTests {
    static let labsFolder = LabTests.root.appendingPathComponent("labs")
    /// The fixture lab's number: the one after the built-in labs' (an added lab is numbered after them).
    static let n = String(((try? TeachingLabs.builtIn().count) ?? 0) + 1)
    /// The fixture lab's folder.
    static let entry = "\(n)-fixture-proxy"

    // MARK: The built-in labs

    @Test func everyLabFolderIsListedAndHoldsTheWholeLab() throws {
        let labs = try TeachingLabs.builtIn()
        let listed = labs.map(\.slug)
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.labsFolder.path).filter {
            FileManager.default.fileExists(
                atPath: Self.labsFolder.appendingPathComponent($0).appendingPathComponent("lab.yaml").path)
        }
        #expect(Set(folders) == Set(listed), "a lab folder not in labs/labs.yaml, or an entry without its folder")
        #expect(listed == listed.sorted(), "labs.yaml lists the folders in their numbers' order")
        #expect(labs.map(\.number) == Array(1...labs.count))
        for lab in labs {
            #expect(lab.folder == "labs/\(lab.slug)")
            for path in [
                lab.definitionPath, lab.pagePath, lab.starterPath, lab.solutionPath,
                lab.instructorNotesPath,
            ] {
                #expect(
                    FileManager.default.fileExists(atPath: LabTests.root.appendingPathComponent(path).path),
                    "\(path) is missing")
            }
        }
    }

    /// The binary's copy (embedded at build time by the EmbedLabs plugin) reads the same as the files on disk.
    @Test func theEmbeddedDefinitionsAreTheFiles() throws {
        let embedded = try TeachingLabs.builtIn()
        var fromDisk = try TeachingLabs.labs(in: Self.labsFolder)
        for i in fromDisk.indices { fromDisk[i].folder = "labs/\(fromDisk[i].slug)" }
        #expect(embedded == fromDisk)
        #expect(try TeachingLabs.current() == embedded, "PINLAB_LABS_DIR is set in the test's environment")
    }

    // MARK: A lab added as one folder and one list entry

    /// A lab about interception, written the way a contributor writes one: its definition, its page, its starter (it
    /// validates and never pins, like lab 1's) and its solution, which import the repository's `labs/python/labtls.py`.
    static let fixtureDefinition = """
        title: "Fixture: a proxy the device trusts"
        goal: Refuse a proxy whose root the device trusts, by its key.
        scenarios: [baseline, intercepting-proxy]
        profiles: [none, leaf-spki]
        mistake: The client never checks its pins.
        starter-fails:
          intercepting-proxy: [leaf-spki]
        explanations:
          - scenario: intercepting-proxy
            profile: leaf-spki
            should-have: >-
              Refuse: the fixture proxy's key is not the
              pinned K1.
            missed: Only the pin tells a trusted proxy from the real server.
        lesson: The fixture's lesson.
        try-next: Compare the leaf's SPKI hash with cell.pins.
        teaching-client: no-pinning

        """

    static func client(checksPins: Bool) -> String {
        """
        import os, ssl, sys
        sys.path.insert(0, \(literal(labsFolder.appendingPathComponent("python").path)))
        import labtls

        cell = labtls.Cell()
        tls = labtls.handshake(ssl.create_default_context(cafile=cell.ca), cell)
        if \(checksPins ? "True" : "False") and cell.pins:
            got = labtls.sha256_b64(labtls.spki(labtls.leaf(tls)))
            if got not in cell.pins:
                labtls.close(tls)
                labtls.refuse("pin mismatch: %s" % got)
        labtls.send_request(tls, cell)

        """
    }

    static func literal(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    /// A folder of more labs: `labs.yaml` naming `entry`, and that lab's folder with `definition`.
    static func makeLabsFolder(entry: String = LabFolderSeamTests.entry, definition: String = fixtureDefinition) throws
        -> URL
    {
        let dir = TestScratch.root.appendingPathComponent("pinlab-labs-\(UUID().uuidString)")
        let lab = dir.appendingPathComponent(entry)
        try FileManager.default.createDirectory(
            at: lab.appendingPathComponent("instructor"), withIntermediateDirectories: true)
        try "labs:\n  - \(entry)\n".write(
            to: dir.appendingPathComponent("labs.yaml"), atomically: true, encoding: .utf8)
        try definition.write(to: lab.appendingPathComponent("lab.yaml"), atomically: true, encoding: .utf8)
        try "# Fixture lab\n\nGrade it: `pinlab lab check \(Self.n) -- python3 starter.py`.\n"
            .write(to: lab.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
        try client(checksPins: false).write(
            to: lab.appendingPathComponent("starter.py"), atomically: true, encoding: .utf8)
        try client(checksPins: true).write(
            to: lab.appendingPathComponent("instructor/solution.py"), atomically: true, encoding: .utf8)
        return dir
    }

    /// `pinlab ARGS` with `PINLAB_LABS_DIR` set to `labsDir`.
    static func pinlab(_ args: [String], labsDir: URL) async throws -> CLI.Result {
        let bin = try #require(
            CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        env[TeachingLabs.environmentVariable] = labsDir.path
        for v in EnvironmentShard.variableNames { env[v] = nil }
        let r = await ChildProcess.run([bin.path] + args, environment: env, timeout: TestTimeouts.catalogue)
        return CLI.Result(status: r.status, stdout: r.stdoutText, stderr: r.stderrText)
    }

    @Test func aLabFolderPlusOneListEntryIsLoaded() throws {
        let dir = try Self.makeLabsFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let labs = try TeachingLabs.load(adding: [dir], environment: [:])
        #expect(labs.count == TeachingLabs.all.count + 1)
        let lab = try TeachingLabs.named(Self.n, in: labs)
        #expect(lab.slug == Self.entry && lab.title == "Fixture: a proxy the device trusts")
        #expect(lab.folder == dir.appendingPathComponent(Self.entry).path)
        #expect(lab.profiles == [.none, .leafSPKI])
        #expect(lab.starterFails == [LabCell("intercepting-proxy", .leafSPKI)])
        #expect(
            lab.explanation(scenario: "intercepting-proxy", profile: .leafSPKI)?.shouldHave
                == "Refuse: the fixture proxy's key is not the pinned K1.")
        #expect(lab.teachingClient == "no-pinning" && lab.referenceClient == "correct" && !lab.hasSwiftStarter)
    }

    /// The whole seam through the binary: listed, shown, and graded on both engines — the built-in teaching client and
    /// the folder's Python starter fail exactly the cell the definition names, explained in its words; the correct
    /// client and the folder's solution pass.
    @Test func aLabFolderPlusOneListEntryIsListedAndGradedByPinlab() async throws {
        let dir = try Self.makeLabsFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let folder = dir.appendingPathComponent(Self.entry)

        let list = try await Self.pinlab(["lab", "list"], labsDir: dir)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("\(Self.n)  Fixture: a proxy the device trusts"), "\(list.stdout)")
        #expect(list.stdout.contains(folder.appendingPathComponent("README.md").path))
        #expect(list.stdout.contains("10  When a pinned key is stolen"), "the built-in labs are still there")

        let show = try await Self.pinlab(["lab", "show", Self.n] + CLI.dirArgs, labsDir: dir)
        #expect(show.status == 0, "\(show.stderr)")
        #expect(
            show.stdout.contains("pinlab lab check \(Self.n) -- python3 \(folder.path)/starter.py"), "\(show.stdout)")

        let teaching = try await Self.pinlab(
            ["lab", "check", Self.n, "--client", "no-pinning", "--format", "json"] + CLI.dirArgs, labsDir: dir)
        #expect(teaching.status == 1, "\(teaching.stdout)\(teaching.stderr)")
        let g = try JSONDecoder().decode(LabTests.Graded.self, from: Data(teaching.stdout.utf8))
        #expect(g.lab == Int(Self.n) && g.cells == 2 * 2 * 2 && g.engines == ["openssl", "gnutls"])
        #expect(g.failures.map(\.cell) == [LabCell("intercepting-proxy", .leafSPKI)])
        #expect(g.failures.first?.engines == ["openssl", "gnutls"])
        #expect(g.failures.first?.isTheLesson == true)
        #expect(g.failures.first?.shouldHave == "Refuse: the fixture proxy's key is not the pinned K1.")

        let correct = try await Self.pinlab(
            ["lab", "check", Self.n, "--client", "correct"] + CLI.dirArgs, labsDir: dir)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        #expect(
            correct.stdout.contains("Lab \(Self.n) — Fixture: a proxy the device trusts")
                && correct.stdout.contains("PASSED"))

        guard let python = LabTests.python else {
            if Tool.inCI { Issue.record("python3 is needed for the fixture lab's Python clients") }
            return
        }
        let starter = try await Self.pinlab(
            ["lab", "check", Self.n] + CLI.dirArgs + ["--", python, folder.appendingPathComponent("starter.py").path],
            labsDir: dir)
        #expect(starter.status == 1, "\(starter.stdout)\(starter.stderr)")
        for phrase in [
            "✗ intercepting-proxy under leaf-spki (openssl, gnutls)", "What your client did: It trusted",
            "What it should have done: Refuse: the fixture proxy's key is not the pinned K1.",
            "These are the cells this lab is about: The client never checks its pins.",
            "\(folder.path)/README.md.)", "NOT YET: 2 of 8 cells are wrong",
        ] {
            #expect(starter.stdout.contains(phrase), "missing \(phrase) in\n\(starter.stdout)")
        }
        let solution = try await Self.pinlab(
            ["lab", "check", Self.n] + CLI.dirArgs + [
                "--", python, folder.appendingPathComponent("instructor/solution.py").path,
            ], labsDir: dir)
        #expect(solution.status == 0, "\(solution.stdout)\(solution.stderr)")
        #expect(solution.stdout.contains("PASSED"))
    }

    // MARK: A broken lab is refused with its file, field and fix

    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var entry = LabFolderSeamTests.entry
        var edit: @Sendable (String) -> String
        /// What the error must say: the field, the problem, the fix (the file is checked for every case).
        var says: [String]
        var testDescription: String { name }
    }

    static let broken: [Broken] = [
        Broken(
            name: "a profile the lab does not grade",
            edit: {
                $0.replacingOccurrences(of: "intercepting-proxy: [leaf-spki]", with: "intercepting-proxy: [leaf-spk]")
            },
            says: [
                ":7:24: starter-fails.intercepting-proxy[0]: 'leaf-spk' is not one of the lab's profiles.",
                "Fix: did you mean 'leaf-spki'?", "none, leaf-spki",
            ]),
        Broken(
            name: "a missing field", edit: { $0.replacingOccurrences(of: "lesson: The fixture's lesson.\n", with: "") },
            says: ["the required field 'lesson' is missing.", "Fix: add `lesson:`"]),
        Broken(
            name: "a misspelt field", edit: { $0.replacingOccurrences(of: "try-next:", with: "try_next:") },
            says: [":16:1: try_next: unknown field 'try_next'.", "did you mean 'try-next'?"]),
        Broken(
            name: "an explanation of a scenario the lab does not run",
            edit: { $0.replacingOccurrences(of: "  - scenario: intercepting-proxy", with: "  - scenario: rekey") },
            says: [
                "explanations[0].scenario: 'rekey' is not one of the lab's scenarios.",
                "The scenarios: baseline, intercepting-proxy.",
            ]),
        Broken(
            name: "a built-in client that does not exist",
            edit: { $0.replacingOccurrences(of: "teaching-client: no-pinning", with: "teaching-client: no-pining") },
            says: ["teaching-client: 'no-pining' is not a built-in client.", "did you mean 'no-pinning'?"]),
        Broken(
            name: "invalid YAML",
            edit: {
                $0.replacingOccurrences(
                    of: "scenarios: [baseline, intercepting-proxy]", with: "scenarios: [baseline, intercepting-proxy")
            },
            says: ["invalid YAML", "Fix: check indentation and quoting"]),
        Broken(
            name: "a starter in a language the grader cannot run", edit: { $0 + "starter: starter.rs\n" },
            says: [
                "lab.yaml:18:10: starter: 'starter.rs' is not a starter the grader can run.",
                "Fix: did you mean 'starter.py'? Write `starter: starter.py` (Python) or `starter: starter.go` (Go)",
            ]),
        Broken(
            name: "a starter that is missing", edit: { $0 + "starter: starter.go\n" },
            says: [
                "lab.yaml:18:10: starter: names starter.go, but ", "/starter.go is missing.",
                "Fix: create starter.go beside lab.yaml (the client with the lab's mistake in place)",
            ]),
        Broken(
            name: "a folder name without a number", entry: "fixture-proxy", edit: { $0 },
            says: [
                "labs.yaml:2:5: labs[0]: 'fixture-proxy' is not a lab folder's name.",
                "Fix: name the folder by its number",
            ]),
        Broken(
            name: "the number of a built-in lab", entry: "03-fixture-proxy", edit: { $0 },
            says: [
                "labs.yaml:2:5: labs: the lab '03-fixture-proxy' has the number or name of the lab '03-rotation'",
                "Fix: number an added lab after the others (\(n) or more)",
            ]),
    ]

    @Test("a broken lab definition is refused with its file, line, field and fix", arguments: broken)
    func aBrokenDefinitionIsRefusedClearly(_ broken: Broken) async throws {
        let dir = try Self.makeLabsFolder(entry: broken.entry, definition: broken.edit(Self.fixtureDefinition))
        defer { try? FileManager.default.removeItem(at: dir) }
        let file =
            broken.says.first?.hasPrefix("labs.yaml") == true
            ? dir.path + "/" : dir.appendingPathComponent(broken.entry).appendingPathComponent("lab.yaml").path
        do {
            let labs = try TeachingLabs.load(adding: [dir], environment: [:])
            Issue.record("loaded \(labs.count) labs")
        } catch {
            #expect("\(error)".hasPrefix(file), "\(error)")
            for s in broken.says { #expect("\(error)".contains(s), "missing \(s) in \(error)") }
        }
        // The binary says the same and exits 2 (the lab cannot be set up), for every lab command.
        for args in [
            ["lab", "list"], ["lab", "show", "1"], ["lab", "check", "1", "--client", "correct"] + CLI.dirArgs,
        ] {
            let r = try await Self.pinlab(args, labsDir: dir)
            #expect(r.status == 2, "\(args): \(r.status) \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(file), "\(args): \(r.stderr)")
            for s in broken.says { #expect(r.stderr.contains(s), "\(args): missing \(s) in \(r.stderr)") }
        }
    }
}
