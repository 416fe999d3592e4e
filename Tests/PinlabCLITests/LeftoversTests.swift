import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Nothing secret is left where it does not belong: the PKI folder keeps itself out of git, and an interrupted run
/// removes its scratch folder (trust files, the client's certificate and private key) before it exits.
@Suite("Leftovers: keys stay where they belong", .serialized)
struct LeftoversTests {
    /// A fresh private folder (removed by the caller).
    static func folder(_ name: String) throws -> URL {
        let dir = TestScratch.root.appendingPathComponent("pinlab-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A fresh `$TMPDIR` of its own (removed by the caller) and the environment that names it.
    static func ownTMPDIR(_ name: String) throws -> (URL, [String: String]) {
        let tmp = try folder(name)
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp.path
        return (tmp, env)
    }

    /// `pinlab pki init` run in an app's repository (the default folder, `.pinninglab/` where you stand), then
    /// `git add -A`, as a careless commit would: nothing of the PKI is staged.
    @Test(.requires("git"))
    func gitAddAllInTheRepositoryStagesNoKey() async throws {
        let bin = try #require(CLI.binary)
        let git = try #require(Tool.path("git"), "git is not on the PATH (apt-get install git)")
        let repo = try Self.folder("repo")
        defer { try? FileManager.default.removeItem(at: repo) }
        try "app\n".write(to: repo.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
        let quiet = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
        #expect(await ChildProcess.run([git] + quiet + ["init", "-q", repo.path]).status == 0)
        let initPKI = await ChildProcess.run(
            ["/bin/sh", "-c", "cd \"$1\" && exec \"$2\" pki init", "sh", repo.path, bin.path],
            timeout: TestTimeouts.command)
        #expect(initPKI.status == 0, "\(initPKI.stderrText)")
        let keys = repo.appendingPathComponent(".pinninglab/keys")
        #expect(
            ((try? FileManager.default.contentsOfDirectory(atPath: keys.path)) ?? []).contains("proxy-root.pem"),
            "pki init wrote the keys into .pinninglab/ where it was run")
        let ignore = try String(contentsOf: repo.appendingPathComponent(".pinninglab/.gitignore"), encoding: .utf8)
        #expect(ignore.split(separator: "\n").contains("*"))
        #expect(await ChildProcess.run([git, "-C", repo.path] + quiet + ["add", "-A"]).status == 0)
        let staged = await ChildProcess.run([git, "-C", repo.path, "diff", "--cached", "--name-only"])
        #expect(staged.stdoutText.split(separator: "\n") == ["README.md"], "staged: \(staged.stdoutText)")
        let status = await ChildProcess.run([git, "-C", repo.path, "status", "--porcelain", "--untracked-files=all"])
        #expect(!status.stdoutText.contains(".pinninglab"), "git status shows \(status.stdoutText)")
    }

    /// SIGINT (exit 130) or SIGTERM (exit 143) in the middle of `pinlab check`: the run's scratch folder, which
    /// holds a copy of the client's private key for a mutual-TLS scenario, is gone when the process has exited.
    @Test(arguments: [SIGINT, SIGTERM])
    func interruptedCheckLeavesNoScratchFolder(_ sig: Int32) async throws {
        let bin = try #require(CLI.binary)
        let (tmp, env) = try Self.ownTMPDIR("tmpdir")
        defer { try? FileManager.default.removeItem(at: tmp) }
        let marker = "62.\(Int.random(in: 100...999))"
        let check = try ChildProcess.spawnBackground(
            [
                bin.path, "check", "--scenarios", "mtls-required-valid", "--engine", "openssl", "--profiles", "none",
                "--timeout", "120",
            ] + CLI.dirArgs
                + ["--", "sh", "-c", "sleep \(marker); exit 0", "{client.cert}", "{client.key}"],
            environment: env)
        defer { check.terminate() }
        func scratch() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []).filter {
                $0.hasPrefix("pinlab-check-")
            }
        }
        func sleeping() async -> Bool { await ChildProcess.run(["pgrep", "-f", "^sleep \(marker)"]).status == 0 }
        await waitUntil { await sleeping() }
        #expect(await sleeping(), "the client command started")
        let folder = try #require(scratch().first, "the run made its scratch folder in TMPDIR")
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.appendingPathComponent(folder).path)
        #expect(files.contains { $0.hasSuffix(".key") }, "the client's key is in the scratch folder: \(files)")
        kill(check.pid, sig)
        await waitUntil { !check.isRunning }
        #expect(
            check.exitStatus == 128 + sig, "exit status \(String(describing: check.exitStatus)) after signal \(sig)")
        #expect(scratch().isEmpty, "left behind: \(scratch())")
    }

    /// `pinlab timeline` shares the lab's keys (lab-root, the intermediates, K1, K2) with the scratch PKI it issues
    /// hundreds of renewals in: they are read where they are, never linked or copied into `$TMPDIR` (a hard link
    /// outlived `rm -rf` of the PKI folder). SIGINT while the renewals' keys are being written removes the folder
    /// (the writers were still creating files in it), and after SIGKILL the next `pinlab check` — another command —
    /// sweeps what the killed timeline left.
    @Test(.requires("pgrep"))
    func interruptedTimelineLeavesNoKeyAndNeverCopiesTheLabsKeys() async throws {
        let bin = try #require(CLI.binary)
        let (tmp, env) = try Self.ownTMPDIR("tmpdir-timeline")
        defer { try? FileManager.default.removeItem(at: tmp) }
        func scratch() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []).filter { $0.hasPrefix("pinlab-") }
        }
        #expect(try await CLI.run(["pki", "init"] + CLI.dirArgs).status == 0)
        let labKeys = CLI.pkiDirectory.appendingPathComponent("keys")
        let shared = ["lab-root", "lab-intermediate-a", "lab-intermediate-b", "K1", "K2"]
        let labKeyBytes = Set(try shared.map { try Data(contentsOf: labKeys.appendingPathComponent("\($0).pem")) })
        for sig in [SIGINT, SIGKILL] {
            let timeline = try ChildProcess.spawnBackground(
                [bin.path, "timeline", "--preset", "letsencrypt-6day", "--horizon", "3650"] + CLI.dirArgs,
                environment: env)
            defer { timeline.terminate() }
            func keysWritten() -> [URL] {
                guard let folder = scratch().first else { return [] }
                let keys = tmp.appendingPathComponent(folder).appendingPathComponent("keys")
                return ((try? FileManager.default.contentsOfDirectory(atPath: keys.path)) ?? []).map {
                    keys.appendingPathComponent($0)
                }
            }
            await waitUntil { keysWritten().count > 50 }
            let written = keysWritten()
            #expect(written.count > 50, "the timeline is writing its renewals' keys: \(written.count)")
            for name in shared {
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: labKeys.appendingPathComponent("\(name).pem").path)
                #expect((attributes[.referenceCount] as? Int) == 1, "\(name).pem has no second link")
            }
            let copies = written.filter { labKeyBytes.contains((try? Data(contentsOf: $0)) ?? Data()) }
            #expect(copies.isEmpty, "lab keys copied into TMPDIR: \(copies.map(\.lastPathComponent))")
            kill(timeline.pid, sig)
            await waitUntil { !timeline.isRunning }
            if sig == SIGINT {
                #expect(
                    timeline.exitStatus == 130, "exit status \(String(describing: timeline.exitStatus)) after SIGINT")
                #expect(scratch().isEmpty, "left behind after SIGINT: \(scratch())")
            } else {
                #expect(!scratch().isEmpty, "SIGKILL removed nothing")
                let next = await ChildProcess.run(
                    [bin.path, "check", "--client", "correct", "--scenarios", "baseline", "--engine", "openssl"]
                        + CLI.dirArgs,
                    environment: env, timeout: TestTimeouts.command)
                #expect(next.status == 0, "\(next.stderrText)")
                #expect(scratch().isEmpty, "the next pinlab check swept the killed timeline's folder: \(scratch())")
            }
        }
    }

    /// SIGKILL in the middle of `pinlab check` (a CI job's timeout, the OOM killer) removes nothing: the run's scratch
    /// folder, the client's private key in it, stays. The next pinlab run in the same `$TMPDIR` removes it — its lock is
    /// free — and leaves the folder of a run that is still going.
    @Test(.requires("pgrep"))
    func killedCheckIsCleanedUpByTheNextRun() async throws {
        let bin = try #require(CLI.binary)
        let (tmp, env) = try Self.ownTMPDIR("tmpdir-kill")
        defer { try? FileManager.default.removeItem(at: tmp) }
        func start(_ marker: String) throws -> ChildProcess.Background {
            try ChildProcess.spawnBackground(
                [
                    bin.path, "check", "--scenarios", "mtls-required-valid", "--engine", "openssl", "--profiles",
                    "none",
                    "--timeout", "120",
                ] + CLI.dirArgs
                    + ["--", "sh", "-c", "sleep \(marker); exit 0", "{client.cert}", "{client.key}"],
                environment: env)
        }
        func scratch() -> Set<String> {
            Set(
                ((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []).filter {
                    $0.hasPrefix("pinlab-check-")
                })
        }
        func sleeping(_ marker: String) async -> Bool {
            await ChildProcess.run(["pgrep", "-f", "^sleep \(marker)"]).status == 0
        }
        let killedMarker = "63.\(Int.random(in: 100...999))"
        let aliveMarker = "64.\(Int.random(in: 100...999))"
        let killed = try start(killedMarker)
        defer { killed.terminate() }
        await waitUntil { await sleeping(killedMarker) }
        let killedFolder = try #require(scratch().first, "the first run made its scratch folder")
        let alive = try start(aliveMarker)
        defer { alive.terminate() }
        await waitUntil { await sleeping(aliveMarker) }
        let aliveFolder = try #require(scratch().subtracting([killedFolder]).first, "the second run made its own")
        kill(killed.pid, SIGKILL)
        await waitUntil { !killed.isRunning }
        _ = await ChildProcess.run(["pkill", "-f", "^sleep \(killedMarker)"])
        #expect(scratch() == [killedFolder, aliveFolder], "SIGKILL removed nothing: \(scratch())")
        let files = try FileManager.default.contentsOfDirectory(atPath: tmp.appendingPathComponent(killedFolder).path)
        #expect(files.contains { $0.hasSuffix(".key") }, "the killed run's key is still there: \(files)")
        // A link in a shared TMPDIR, named as a scratch folder, to a folder whose lock file nobody holds: never
        // followed, never removed.
        let decoy = try Self.folder("decoy")
        defer { try? FileManager.default.removeItem(at: decoy) }
        try Data().write(to: decoy.appendingPathComponent(".owner"))
        try Data("keep".utf8).write(to: decoy.appendingPathComponent("precious"))
        let link = tmp.appendingPathComponent("pinlab-check-1-DECOYDEC")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: decoy)
        // Another user's folder of the same shape, its lock free (made as root, given to nobody): not ours to remove.
        var foreign: [String] = []
        if getuid() == 0 {
            let other = tmp.appendingPathComponent("pinlab-check-2-OTHERUSR")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: false)
            try Data().write(to: other.appendingPathComponent(".owner"))
            #expect(
                chown(other.path, 65534, 65534) == 0
                    && chown(other.appendingPathComponent(".owner").path, 65534, 65534) == 0)
            foreign = [other.lastPathComponent]
        }
        // The next run, in the same TMPDIR.
        let next = await ChildProcess.run(
            [bin.path, "check", "--client", "correct", "--scenarios", "baseline", "--engine", "openssl"] + CLI.dirArgs,
            environment: env, timeout: TestTimeouts.command)
        #expect(next.status == 0, "\(next.stderrText)")
        #expect(
            scratch() == Set([aliveFolder, link.lastPathComponent] + foreign),
            "the killed run's folder is removed; the live run's, the link and another user's stay: \(scratch())")
        for name in foreign { try FileManager.default.removeItem(at: tmp.appendingPathComponent(name)) }
        #expect(FileManager.default.fileExists(atPath: decoy.appendingPathComponent("precious").path))
        try FileManager.default.removeItem(at: link)
        kill(alive.pid, SIGTERM)
        await waitUntil { !alive.isRunning }
        #expect(scratch().isEmpty, "left behind: \(scratch())")
        _ = await ChildProcess.run(["pkill", "-f", "^sleep \(aliveMarker)"])
    }
}
