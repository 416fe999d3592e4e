import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// Command clients through scenarios made of several connections: the per-step placeholders (`{url.2}`, …) and
/// `PINLAB_STEPS`, one process for every step of a cell, one answer line per step.
@Suite("Command clients across steps")
struct StepCommandTemplateTests {
    @Test func stepPlaceholdersAreKnownAndCounted() throws {
        let t = try CommandTemplate([
            "client", "{url.1}", "--next", "[--pin {pins.curl.2}]", "{resolve.2}", "-w", "%{exitcode}",
        ])
        #expect(t.usesSteps && t.stepsNamed == 2)
        #expect(try !CommandTemplate(["curl", "{url}", "-w", "%{http_code}"]).usesSteps)
        // A step number is 1 or more, and only the per-connection placeholders come per step.
        for bad in ["{url.0}", "{ca.2}", "{scenario.1}", "{url.01}", "{urls.2}"] {
            let e = #expect(throws: CheckSetupError.self) { try CommandTemplate(["client", bad]) }
            #expect(e?.description.contains("unknown placeholder") == true, "\(bad): \(String(describing: e))")
            #expect(e?.description.contains("{url.N}") == true, "\(bad): the fix names the step family")
        }
    }

    @Test func stepValuesAndTheirEnvironment() throws {
        var context = CellContext(
            scenario: "s", profile: .leafSPKI, host: "api.pinning.test", port: 4001, caFile: "/ca.pem",
            pins: [Array(repeating: 1, count: 32)], certificatePins: [])
        // One connection: the cell is step 1, later steps are empty (an optional group naming them drops out).
        let one = try CommandTemplate(["c", "{url.1}", "[--next {url.2}]"]).arguments(for: context)
        #expect(one == ["c", "https://api.pinning.test:4001/"])
        context.steps = [
            StepContext(step: 1, host: "cdn.pinning.test", port: 4002, pins: [], certificatePins: []),
            StepContext(step: 2, host: "api.pinning.test", port: 4002, pins: context.pins, certificatePins: []),
        ]
        let args = try CommandTemplate([
            "c", "{url.1}", "[--pin {pins.curl.1}]", "--next", "{resolve.2}", "[--pin {pins.curl.2}]",
        ])
        .arguments(for: context)
        #expect(
            args == [
                "c", "https://cdn.pinning.test:4002/", "--next", "api.pinning.test:4002:127.0.0.1", "--pin",
                "sha256//AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
            ])
        let env = context.environment
        #expect(env["PINLAB_URL_2"] == "https://api.pinning.test:4002/")
        #expect(env["PINLAB_PINS_1"] == "")
        let json = try #require(env["PINLAB_STEPS"])
        let steps = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(steps.map { $0["host"] as? String } == ["cdn.pinning.test", "api.pinning.test"])
        #expect(steps.map { ($0["pins"] as? [String])?.count } == [0, 1])
        #expect(steps.map { $0["step"] as? Int } == [1, 2])
    }

    /// The answer lines: the last N non-empty lines of standard output.
    @Test func answersAreTheLastLinesOfStandardOutput() throws {
        let file = TestScratch.root.appendingPathComponent("answers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "starting\n0\n\n  35  \n".write(to: file, atomically: true, encoding: .utf8)
        #expect(CommandClient.answerLines(at: file.path, count: 2) == ["0", "35"])
        #expect(CommandClient.answerLines(at: file.path, count: 5) == ["starting", "0", "35"])
    }
}

/// The step placeholders with curl's `--next`: one curl process makes both connections of a cell.
@Suite("curl --next across the steps of a cell", .serialized, .requires("curl"))
struct CurlNextTests {
    /// Both steps in one curl process; `-w '%{exitcode}\n'` prints curl's result per transfer (0 = sent its request),
    /// and a failed transfer does not stop the next one (no `--fail-early`).
    static func curlNext() throws -> CommandClient {
        func transfer(_ n: Int) -> [String] {
            [
                "--silent", "--show-error", "--output", "/dev/null", "--write-out", "%{exitcode}\\n", "--max-time", "8",
                "--noproxy", "*", "--resolve", "{resolve.\(n)}", "--cacert", "{ca}",
                "[--pinnedpubkey {pins.curl.\(n)}]", "{url.\(n)}",
            ]
        }
        let template = try CommandTemplate(["curl"] + transfer(1) + ["--next"] + transfer(2))
        return CommandClient(
            name: "curl-next", template: template, supportedProfiles: [.none, .leafSPKI, .leafSPKIBackup])
    }

    /// What curl's documented behaviour predicts, on both engines:
    /// - curl's tool shares one TLS session cache among the transfers of one invocation (`--next` included), and it
    ///   offers a cached session only to a transfer whose primary SSL configuration matches the one that made it —
    ///   `Curl_ssl_config_matches` compares the CA file, the verification settings *and the pinned public key*.
    /// - curl checks `--pinnedpubkey` after every handshake, resumed or not, against the server certificate the TLS
    ///   library reports (a resumed session's own certificate).
    /// So on `resumption-genuine` the second transfer (same options) resumes the first's session and is accepted
    /// under every profile; on `resumption-after-unpinned-handshake` the second transfer, which pins, does not
    /// match the session made without `--pinnedpubkey`: it makes a full handshake, sees the proxy's key and refuses
    /// (pin-mismatch) — under `none` both transfers have the same options and the second resumes. curl passes every
    /// cell, and resumes exactly where the configurations match.
    @Test func curlNextOnTheResumptionScenarios() async throws {
        let report = try await TestLab.runner().run(
            .command(try Self.curlNext()),
            options: CheckOptions(scenarios: ["resumption-genuine", "resumption-after-unpinned-handshake"], jobs: 4))
        #expect(report.verdicts.count == 2 * 6 * 2)
        for v in report.verdicts where v.status != .skipped {
            #expect(v.status == .pass, "\(v.scenario) \(v.profile) \(v.engine): \(v.reason)")
            let steps = try #require(v.steps, "\(v.scenario) \(v.profile) \(v.engine) has no steps: \(v.reason)")
            #expect(steps.count == 2)
            let resumed = steps[1].evidence?.resumption != nil
            switch (v.scenario, v.profile) {
            case ("resumption-genuine", _), ("resumption-after-unpinned-handshake", .none):
                #expect(resumed, "\(v.scenario) \(v.profile) \(v.engine): step 2 should resume step 1's session")
                #expect(steps[1].observed == .accepted)
            default:
                #expect(
                    !resumed,
                    "\(v.scenario) \(v.profile) \(v.engine): a pinned transfer must not match an unpinned session")
                #expect(steps[1].observed == .refused && steps[1].category == .pinMismatch, "\(steps[1].reason)")
            }
        }
        #expect(report.summary.pass == 2 * 3 * 2)
    }

    /// rotation-between-connections with both transfers in one curl process: the server is scheduled to serve the
    /// emergency re-key from its second connection on (there is no moment between two transfers of one process to
    /// rotate in), with a context of its own, so curl's offered session cannot resume. Predicted: step 1 accepted
    /// under every profile, step 2 a full handshake (no resumption on the wire) that presents K3 — refused under the
    /// leaf pins (pin-mismatch), accepted under `none`; every cell passes on both engines.
    @Test func curlNextMeetsTheRotationOnItsSecondConnection() async throws {
        let report = try await TestLab.runner().run(
            .command(try Self.curlNext()), options: CheckOptions(scenarios: ["rotation-between-connections"], jobs: 4))
        let run = report.verdicts.filter { $0.status != .skipped }
        #expect(run.count == 3 * 2)
        for v in run {
            let cell = "\(v.profile) \(v.engine)"
            #expect(v.status == .pass, "\(cell): \(v.status) \(v.reason)")
            let steps = try #require(v.steps, "\(cell) has no steps: \(v.reason)")
            #expect(steps[0].observed == .accepted, "\(cell)")
            #expect(
                steps[1].evidence?.resumption == nil,
                "\(cell): step 2 must be a full handshake with the new certificate")
            #expect(
                steps[1].observed == (v.profile == PinProfile.none ? .accepted : .refused),
                "\(cell): \(steps[1].reason)")
        }
    }

    /// A one-connection cell run by the same template is its step 1 (later steps empty, so curl's second transfer
    /// fails and curl exits 49): judged by step 1's answer line, not by the exit status. Before, every accepted
    /// cell read "the client claims it refused, but the server received its request" (disagree).
    @Test func aOneConnectionCellIsJudgedByStepOnesAnswer() async throws {
        let report = try await TestLab.runner().run(
            .command(try Self.curlNext()), options: CheckOptions(scenarios: ["baseline", "rekey"], jobs: 4))
        let run = report.verdicts.filter { $0.status != .skipped }
        #expect(run.count == 2 * 3 * 2)
        for v in run {
            #expect(v.status == .pass, "\(v.scenario) \(v.profile) \(v.engine): \(v.status) \(v.reason)")
        }
        // Both claims occur: accepted (baseline) and refused for the pin (rekey under leaf-spki).
        #expect(run.contains { $0.scenario == "baseline" && $0.observed == .accepted })
        #expect(run.contains { $0.scenario == "rekey" && $0.profile == .leafSPKI && $0.observed == .refused })
    }

    /// The same curl without step placeholders runs one process per connection: those cells are not judged.
    @Test func aTemplateWithoutStepsIsUnsupported() async throws {
        let report = try await TestLab.runner().run(
            .command(try CommandClient.curl()),
            options: CheckOptions(engines: [Engines.openssl], profiles: [.leafSPKI], scenarios: ["resumption-genuine"]))
        let v = try #require(report.verdict("resumption-genuine", .leafSPKI, "openssl"))
        #expect(v.status == .unsupported)
        #expect(v.reason.contains("names no step"), "\(v.reason)")
    }
}
