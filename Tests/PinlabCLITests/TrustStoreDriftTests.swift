import Foundation
import PinningLabTestSupport
import PinningLabTimeline
import Testing

/// The trust-store drift table (issue 41, `Compatibility/drift.py`, the DocC article TrustStoreDrift): the real
/// verifiers' answers for leaf → YR1 → YR cross-signed by X1 with X1, YR or both trusted must be the committed
/// table, and one row is checked by hand-built chains.
@Suite("trust-store drift table", .serialized)
struct TrustStoreDriftTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var script: String { repository.appendingPathComponent("Compatibility/drift.py").path }
    static var article: URL {
        repository.appendingPathComponent("Sources/PinningLab/PinningLab.docc/TrustStoreDrift.md")
    }

    static func pinlab() throws -> String {
        try #require(CLI.binary, "the pinlab binary was not found next to the test bundle; run `swift build` first")
            .path
    }

    /// The committed row of a verifier and a store: verdict, path, anchor, X1 pin, YR pin.
    static func committedRow(_ verifier: String, _ store: String) throws -> [String] {
        let doc = try String(contentsOf: article, encoding: .utf8)
        for line in doc.split(separator: "\n") where line.hasPrefix("| \(verifier) | \(store) |") {
            return line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        Issue.record("the article has no row for \(verifier) / \(store)")
        return []
    }

    /// Every stack drift.py knows is measured and agrees with the committed table; in CI a missing stack fails.
    @Test(.requires("python3", "openssl", "certtool", "go", "java", "node"))
    func theMeasuredTableIsTheCommittedOne() async throws {
        let r = try await run(
            ["env", "PINLAB=\(try Self.pinlab())", "python3", Self.script, "--check"] + (Tool.inCI ? ["--all"] : []),
            timeout: 600)
        print(r.stderr)
        #expect(r.status == 0, "drift.py --check failed:\n\(r.stderr)")
        #expect(r.stderr.contains("24 rows match the committed table"), "\(r.stderr)")
    }

    /// The chain drift.py issues is the timeline's Generation Y (RSA): its root's name and key type and its
    /// intermediates' key type and serverAuth-only EKU are `CAPolicy.generationY(ecdsa: false)`'s.
    @Test(.requires("python3"))
    func theChainIsTheTimelinesGenerationY() async throws {
        let r = try await run(["python3", Self.script, "--spec"])
        #expect(r.status == 0, "\(r.stderr)")
        let h = CAPolicy.generationY(ecdsa: false)
        #expect(
            r.stdout.contains("CN: \(h.rootCommonName), O: PinningLab }\n    keyType: \(h.rootKeyType)"), "\(r.stdout)")
        #expect(
            r.stdout.contains(
                "keyType: \(h.intermediateKeyType)\n    usages: [\(h.intermediateUsages.joined(separator: ", "))]"),
            "\(r.stdout)")
        #expect(
            r.stdout.contains("issuer: lab-root\n    key: lab-root-2\n"),
            "the cross-certificate: YR's key, issued by X1")
        #expect(h.intermediates.first == "lab-yr1" && r.stdout.contains("  lab-yr1:\n"))
    }

    /// By hand: `openssl verify -show_chain` of the leaf with YR1 and the cross-certificate as untrusted
    /// certificates ends at lab-root (X1) when only X1 is trusted — the path holds X1's key, so a pin on X1 holds —
    /// and at lab-root-2 (YR) when only YR is trusted, where X1's key is nowhere in the path; the committed table's
    /// OpenSSL rows say the same.
    @Test(.requires("python3", "openssl"))
    func openSSLVerifyRowsByHand() async throws {
        let dir = TestScratch.root.appendingPathComponent("drift-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let spec = try await run(["python3", Self.script, "--spec"])
        try spec.stdout.write(to: dir.appendingPathComponent("spec.yaml"), atomically: true, encoding: .utf8)
        let pki = dir.appendingPathComponent("pki")
        let initRun = try await run(
            [
                try Self.pinlab(), "pki", "init", "--spec", dir.appendingPathComponent("spec.yaml").path, "--dir",
                pki.path,
            ],
            timeout: 120)
        #expect(initRun.status == 0, "\(initRun.stderr)")
        func cert(_ name: String) -> String { pki.appendingPathComponent("certs/\(name)/cert.pem").path }
        func concat(_ names: [String], _ file: String) throws -> String {
            let path = dir.appendingPathComponent(file).path
            let text = try names.map { try String(contentsOfFile: cert($0), encoding: .utf8) }.joined()
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let inter = try concat(["lab-yr1", "lab-root-2-cross"], "inter.pem")
        func subject(_ name: String) async throws -> String {
            let r = try await run(["openssl", "x509", "-in", cert(name), "-noout", "-subject", "-nameopt", "oneline"])
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(
                of: "subject=", with: "")
        }
        let x1 = try await subject("lab-root")
        let yr = try await subject("lab-root-2")
        #expect(x1 != yr)
        /// The verified path's certificates, leaf first, as `-show_chain` prints them (`(untrusted)`: not in the store).
        func verify(_ store: [String]) async throws -> [String] {
            let ca = try concat(store, "store-\(store.joined(separator: "+")).pem")
            let r = try await run([
                "openssl", "verify", "-show_chain", "-purpose", "sslserver", "-verify_hostname", "localhost",
                "-CAfile", ca, "-untrusted", inter, cert("drift-leaf"),
            ])
            #expect(r.status == 0 && r.stdout.contains(": OK"), "\(r.output)")
            return r.stdout.split(separator: "\n").compactMap { line in
                line.hasPrefix("depth=")
                    ? line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
                    : nil
            }
        }
        // X1 only: leaf, YR1, YR cross-signed by X1 (untrusted), then X1 itself — trusted, the anchor.
        let withX1 = try await verify(["lab-root"])
        #expect(withX1.count == 4, "\(withX1)")
        #expect(withX1.last == x1, "the path ends at lab-root: \(withX1)")
        #expect(withX1.dropLast().allSatisfy { $0.hasSuffix("(untrusted)") })
        #expect(withX1[2] == yr + " (untrusted)", "the cross-certificate, which carries YR's key")
        // YR only: leaf, YR1, then YR — trusted; X1's name (and key) is not in the path.
        let withYR = try await verify(["lab-root-2"])
        #expect(withYR.count == 3 && withYR.last == yr, "the path ends at lab-root-2: \(withYR)")
        #expect(!withYR.contains { $0.hasPrefix(x1) }, "X1 is not in the path: a pin on lab-root's key breaks")

        // The committed table agrees: verdict, path, anchor, X1 pin, YR pin.
        let x1Row = try Self.committedRow("OpenSSL `openssl verify`", "X1 only")
        #expect(
            Array(x1Row.dropFirst(2).prefix(5)) == [
                "✓ accepted", "leaf → YR1 → YR (cross-signed by X1) → X1", "X1", "✓ holds", "✓ holds",
            ], "\(x1Row)")
        let yrRow = try Self.committedRow("OpenSSL `openssl verify`", "YR only")
        #expect(
            Array(yrRow.dropFirst(2).prefix(5)) == ["✓ accepted", "leaf → YR1 → YR", "YR", "✗ breaks", "✓ holds"],
            "\(yrRow)")
    }

    /// `pinlab timeline`'s text for the Generation Y presets points at the article; a preset without a next
    /// hierarchy does not.
    @Test func timelineTextPointsAtTheArticle() async throws {
        let r = try await CLI.run(
            ["timeline", "--preset", "letsencrypt", "--start", "2026-05-10", "--horizon", "5"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.stdout.contains("trust-store drift:") && r.stdout.contains("PinningLab.docc/TrustStoreDrift.md"),
            "\(r.stdout)")
        let old = try await CLI.run(["timeline", "--preset", "sc081-47", "--horizon", "5"] + CLI.dirArgs)
        #expect(old.status == 0, "\(old.stderr)")
        #expect(!old.stdout.contains("trust-store drift:"), "\(old.stdout)")
        #expect(FileManager.default.fileExists(atPath: Self.article.path))
    }

    /// `--trust-store` makes the timeline's own client (OpenSSL, pinning against the verified chain) trust one store:
    /// with X1 only the path goes through the cross-certificate to lab-root, so the root-spki lane (lab-root's key)
    /// holds across the 2026-05-13 switch; with both roots OpenSSL ends the path at lab-root-2, so it breaks on the
    /// switch's day (day 3 from 2026-05-10) — the OpenSSL rows of the table. The lane with both roots' keys holds in both.
    @Test func theTimelinesRootLanesFollowTheTrustStore() async throws {
        func firstBreaks(_ store: String) async throws -> [String: Int?] {
            let r = try await CLI.run(
                [
                    "timeline", "--preset", "letsencrypt", "--start", "2026-05-10", "--horizon", "5",
                    "--format", "json", "--trust-store", store,
                ] + CLI.dirArgs)
            #expect(r.status == 0, "\(r.stderr)")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
                "\(r.stdout)\n\(r.stderr)")
            #expect(json["trustStore"] as? String == store)
            var out: [String: Int?] = [:]
            for l in json["lanes"] as? [[String: Any]] ?? [] {
                let name = (l["lane"] as? [String: Any])?["name"] as? String ?? "?"
                out[name] = (l["firstBreak"] as? [String: Any])?["day"] as? Int
            }
            return out
        }
        let x1 = try await firstBreaks("x1")
        #expect(x1["root-spki"] == .some(nil), "lab-root's pin holds with X1 only: \(x1)")
        #expect(x1["root-spki+next-root"] == .some(nil))
        let both = try await firstBreaks("both")
        #expect(
            both["root-spki"] == .some(3), "lab-root's pin breaks on the switch when both roots are trusted: \(both)")
        #expect(both["root-spki+next-root"] == .some(nil))
        let bad = try await CLI.run(
            ["timeline", "--preset", "sc081-47", "--horizon", "5", "--trust-store", "yr"] + CLI.dirArgs)
        #expect(bad.status != 0 && bad.stderr.contains("--trust-store"), "\(bad.stderr)")
    }
}
