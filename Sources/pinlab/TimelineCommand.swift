import ArgumentParser
import Foundation
import PinningLab
import PinningLabExports
import PinningLabTimeline

struct TimelineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract:
            "Which pins survive a CA's behaviour over time: issue every renewal's real chain and run each pin set against it.",
        discussion: """
            Given a CA policy (a preset or validity, re-keying, an intermediate pool, a root rollover) and a horizon, \
            pinlab issues the real chain of every renewal — sharing the lab's keys (K1, the backup K2, lab-root, \
            lab-intermediate-a and -b), so the lab's pins and any export of them apply — serves each from a fixture \
            server and runs the reference correct client with each pin set: the catalogue's profiles, the pool's \
            intermediates and the next root where the policy has them, plus yours (--pin, --pins FILE). It reports \
            the day each pin set first breaks and why.

            Presets: letsencrypt (Let's Encrypt today, replicated with lab keys: 90 days renewed at day 60 with a \
            new key, 5 intermediates drawn at random until 2026-05-13, then Generation Y — root YR, RSA-4096, sent \
            cross-signed by the old root; intermediates YR1–YR3 without clientAuth — and 64 days from 2027-02-10, \
            45 from 2028-02-16; day 0 is 2026-03-01 unless --start), letsencrypt-ecdsa (the same with YE, P-384, \
            and YE1–YE3), letsencrypt-2024 (the 2024 pool R10–R14 alone), letsencrypt-6day (6 days, renewed every 4), sc081 (SC-081v3's maximum validity at each issuance: 200 \
            days until 2027-03-15, 100 until 2029-03-15, then 47; same key), sc081-47 (47 days, new key).

            Example: pinlab timeline --preset letsencrypt --horizon 365 --format html --output timeline.html

            Exit status: 0 when every pin set you gave (--pin/--pins) holds through the horizon (or you gave none), \
            1 when one breaks, 2 on a usage or setup error.
            """
    )

    @Option(
        help: "A CA policy preset: \(CAPolicy.presetNames.joined(separator: ", ")). Options below override its fields.")
    var preset: String?

    @Option(help: "Certificate validity in days (6, 47, 100, 200, 398…).")
    var validity: Int?

    @Option(help: "Days between renewals (default: two thirds of the validity).")
    var renewEvery: Int?

    @Flag(inversion: .prefixedNo, help: "A new key at every renewal (the first re-key uses the backup K2).")
    var rekey: Bool?

    @Option(help: "Issuing intermediates under the root (1 to 16).")
    var pool: Int?

    @Option(help: "How the pool rotates: round-robin or random (seeded: the same draws every run).")
    var rotation: String?

    @Option(help: "The day a new root (lab-root-2) takes over; clients trust it from that day.")
    var rolloverDay: Int?

    @Option(help: "Days after the rollover during which the new root is sent cross-signed by the old one.")
    var crossSignDays: Int?

    @Option(help: "Days to follow.")
    var horizon: Int = 365

    @Option(help: "Day 0, YYYY-MM-DD (default: today); decides SC-081v3's validity.")
    var start: String?

    @Option(help: "A pin of yours, sha256/BASE64 (SPKI); repeatable: one pin set.")
    var pin: [String] = []

    @Option(
        help:
            "A pin configuration file (network_security_config.xml, Info.plist, TrustKit, OkHttp, pins.json): one pin set per host."
    )
    var pins: [String] = []

    @Option(help: "text, json or html.")
    var format: String = "text"

    @Option(help: "Write the report to this file instead of standard output.")
    var output: String?

    @Option(
        help:
            "x1, yr or both: the client trusts lab-root (X1's place), lab-root-2 (YR's) or both from day 0 (default: lab-root, plus lab-root-2 from the rollover). See the DocC article TrustStoreDrift."
    )
    var trustStore: String?

    @Option(help: "openssl or gnutls: the engine that serves the chains.")
    var engine: String = "openssl"

    @OptionGroup var pkiFolder: PKIFolder

    func policy() throws -> CAPolicy {
        var p: CAPolicy
        if let preset {
            guard let found = CAPolicy.presets[preset] else {
                throw ValidationError(
                    "--preset: '\(preset)' is not a preset; use \(CAPolicy.presetNames.joined(separator: ", ")).")
            }
            p = found
        } else {
            p = CAPolicy()
        }
        if preset != nil && (validity != nil || rekey != nil || pool != nil || rotation != nil || renewEvery != nil) {
            p.name += " (modified)"
        }
        if let validity {
            p.validityDays = validity
            p.followsSC081 = false
            p.validitySteps = nil
        }
        if let renewEvery { p.renewEveryDays = renewEvery }
        if let rekey { p.rekey = rekey }
        if let pool { p.poolSize = pool }
        if let rotation {
            guard let r = CAPolicy.Rotation(rawValue: rotation) else {
                throw ValidationError("--rotation: '\(rotation)' is not a rotation; use round-robin or random.")
            }
            p.rotation = r
        }
        if let rolloverDay {
            p.rolloverDay = rolloverDay
            p.rolloverDate = nil
        }
        if let crossSignDays { p.crossSignDays = crossSignDays }
        if let problem = p.problem(horizonDays: horizon) {
            throw ValidationError("\(problem.option): \(problem.problem). Fix: \(problem.fix).")
        }
        return p
    }

    func run() async throws {
        let policy = try policy()
        guard ["text", "json", "html"].contains(format) else {
            throw ValidationError("--format: '\(format)' is not a format; use text, json or html.")
        }
        var day0 = Date()
        if let start = start ?? policy.defaultStart {
            // The formatter rolls 2027-02-30 over to 2027-03-02: a date is one only if it reads back the same.
            let iso = ISO8601DateFormatter()
            guard let d = iso.date(from: start + "T00:00:00Z"), iso.string(from: d).hasPrefix(start + "T") else {
                throw ValidationError("--start: '\(start)' is not a date; write YYYY-MM-DD, e.g. 2027-01-31.")
            }
            day0 = d
        }
        var store: TimelineTrustStore?
        if let trustStore {
            guard let s = TimelineTrustStore(rawValue: trustStore) else {
                throw ValidationError("--trust-store: '\(trustStore)' is not a trust store; use x1, yr or both.")
            }
            store = s
        }
        requireWritable(output, option: "--output")
        var lanes: [TimelineLane] = []
        if !pin.isEmpty {
            var hashes: [String] = []
            for p in pin {
                let body = p.hasPrefix("sha256/") ? String(p.dropFirst(7)) : p
                guard let data = Data(base64Encoded: body), data.count == 32 else {
                    throw ValidationError(
                        "--pin: '\(p)' is not sha256/BASE64 of 32 bytes (e.g. sha256/\(String(repeating: "A", count: 43))=)."
                    )
                }
                hashes.append(data.base64EncodedString())
            }
            lanes.append(
                TimelineLane(name: "your pins", description: "--pin " + hashes.joined(separator: ", "), pins: hashes))
        }
        for file in pins {
            let sets: [(host: String, pins: [String])]
            do { sets = try PinAudit.pinSets(in: file) } catch { fail("--pins: \(error.description)") }
            if sets.isEmpty {
                fail(
                    "--pins: \(file) declares no pin set. Fix: give a file with pins (pinlab export pins-json writes one)."
                )
            }
            for s in sets {
                lanes.append(
                    TimelineLane(
                        name: "\(URL(fileURLWithPath: file).lastPathComponent): \(s.host)",
                        description: "\(s.pins.count) pin(s) for \(s.host) from \(file)", pins: s.pins))
            }
        }
        let pki = await pkiFolder.open()
        // Ctrl-C or SIGTERM removes the run's scratch PKI (hundreds of renewal keys) before the process ends.
        let interrupts = interruptingClientCommands("pinlab.timeline.signals")
        defer { interrupts.cancel() }
        let report: TimelineReport
        do {
            report = try await Timeline.run(
                policy: policy, horizonDays: horizon, start: day0, labKeys: pki, extraLanes: lanes, engine: engine,
                trustStore: store)
        } catch let e as TimelineError {
            await interrupts.holdIfInterrupted()
            fail(e.description)
        } catch {
            await interrupts.holdIfInterrupted()
            fail("timeline: \(error)")
        }
        await interrupts.holdIfInterrupted()
        let text: String
        switch format {
        case "json": text = try report.json()
        case "html": text = report.html()
        default: text = report.text()
        }
        if let output {
            writeOrFail(text, to: output, prefix: "--output: ")
            print("wrote \(output)")
            if format != "text" { print(report.text(), terminator: "") }
        } else {
            print(text, terminator: "")
        }
        let yours = report.lanes.suffix(lanes.count)
        if yours.contains(where: { $0.firstBreak != nil }) { throw ExitCode(1) }
    }
}
