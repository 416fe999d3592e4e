import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

@testable import PinningLabTimeline

/// `pinlab timeline` (issue 24): every renewal's real chain is issued, served and checked by the reference client
/// with each pin set. Each expected break is written by reasoning from the policy; the runs confirm it.
@Suite("pinlab timeline", .serialized)
struct TimelineCLITests {
    struct Lane {
        var name: String
        var firstBreakDay: Int?
    }
    struct Run {
        var status: Int32
        var lanes: [String: Lane]
        var renewals: [[String: Any]]
        var stdout: String
    }

    static func timeline(_ args: [String]) async throws -> Run {
        let r = try await CLI.run(["timeline", "--format", "json"] + args + CLI.dirArgs)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)\n\(r.stderr)")
        var lanes: [String: Lane] = [:]
        for l in json["lanes"] as? [[String: Any]] ?? [] {
            let name = (l["lane"] as? [String: Any])?["name"] as? String ?? "?"
            lanes[name] = Lane(name: name, firstBreakDay: (l["firstBreak"] as? [String: Any])?["day"] as? Int)
        }
        return Run(
            status: r.status, lanes: lanes, renewals: json["renewals"] as? [[String: Any]] ?? [], stdout: r.stdout)
    }

    /// 47-day certificates renewed at day 31 (two thirds) with a new key each time: the first re-key uses the
    /// backup K2, so leaf-spki (K1) and leaf-cert break on day 31, leaf-spki+backup (K1, K2) on day 62 (the
    /// second re-key, to a key nobody pinned); the issuer and the root never change, so their pins hold.
    @Test func aReKeyingPolicyBreaksLeafPinsAtTheFirstRenewal() async throws {
        let r = try await Self.timeline(["--preset", "sc081-47", "--horizon", "100"])
        #expect(r.status == 0)
        #expect(r.renewals.map { $0["day"] as? Int } == [0, 31, 62, 93])
        #expect(r.lanes["leaf-cert"]?.firstBreakDay == 31 && r.lanes["leaf-spki"]?.firstBreakDay == 31)
        #expect(r.lanes["leaf-spki+backup"]?.firstBreakDay == 62)
        #expect(r.lanes["intermediate-spki"]?.firstBreakDay == nil && r.lanes["root-spki"]?.firstBreakDay == nil)
    }

    /// A root rollover on day 100, without and with a cross-sign. The client's store gains lab-root-2 on that day
    /// (a trust-store update). Without a cross-sign the chain ends at lab-root-2: the old root's pin breaks on day
    /// 100. With one, the server sends lab-root-2 cross-signed by lab-root, but OpenSSL's verifier prefers the
    /// trusted lab-root-2 to the cross-certificate, so the validated chain still ends at the new root and the old
    /// root's pin breaks on day 100 too (a verifier that prefers the path through the sent cross-certificate would
    /// keep it until the cross-sign is dropped). The pin set with the next root holds throughout; the key never
    /// changes, so leaf pins other than the certificate hash hold.
    @Test(arguments: ["0", "120"])
    func aRootPinHoldsUntilTheRolloverAndTheNextRootKeepsIt(crossSignDays: String) async throws {
        let r = try await Self.timeline([
            "--validity", "90", "--no-rekey", "--rollover-day", "100", "--cross-sign-days", crossSignDays, "--horizon",
            "300",
        ])
        #expect(r.lanes["root-spki"]?.firstBreakDay == 100, "\(r.stdout)")
        #expect(r.lanes["root-spki+next-root"] != nil && r.lanes["root-spki+next-root"]?.firstBreakDay == nil)
        #expect(r.lanes["leaf-spki"]?.firstBreakDay == nil && r.lanes["leaf-spki+backup"]?.firstBreakDay == nil)
        #expect(r.lanes["leaf-cert"]?.firstBreakDay == 60)
        #expect(r.lanes["intermediate-spki"]?.firstBreakDay == 100, "the new root issues from its own intermediates")
        let crossed = r.renewals.filter { $0["crossSigned"] as? Bool == true }.map { $0["day"] as? Int }
        #expect(crossed == (crossSignDays == "0" ? [] : [100, 160]), "\(crossed)")
    }

    /// Let's Encrypt's preset replays the 2026 schedule: day 0 is 2026-03-01, the switch to Generation Y comes on
    /// 2026-05-13 (day 73: the first chain from YR1–YR3, sent with YR cross-signed by the old root), the classic
    /// validity drops to 64 days for the first issuance on or after 2027-02-10 and to 45 on or after 2028-02-16.
    /// A pin on the old pool breaks at the switch; a pin on the old and the new root holds throughout.
    @Test func letsEncryptGenerationY() async throws {
        let r = try await Self.timeline(["--preset", "letsencrypt", "--horizon", "800"])
        #expect(r.status == 0)
        let days = r.renewals.compactMap { $0["day"] as? Int }
        #expect(days.first == 0 && days.contains(73), "\(days)")
        let switched = try #require(r.renewals.first { $0["day"] as? Int == 73 })
        #expect(
            (switched["intermediate"] as? String)?.hasPrefix("lab-yr") == true
                && switched["root"] as? String == "lab-root-2"
                && switched["crossSigned"] as? Bool == true, "\(switched)")
        #expect(
            r.renewals.filter { ($0["day"] as? Int ?? 0) < 73 }.allSatisfy {
                ($0["intermediate"] as? String)?.hasPrefix("lab-yr") == false
            })
        // 2026-03-01 + day → the validity of that day's issuance.
        func validity(_ day: Int) -> Int? { r.renewals.first { $0["day"] as? Int == day }?["validityDays"] as? Int }
        let start = try #require(CAPolicy.day("2026-03-01"))
        for d in days {
            let date = start.addingTimeInterval(Double(d) * 86400)
            let expected = date >= CAPolicy.day("2028-02-16")! ? 45 : date >= CAPolicy.day("2027-02-10")! ? 64 : 90
            #expect(validity(d) == expected, "day \(d): \(validity(d) ?? 0) days, expected \(expected)")
        }
        #expect(days.contains { validity($0) == 45 }, "the horizon reaches the 45-day step: \(days)")
        #expect(r.lanes["intermediate-pool"]?.firstBreakDay == 73)
        #expect(r.lanes["root-spki+next-root"]?.firstBreakDay == nil)
        #expect(r.lanes["leaf-spki+backup"]?.firstBreakDay != nil)
    }

    /// The Generation-Y-shaped hierarchy is issued as Let's Encrypt's is: the root YR with an RSA-4096 key (YE:
    /// P-384), the intermediates with serverAuth and no clientAuth EKU, the cross-certificate by the old root.
    @Test(.requires("openssl")) func generationYHierarchyShape() async throws {
        for ecdsa in [false, true] {
            var policy = CAPolicy.presets[ecdsa ? "letsencrypt-ecdsa" : "letsencrypt"]!
            let start = try #require(CAPolicy.day("2026-03-01"))
            policy = policy.resolved(start: start, horizonDays: 200)
            #expect(policy.rolloverDay == 73)
            let folder = TestScratch.root.appendingPathComponent("pinlab-geny-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let pki = try TimelinePKI.issue(
                policy: policy, renewals: policy.plan(horizonDays: 200, start: start), in: folder, labKeys: nil)
            let root = try pki.identity("lab-root-2")
            #expect(root.keyType == (ecdsa ? .p384 : .rsa4096))
            #expect(root.subject.contains(ecdsa ? "YE" : "YR"), "\(root.subject)")
            let cross = try pki.identity("lab-root-2-cross")
            #expect(cross.issuerName == "lab-root" && cross.keyName == root.keyName)
            for name in policy.poolNames(root: 2) {
                let i = try pki.identity(name)
                #expect(i.keyType == (ecdsa ? .p384 : .rsa2048) && i.issuerName == "lab-root-2")
                let file = folder.appendingPathComponent("\(name).der")
                try Data(i.certificateDER).write(to: file)
                let openssl = try #require(ChildProcess.resolve("openssl"))
                let eku = await ChildProcess.run(
                    [openssl, "x509", "-inform", "der", "-in", file.path, "-noout", "-ext", "extendedKeyUsage"],
                    timeout: TestTimeouts.command)
                let text = String(decoding: eku.stdout, as: UTF8.self)
                #expect(
                    text.contains("TLS Web Server Authentication") && !text.contains("Client Authentication"),
                    "\(name): \(text)")
            }
        }
    }

    /// Let's Encrypt's preset draws each issuance's intermediate from a pool of five: an intermediate pin breaks on
    /// the first issuance not made by lab-intermediate-a (read from the plan), a pin on the whole pool holds.
    @Test func anIntermediatePinBreaksAtTheFirstRotation() async throws {
        let r = try await Self.timeline(["--preset", "letsencrypt-2024"])
        let firstRotation = r.renewals.first { ($0["intermediate"] as? String) != "lab-intermediate-a" }?["day"] as? Int
        #expect(firstRotation != nil, "the seeded draw rotates within a year: \(r.renewals)")
        #expect(r.lanes["intermediate-spki"]?.firstBreakDay == firstRotation)
        #expect(r.lanes["intermediate-pool"]?.firstBreakDay == nil)
        #expect(r.lanes["root-spki"]?.firstBreakDay == nil)
    }

    /// The pins of an export apply: `pinlab export pins-json` pins K1 and the backup K2, so under the re-keying
    /// policy it breaks with leaf-spki+backup on day 62 — and a user pin set that breaks makes the exit status 1.
    /// A root pin of one's own holds: exit 0.
    @Test func exportedPinsAreFollowedAndDecideTheExitStatus() async throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-timeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pins.json")
        let e = try await CLI.run(["export", "pins-json", "--out", file.path] + CLI.dirArgs)
        #expect(e.status == 0, "\(e.stderr)")
        let r = try await Self.timeline(["--preset", "sc081-47", "--horizon", "100", "--pins", file.path])
        #expect(r.lanes["pins.json: localhost"]?.firstBreakDay == 62, "\(r.lanes.keys.sorted())")
        #expect(r.status == 1)
        let root = try await CLI.run(["pki", "pins", "lab-root", "--format", "okhttp"] + CLI.dirArgs)
        let pin = try #require(
            root.stdout.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("sha256/") }.map(String.init),
            "\(root.stdout)")
        let held = try await Self.timeline(["--preset", "sc081-47", "--horizon", "100", "--pin", pin])
        #expect(held.lanes["your pins"]?.firstBreakDay == nil && held.status == 0, "\(held.stdout)")
    }

    /// The timeline's scratch PKI shares the lab's CA keys (hard links, or 0600 copies): nothing of it may stay in
    /// the temporary folder after a run, whether it succeeds or fails on a bad option after opening the PKI.
    @Test func noScratchFolderWithKeysIsLeftBehind() async throws {
        let bin = try #require(CLI.binary)
        let tmp = TestScratch.root.appendingPathComponent("pinlab-timeline-tmp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp.path
        let ok = await ChildProcess.run(
            [bin.path, "timeline", "--preset", "sc081-47", "--horizon", "100"] + CLI.dirArgs,
            environment: env, timeout: TestTimeouts.command)
        #expect(ok.status == 0, "\(ok.stderrText)")
        let engine = await ChildProcess.run(
            [bin.path, "timeline", "--engine", "bogus"] + CLI.dirArgs, environment: env, timeout: TestTimeouts.command)
        #expect(engine.status == 2 && engine.stderrText.contains("--engine"), "\(engine.stderrText)")
        let left = ((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []).filter {
            $0.hasPrefix("pinlab-timeline")
        }
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test func badOptionsNameTheOptionAndTheFix() async throws {
        for (args, text) in [
            (["--preset", "bogus"], "--preset: 'bogus' is not a preset"),
            (["--validity", "0"], "--validity: 0 is not a validity in days"),
            (["--rollover-day", "9999"], "--rollover-day: day 9999 is outside the horizon"),
            (["--pin", "sha256/nope"], "--pin: 'sha256/nope' is not sha256/BASE64 of 32 bytes"),
            (["--format", "pdf"], "--format: 'pdf' is not a format"),
            (["--start", "tomorrow"], "--start: 'tomorrow' is not a date"),
            // A date the formatter would roll over (to 2027-03-02), and a number that overflowed the plan (trap, 132).
            (["--start", "2027-02-30"], "--start: '2027-02-30' is not a date"),
            (
                ["--rollover-day", "5", "--horizon", "10", "--cross-sign-days", "9223372036854775807"],
                "--cross-sign-days: 9223372036854775807 days"
            ),
            (["--pins", "/nonexistent/pins.json"], "--pins: /nonexistent/pins.json"),
        ] {
            let r = try await CLI.run(["timeline"] + args + CLI.dirArgs)
            #expect(r.status == 2, "\(args): exit \(r.status)")
            #expect(r.stderr.contains(text), "\(args): \(r.stderr)")
        }
    }

    /// The HTML picture renders in headless Chromium and is not blank (CI installs Chromium).
    @Test(
        .enabled(if: LabTests.chromium != nil || Tool.inCI, "Chromium is not installed (apt-get install -y chromium)"))
    func htmlPictureRendersInHeadlessChromium() async throws {
        let chromium = try #require(LabTests.chromium, "CI installs Chromium (.ci/run); none was found")
        let python = try #require(LabTests.python)
        let dir = TestScratch.root.appendingPathComponent("pinlab-timeline-shot-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = dir.appendingPathComponent("timeline.html")
        let png = dir.appendingPathComponent("timeline.png")
        let r = try await CLI.run(
            [
                "timeline", "--preset", "letsencrypt-2024", "--rollover-day", "200", "--format", "html", "--output",
                html.path,
            ] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let page = try String(contentsOf: html, encoding: .utf8)
        #expect(page.contains("<svg") && page.contains("intermediate-spki") && page.contains("breaks on day"))
        let shot = await ChildProcess.run(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
                "--screenshot=\(png.path)", html.absoluteString,
            ], timeout: TestTimeouts.browser)
        #expect(FileManager.default.fileExists(atPath: png.path), "no screenshot: \(shot.output)")
        let check = await ChildProcess.run(
            [python, LabTests.root.appendingPathComponent("labs/tools/pngcheck.py").path, png.path],
            timeout: .seconds(30))
        #expect(check.status == 0, "\(check.output)")
    }
}
