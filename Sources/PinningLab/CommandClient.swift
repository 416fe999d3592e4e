public import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// A client under test given as a command template, run as a child process once per cell.
/// Its exit status is its claim (0 = accepted); the server's observation decides the verdict.
public struct CommandClient: Sendable {
    public var name: String
    public var template: CommandTemplate
    /// The profiles the client can express; `nil` means all. Cells outside are skipped, not failed.
    public var supportedProfiles: Set<PinProfile>?
    /// How long one run may take before it is killed and counted as refused (category `timeout`).
    public var timeout: Duration

    public init(
        name: String? = nil, template: CommandTemplate, supportedProfiles: Set<PinProfile>? = nil,
        timeout: Duration = .seconds(10)
    ) {
        self.name = name ?? template.words.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "command"
        self.template = template
        self.supportedProfiles = supportedProfiles
        self.timeout = timeout
    }

    /// The system `curl`, pinning with `--pinnedpubkey` (which only pins the server's own key, so it declares
    /// `none`, `leaf-spki` and `leaf-spki+backup`) and presenting a client certificate when the scenario has one.
    /// `--resolve {resolve}` sends the scenario's host name (`{url}`, SNI, `Host`) to the fixture server on
    /// 127.0.0.1.
    public static func curl(executable: String = "curl", timeout: Duration = .seconds(10)) throws -> CommandClient {
        let t = try CommandTemplate([
            executable, "--silent", "--show-error", "--fail", "--output", "/dev/null", "--max-time", "8",
            "--noproxy", "*", "--resolve", "{resolve}", "--cacert", "{ca}", "[--pinnedpubkey {pins.curl}]",
            "[--cert {client.cert}]", "[--key {client.key}]", "{url}",
        ])
        return CommandClient(
            name: "curl", template: t, supportedProfiles: [.none, .leafSPKI, .leafSPKIBackup],
            timeout: timeout)
    }

    /// Writes the cell's hosts file (``CellContext/hostsFileContents``: every connection's host, in every spelling
    /// a resolver may look up) into `scratch` and names it in `context`, unless the context names one already.
    static func writeHostsFile(_ context: inout CellContext, scratch: URL) {
        guard context.hostsFile == nil else { return }
        let file = scratch.appendingPathComponent("hosts-\(context.host)-\(context.ip)")
        if (try? context.hostsFileContents.write(to: file, atomically: true, encoding: .utf8)) != nil {
            context.hostsFile = file.path
        }
    }

    /// Kills every client command still running (and its process group). Call it when the runner is interrupted:
    /// clients lead their own process groups, so a terminal's Ctrl-C does not reach them.
    public static func killRunningCommands() { LiveChildren.shared.killAll() }

    /// Runs a client command (or a batch harness): standard input from `/dev/null` (or `stdinFile`), the runner's
    /// environment with `environment` added, a process group of its own (an overrun kills the whole tree: SIGTERM,
    /// then SIGKILL one second later), and standard error captured for the verdict's detail.
    static func runCommand(
        _ arguments: [String], environment: [String: String], timeout: Duration, stdinFile: String? = nil,
        stdoutFile: String? = nil, stop: (@Sendable () -> String?)? = nil
    ) async -> ChildProcess.Result {
        await ChildProcess.run(
            arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stdinFile: stdinFile ?? "/dev/null", stdoutFile: stdoutFile, timeout: timeout, newProcessGroup: true,
            killAfter: .seconds(1), stop: stop)
    }

    /// Runs the command for one cell. A template that names steps (``CommandTemplate/usesSteps``) answers with
    /// lines on a one-connection cell too: the cell is its step 1, so the claim is step 1's answer line (the first
    /// of the last N non-empty lines, N the steps the template names), not the exit status — which is the last
    /// transfer's, one of the later steps that are empty here (curl `--next` with an empty URL exits 49).
    public func run(_ context: CellContext, scratch: URL) async -> (outcome: ClientOutcome, milliseconds: Double) {
        if template.usesSteps && context.steps.isEmpty {
            let (outcomes, ms) = await runSteps(context, scratch: scratch, answers: template.stepsNamed)
            return (outcomes[0], ms)
        }
        var context = context
        Self.writeHostsFile(&context, scratch: scratch)
        let args = template.arguments(for: context)
        let r = await Self.runCommand(args, environment: context.environment, timeout: timeout)
        if let e = r.launchError {
            return (ClientOutcome(claim: .refused, category: .other, detail: e, exitStatus: r.status), r.milliseconds)
        }
        if r.timedOut {
            return (
                ClientOutcome(
                    claim: .refused, category: .timeout,
                    detail: "killed after \(timeout) (time limit)", exitStatus: r.status), r.milliseconds
            )
        }
        let text = r.stderrGist.isEmpty ? r.stdoutGist : r.stderrGist
        if r.status == 0 {
            return (ClientOutcome(claim: .accepted, detail: text, exitStatus: 0), r.milliseconds)
        }
        return (ClientOutcome(claim: .refused, category: nil, detail: text, exitStatus: r.status), r.milliseconds)
    }
}

extension CommandClient {
    /// Runs the command once for every connection of a cell made of several (`context.steps`), when its template
    /// names them (``CommandTemplate/usesSteps``): the client keeps whatever state it keeps (curl `--next` keeps
    /// its TLS session cache) across the steps of one process.
    ///
    /// Its answer is one line per step on standard output: the last `steps.count` non-empty lines, in step order
    /// (what it prints before them is not read). A line `0` (curl's `--write-out '%{exitcode}\n'` for a transfer
    /// that succeeded) or `accepted` claims that the step was accepted; any other line (a non-zero exit code,
    /// `refused`) that it was refused. A step without a line is claimed refused. The exit status is not read (it
    /// is usually the last step's). As for every client, the claim is checked against what the server received.
    public func runSteps(_ context: CellContext, scratch: URL) async -> (
        outcomes: [ClientOutcome], milliseconds: Double
    ) {
        await runSteps(context, scratch: scratch, answers: context.stepList.count)
    }

    /// ``runSteps(_:scratch:)`` reading the last `answers` lines (at least one per step of `context`).
    func runSteps(_ context: CellContext, scratch: URL, answers: Int) async -> (
        outcomes: [ClientOutcome], milliseconds: Double
    ) {
        var context = context
        Self.writeHostsFile(&context, scratch: scratch)
        let count = max(context.stepList.count, answers)
        let out = scratch.appendingPathComponent("steps-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil, attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(at: out) }
        let r = await Self.runCommand(
            template.arguments(for: context), environment: context.environment, timeout: timeout, stdoutFile: out.path)
        if let e = r.launchError {
            return (
                Array(
                    repeating: ClientOutcome(claim: .refused, category: .other, detail: e, exitStatus: r.status),
                    count: count), r.milliseconds
            )
        }
        let lines = Self.answerLines(at: out.path, count: count)
        let stderr = r.stderrGist
        var outcomes: [ClientOutcome] = []
        for i in 0..<count {
            let line = i < lines.count ? lines[i] : nil
            let detail: String
            if let line {
                detail = "step \(i + 1) of one process: answered '\(line)'" + (stderr.isEmpty ? "" : "; \(stderr)")
            } else if r.timedOut {
                detail = "killed after \(timeout) (time limit) before it answered for step \(i + 1)"
            } else {
                detail =
                    "the command printed \(lines.count) answer line(s) for \(count) steps: none for step \(i + 1)"
                    + (stderr.isEmpty ? "" : "; \(stderr)")
            }
            let accepted = line.map { $0 == "0" || $0.lowercased() == "accepted" } ?? false
            outcomes.append(
                accepted
                    ? ClientOutcome(claim: .accepted, detail: detail, exitStatus: r.status)
                    : ClientOutcome(
                        claim: .refused, category: line == nil && r.timedOut ? .timeout : nil, detail: detail,
                        exitStatus: r.status))
        }
        return (outcomes, r.milliseconds)
    }

    /// The last `count` non-empty lines of the file (its last 64 KiB), trimmed; fewer when it has fewer.
    public static func answerLines(at path: String, count: Int) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 65_536 ? size - 65_536 : 0)
        let data = (try? handle.readToEnd()) ?? Data()
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return Array(lines.suffix(count))
    }
}

extension CommandClient: PinningClient {
    /// Runs the command from a `ClientTarget` (for use as an in-process client). `{certpins.hex}` holds the
    /// certificate hashes only when the target pins certificates.
    public func run(_ target: ClientTarget) async -> ClientOutcome {
        let creds = target.clientCredentials
        let ctx = CellContext(
            scenario: target.scenario, profile: target.profile, host: target.host, ip: target.ip, port: target.port,
            caFile: target.trustFile ?? "", pins: target.pins.hashes,
            certificatePins: target.pins.kind == .certificateSHA256 ? target.pins.hashes : [],
            clientCertificateFile: creds?.certificateFile, clientKeyFile: creds?.keyFile,
            clientPKCS12File: creds?.pkcs12File, clientPKCS12Password: creds?.pkcs12Password,
            pinScope: target.pinScope)
        // The hosts file and the client's output live in a folder of this call's own, removed when it returns.
        guard let scratch = try? ScratchFolders.make("pinlab-client") else {
            return await run(ctx, scratch: FileManager.default.temporaryDirectory).outcome
        }
        defer { ScratchFolders.remove(scratch) }
        return await run(ctx, scratch: scratch).outcome
    }
}
