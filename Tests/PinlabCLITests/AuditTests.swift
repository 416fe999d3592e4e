import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// `pinlab audit`: fixture files with one defect each, written here from the lab PKI's pins (no committed keys),
/// report exactly that finding — and a clean file none; bad input names the file and line and exits 2.
@Suite("pinlab audit")
struct AuditTests {
    static func day(_ offset: Int) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: Date().addingTimeInterval(TimeInterval(offset) * 86_400))
    }

    /// The SPKI pins of the lab PKI's identities (`pinlab pki pins --format json`).
    /// leaf-v1's certificate as PEM, from the shared lab PKI (whose identity files a library opening does not write:
    /// on a fresh machine certs/leaf-v1/cert.pem may not be there yet).
    static func leafPEM() async throws -> String {
        PEM.encode(try #require(try await Lab.openPKI(directory: CLI.pkiDirectory)["leaf-v1"]).certificateDER)
    }

    static func pins() async throws -> [String: String] {
        let r = try await CLI.run(
            ["pki", "pins", "--format", "json", "leaf-v1", "leaf-v3-rekey", "lab-root"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var out: [String: String] = [:]
        for row in rows {
            out[row["name"] as! String] = (row["spkiSHA256"] as? [String: Any])?["base64"] as? String
        }
        return out
    }

    func tempDir() throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-audit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    struct Audit {
        var status: Int32
        var ids: [String]
        var findings: [[String: Any]]
        var stderr: String
    }

    /// `pinlab audit --format json ARGS`: the finding ids in order.
    func audit(_ args: [String]) async throws -> Audit {
        let r = try await CLI.run(["audit", "--format", "json"] + args)
        guard r.status != 2 else { return Audit(status: 2, ids: [], findings: [], stderr: r.stderr) }
        let doc = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)\(r.stderr)")
        let findings = try #require(doc["findings"] as? [[String: Any]])
        return Audit(status: r.status, ids: findings.map { $0["id"] as! String }, findings: findings, stderr: r.stderr)
    }

    static func nsc(
        domain: String = #"<domain includeSubdomains="true">api.pinning.test</domain>"#,
        attributes: String = "", pins: [String], expiration: String = day(365), extra: String = "",
        anchors: String = "", debug: String = #"<certificates src="user" overridePins="false" />"#
    ) -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
            <domain-config\(attributes)>
                \(domain)
                \(anchors)
                <pin-set expiration="\(expiration)">
        \(pins.map { "            <pin digest=\"SHA-256\">\($0)</pin>" }.joined(separator: "\n"))
                </pin-set>
            </domain-config>
            \(extra)
            <debug-overrides>
                <trust-anchors>
                    \(debug)
                </trust-anchors>
            </debug-overrides>
        </network-security-config>

        """
    }

    @Test("network-security-config: each defect is exactly its finding, with its MASTG id; a clean file has none")
    func networkSecurityConfig() async throws {
        let p = try await Self.pins()
        let (k1, k2) = (p["leaf-v1"]!, p["leaf-v3-rekey"]!)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, String, [String])] = [
            ("clean", Self.nsc(pins: [k1, k2]), []),
            ("expired", Self.nsc(pins: [k1, k2], expiration: Self.day(-10)), ["expired-pin-set"]),
            ("soon", Self.nsc(pins: [k1, k2], expiration: Self.day(10)), ["pin-set-expires-soon"]),
            ("single", Self.nsc(pins: [k1]), ["single-pin"]),
            ("backup-equal", Self.nsc(pins: [k1, k1]), ["backup-equals-current"]),
            (
                "override",
                Self.nsc(
                    pins: [k1, k2],
                    extra:
                        #"<base-config><trust-anchors><certificates src="system" /><certificates src="user" overridePins="true" /></trust-anchors></base-config>"#
                ), ["override-pins"]
            ),
            (
                "user-ca",
                Self.nsc(
                    pins: [k1, k2],
                    extra: #"<base-config><trust-anchors><certificates src="user" /></trust-anchors></base-config>"#),
                ["user-ca-trusted"]
            ),
            (
                "debug-override", Self.nsc(pins: [k1, k2], debug: #"<certificates src="user" overridePins="true" />"#),
                ["debug-override-pins"]
            ),
            (
                "cleartext", Self.nsc(attributes: #" cleartextTrafficPermitted="true""#, pins: [k1, k2]),
                ["cleartext-permitted"]
            ),
            (
                "subdomain-config",
                Self.nsc(
                    pins: [k1, k2],
                    extra:
                        #"<domain-config><domain includeSubdomains="false">cdn.api.pinning.test</domain></domain-config>"#
                ), ["subdomains-unpinned"]
            ),
            (
                "apex", Self.nsc(domain: #"<domain includeSubdomains="false">pinning.test</domain>"#, pins: [k1, k2]),
                ["subdomains-unpinned"]
            ),
        ]
        var expectedMASTG: [String: String] = [
            "expired-pin-set": "MASTG-TEST-0243", "cleartext-permitted": "MASTG-TEST-0235",
            "user-ca-trusted": "MASTG-TEST-0286",
            "override-pins": "MASTG-TEST-0286", "subdomains-unpinned": "MASTG-TEST-0242",
        ]
        for (label, text, expected) in cases {
            let file = dir.appendingPathComponent("\(label).xml")
            try text.write(to: file, atomically: true, encoding: .utf8)
            let a = try await audit([file.path])
            #expect(a.ids == expected, "\(label): \(a.ids) \(a.stderr)")
            let failing = a.findings.contains { ["medium", "high"].contains($0["severity"] as? String) }
            #expect(a.status == (failing ? 1 : 0), "\(label): exit \(a.status) (--fail-on medium by default)")
            for f in a.findings {
                let id = f["id"] as! String
                #expect(f["file"] as? String == file.path && (f["line"] as? Int ?? 0) > 1, "\(label): \(f)")
                #expect(!(f["fix"] as? String ?? "").isEmpty && !(f["mastgNote"] as? String ?? "").isEmpty)
                #expect(
                    f["mastg"] as? String == expectedMASTG.removeValue(forKey: id) ?? f["mastg"] as? String,
                    "\(label): \(f)")
                if ["pin-set-expires-soon", "single-pin", "backup-equals-current", "debug-override-pins"].contains(id) {
                    #expect(f["mastg"] == nil, "\(id) has no MASTG test and says so: \(f)")
                }
            }
        }
        // The expired pin set's line is the <pin-set>'s.
        let expired = try await audit([dir.appendingPathComponent("expired.xml").path])
        #expect(expired.findings.first?["line"] as? Int == 6, "\(expired.findings)")
        // --soon moves the window; the same override in a debug-only resource folder never reaches release.
        #expect(try await audit(["--soon", "5", dir.appendingPathComponent("soon.xml").path]).ids == [])
        let debugDir = dir.appendingPathComponent("app/src/debug/res/xml", isDirectory: true)
        try FileManager.default.createDirectory(at: debugDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            at: dir.appendingPathComponent("debug-override.xml"),
            to: debugDir.appendingPathComponent("network_security_config.xml"))
        #expect(try await audit([debugDir.appendingPathComponent("network_security_config.xml").path]).ids == [])
        // --fail-on: a medium finding passes a high bar.
        #expect(try await audit(["--fail-on", "high", dir.appendingPathComponent("cleartext.xml").path]).status == 0)
        #expect(try await audit(["--fail-on", "high", dir.appendingPathComponent("single.xml").path]).status == 1)
        // pinlab's own export is clean.
        let exported = dir.appendingPathComponent("exported.xml")
        let e = try await CLI.run(
            ["export", "nsc", "--host", "api.pinning.test", "--out", exported.path] + CLI.dirArgs)
        #expect(e.status == 0)
        #expect(try await audit([exported.path]).ids == [])
    }

    @Test("--against CHAIN.pem: pins that match nothing in the chain are a finding; a matching chain is clean")
    func againstChain() async throws {
        let p = try await Self.pins()
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("n.xml")
        try Self.nsc(pins: [p["leaf-v1"]!, p["leaf-v3-rekey"]!]).write(to: file, atomically: true, encoding: .utf8)
        for (name, expected) in [
            ("leaf-v1", [String]()), ("proxy-root", ["pins-match-nothing"]), ("leaf-v2-renewal", []),
        ] {
            let pem = dir.appendingPathComponent("\(name).pem")
            let r = try await CLI.run(["pki", "export", name, "--format", "pem", "--out", pem.path] + CLI.dirArgs)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try await audit(["--against", pem.path, file.path]).ids == expected, "\(name)")
        }
        let notPEM = dir.appendingPathComponent("empty.pem")
        try "nothing".write(to: notPEM, atomically: true, encoding: .utf8)
        let bad = try await audit(["--against", notPEM.path, file.path])
        #expect(
            bad.status == 2 && bad.stderr.contains("--against") && bad.stderr.contains("no PEM certificate"),
            "\(bad.stderr)")
    }

    /// `--against HOST:PORT`: the chain a server on this machine presents — a fixture server serving leaf-v1 (the
    /// pinned K1: clean) and one serving the emergency re-key (K3, pinned by nobody: the pin set matches nothing).
    /// Anything off loopback is refused before any connection; a port with no server is a clear error.
    @Test("--against HOST:PORT: the chain of a server on this machine, loopback only")
    func againstALocalServer() async throws {
        let p = try await Self.pins()
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("n.xml")
        try Self.nsc(pins: [p["leaf-v1"]!, p["leaf-v3-rekey"]!]).write(to: file, atomically: true, encoding: .utf8)
        let pki = try Lab.pki(directory: CLI.pkiDirectory)
        for (name, expected) in [("leaf-v1", [String]()), ("leaf-emergency-rekey", ["pins-match-nothing"])] {
            let server = try await FixtureServer.start(
                engine: Engines.openssl, configuration: .makeServerConfiguration(try #require(pki[name])),
                label: "audit-\(name)")
            let a = try await audit(["--against", "127.0.0.1:\(server.port)", "--sni", "api.pinning.test", file.path])
            #expect(a.ids == expected, "\(name): \(a.ids) \(a.stderr)")
            let viaLocalhost = try await audit(["--against", "localhost:\(server.port)", file.path])
            #expect(viaLocalhost.ids == expected, "\(name) via localhost: \(viaLocalhost.stderr)")
            await server.stop()
        }
        let remote = try await audit(["--against", "192.0.2.10:443", file.path])
        #expect(remote.status == 2 && remote.stderr.contains("loopback only"), "\(remote.stderr)")
        let closed = try await audit(["--against", "127.0.0.1:1", file.path])
        #expect(
            closed.status == 2 && closed.stderr.contains("--against: no chain from 127.0.0.1:1"), "\(closed.stderr)")
    }

    @Test(
        "Info.plist (TrustKit, NSPinnedDomains, ATS), TrustKit Swift, OkHttp and pins.json: each defect is its finding")
    func otherFormats() async throws {
        let p = try await Self.pins()
        let (k1, k2, root) = (p["leaf-v1"]!, p["leaf-v3-rekey"]!, p["lab-root"]!)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        func plist(_ body: String) -> String {
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \(body)
            </dict>
            </plist>

            """
        }
        func trustKit(_ hashes: [String], extra: String = "") -> String {
            plist(
                """
                <key>TSKConfiguration</key>
                <dict>
                    <key>TSKPinnedDomains</key>
                    <dict>
                        <key>api.pinning.test</key>
                        <dict>
                            <key>TSKPublicKeyHashes</key>
                            <array>\(hashes.map { "<string>\($0)</string>" }.joined())</array>
                            <key>TSKIncludeSubdomains</key><true/>
                            \(extra)
                        </dict>
                    </dict>
                </dict>
                """)
        }
        func pinned(_ list: String, _ hashes: [String], ats: String = "") -> String {
            plist(
                """
                <key>NSAppTransportSecurity</key>
                <dict>
                    \(ats)
                    <key>NSPinnedDomains</key>
                    <dict>
                        <key>api.pinning.test</key>
                        <dict>
                            <key>NSIncludesSubdomains</key><true/>
                            <key>\(list)</key>
                            <array>\(hashes.map { "<dict><key>SPKI-SHA256-BASE64</key><string>\($0)</string></dict>" }.joined())</array>
                        </dict>
                    </dict>
                </dict>
                """)
        }
        func swift(_ hashes: [String], enforce: String = "true") -> String {
            """
            import TrustKit
            let config: [String: Any] = [
                kTSKSwizzleNetworkDelegates: false,
                kTSKPinnedDomains: [
                    "api.pinning.test": [
                        kTSKEnforcePinning: \(enforce),
                        kTSKIncludeSubdomains: true,
                        kTSKPublicKeyHashes: [
            \(hashes.map { "                \"\($0)\", // a pin" }.joined(separator: "\n"))
                        ],
                    ],
                ],
            ]

            """
        }
        func okhttp(_ pattern: String, _ hashes: [String]) -> String {
            "val pinner = CertificatePinner.Builder()\n"
                + hashes.map { "    .add(\"\(pattern)\", \"sha256/\($0)\")\n" }.joined() + "    .build()\n"
        }
        func pinsJSON(_ pins: [(String, String)], expiration: String = Self.day(365)) -> String {
            let rows = pins.map { #"{"sha256": "\#($0.0)", "role": "\#($0.1)", "certificate": "leaf"}"# }
            return
                #"{"format": "pinninglab-pins", "version": 1, "domains": [{"host": "api.pinning.test", "includeSubdomains": true, "expiration": "\#(expiration)", "pins": [\#(rows.joined(separator: ",\n"))]}]}"#
                + "\n"
        }
        let cases: [(String, String, [String])] = [
            ("tk-clean.plist", trustKit([k1, k2]), []),
            (
                "tk-not-enforced.plist", trustKit([k1, k2], extra: "<key>TSKEnforcePinning</key><false/>"),
                ["pinning-not-enforced"]
            ),
            (
                "tk-expired.plist",
                trustKit([k1, k2], extra: "<key>TSKExpirationDate</key><string>\(Self.day(-3))</string>"),
                ["expired-pin-set"]
            ),
            ("tk-single.plist", trustKit([k1]), ["single-pin"]),
            ("ns-clean.plist", pinned("NSPinnedLeafIdentities", [k1, k2]), []),
            ("ns-single-ca.plist", pinned("NSPinnedCAIdentities", [root]), ["single-pin"]),
            (
                "ns-arbitrary.plist",
                pinned("NSPinnedLeafIdentities", [k1, k2], ats: "<key>NSAllowsArbitraryLoads</key><true/>"),
                ["cleartext-permitted"]
            ),
            ("tk-clean.swift", swift([k1, k2]), []),
            ("tk-backup-equal.swift", swift([k1, k1]), ["backup-equals-current"]),
            ("tk-not-enforced.swift", swift([k1, k2], enforce: "false"), ["pinning-not-enforced"]),
            ("ok-clean.kt", okhttp("api.pinning.test", [k1, k2]), []),
            ("ok-single.kt", okhttp("api.pinning.test", [k1]), ["single-pin"]),
            ("ok-one-label.kt", okhttp("*.pinning.test", [k1, k2]), ["subdomains-unpinned"]),
            ("clean.json", pinsJSON([(k1, "current"), (k2, "backup")]), []),
            ("backup-equal.json", pinsJSON([(k1, "current"), (k1, "backup")]), ["backup-equals-current"]),
            (
                "expired.json", pinsJSON([(k1, "current"), (k2, "backup")], expiration: Self.day(-1)),
                ["expired-pin-set"]
            ),
        ]
        for (name, text, expected) in cases {
            let file = dir.appendingPathComponent(name)
            try text.write(to: file, atomically: true, encoding: .utf8)
            let a = try await audit([file.path])
            #expect(a.ids == expected, "\(name): \(a.ids) \(a.stderr)")
            let failing = a.findings.contains { ["medium", "high"].contains($0["severity"] as? String) }
            #expect(a.status == (failing ? 1 : 0), "\(name): exit \(a.status) (--fail-on medium by default)")
            for f in a.findings where !name.hasSuffix(".json") {
                #expect(f["line"] as? Int != nil, "\(name): a line for \(f)")
            }
        }
        let tk = try await audit([dir.appendingPathComponent("tk-not-enforced.plist").path])
        #expect(
            tk.findings.first?["keyPath"] as? String
                == "TSKConfiguration.TSKPinnedDomains.api.pinning.test.TSKEnforcePinning")
        #expect(tk.findings.first?["mastg"] as? String == "MASTG-TEST-0068")
        // Several files at once; the text report names each finding's place.
        let r = try await CLI.run([
            "audit", dir.appendingPathComponent("ok-single.kt").path, dir.appendingPathComponent("tk-clean.plist").path,
        ])
        #expect(
            r.status == 1 && r.stdout.contains("ok-single.kt:2: high single-pin [api.pinning.test]")
                && r.stdout.contains("1 finding (1 high) in 2 files, 2 pinned domains."), "\(r.stdout)")
    }

    @Test("bad input: malformed XML, an unknown digest, base64 of the wrong length — exit 2, naming the file and line")
    func badInput() async throws {
        let p = try await Self.pins()
        let k1 = p["leaf-v1"]!
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sha1 = Data(repeating: 7, count: 20).base64EncodedString()
        let cases: [(String, String, [String])] = [
            (
                "malformed.xml",
                "<network-security-config>\n  <domain-config>\n    <domain>a.test</domain>\n</network-security-config>\n",
                ["malformed.xml:", "malformed XML", "xmllint"]
            ),
            (
                "digest.xml", Self.nsc(pins: [k1]).replacingOccurrences(of: "SHA-256", with: "SHA-1"),
                ["digest.xml:7:", "digest=\"SHA-1\"", "SHA-256"]
            ),
            ("short.xml", Self.nsc(pins: [k1, sha1]), ["short.xml:8:", "20 bytes", "SHA-1 digest"]),
            ("notbase64.xml", Self.nsc(pins: [k1, "not*base64"]), ["notbase64.xml:8:", "is not base64"]),
            (
                "sha1.kt", "CertificatePinner.Builder()\n  .add(\"a.test\", \"sha1/\(sha1)\")\n",
                ["sha1.kt:2:", "sha1", "sha256"]
            ),
            (
                "role.json",
                #"{"format": "pinninglab-pins", "version": 1, "domains": [{"host": "a.test", "includeSubdomains": false, "pins": [{"sha256": "\#(k1)", "role": "primary", "certificate": "leaf"}]}]}"#,
                ["role.json:", "domains[0].pins[0].role", "current or backup"]
            ),
            (
                "syntax.json",
                "{\"format\": \"pinninglab-pins\",\n \"version\": 1,\n \"domains\": [\n  {\"host\": \"a.test\" \"x\": 1}\n]}\n",
                ["syntax.json:4:", "not a JSON document", "json.tool"]
            ),
            ("nothing.txt", "hello\n", ["nothing.txt", "not a pin configuration"]),
        ]
        for (name, text, words) in cases {
            let file = dir.appendingPathComponent(name)
            try text.write(to: file, atomically: true, encoding: .utf8)
            let r = try await CLI.run(["audit", file.path])
            #expect(r.status == 2, "\(name): exit \(r.status) \(r.stdout)")
            #expect(r.stdout.isEmpty, "\(name): nothing on standard output")
            for w in words { #expect(r.stderr.contains(w), "\(name): '\(w)' in \(r.stderr)") }
        }
        let missing = try await CLI.run(["audit", dir.appendingPathComponent("absent.xml").path])
        #expect(
            missing.status == 2 && missing.stderr.contains("absent.xml") && missing.stderr.contains("cannot be read"))
        for (args, word) in [
            (["--fail-on", "severe"], "--fail-on"), (["--format", "yaml"], "--format"), ([], "FILE"),
        ] {
            let r = try await CLI.run(
                ["audit"] + args + (word == "FILE" ? [] : [dir.appendingPathComponent("digest.xml").path]))
            #expect(r.status == 2 && r.stderr.contains(word), "\(args): \(r.stderr)")
        }
    }

    // MARK: - Hostile input: each is refused (exit 2, naming the file and the line) or read, quickly, never a crash

    /// Writes `text` to `name` in `dir`; the path.
    func write(_ dir: URL, _ name: String, _ text: String) throws -> String {
        let file = dir.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// `pinlab ARGS` and how long it took.
    /// Runs pinlab and measures the CPU time it used (user and system), not the wall time: a full CI run on two cores
    /// reached a load of 49, and a linear reader that takes 1 s of CPU took 48 s of wall time.
    func timedRun(_ args: [String]) async throws -> (CLI.Result, Duration) {
        let r = try await CLI.run(args)
        return (r, .milliseconds(Int64((r.cpuSeconds * 1000).rounded())))
    }

    /// Nesting 20,000 to 100,000 levels deep overflowed the stack (exit 139): releasing the XML tree recursed once per
    /// element, as did the property-list reader and the TrustKit Swift literal reader. Now refused at 256 levels.
    @Test("deep nesting (XML, property list, Swift literal) is refused at 256 levels, not a stack overflow")
    func deepNesting() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let n = 100_000
        let cases: [(String, String, [String])] = [
            (
                "deep.xml",
                "<foo>" + String(repeating: "<x>", count: n) + String(repeating: "</x>", count: n) + "</foo>\n",
                ["deep.xml:1:", "nested deeper than 256 levels", "Fix:"]
            ),
            (
                "deepnsc.xml",
                "<network-security-config>\n" + String(repeating: "<x>", count: n) + String(repeating: "</x>", count: n)
                    + "</network-security-config>\n", ["deepnsc.xml:2:", "nested deeper than 256 levels"]
            ),
            (
                "deep.plist",
                "<plist><dict><key>TSKConfiguration</key>" + String(repeating: "<array>", count: 30_000)
                    + String(repeating: "</array>", count: 30_000) + "</dict></plist>\n",
                ["deep.plist:1:", "nested deeper than 256 levels"]
            ),
            (
                "deep.swift",
                "let c = [kTSKPinnedDomains: " + String(repeating: "[", count: n) + String(repeating: "]", count: n)
                    + "]\n",
                ["deep.swift:1:", "kTSKPinnedDomains is nested deeper than 256 levels", "Fix:"]
            ),
            (
                "deep-dict.swift",
                "let c = [kTSKPinnedDomains: " + String(repeating: "[\"x\": ", count: n)
                    + String(repeating: "]", count: n) + "]\n",
                ["deep-dict.swift:1:", "nested deeper than 256 levels"]
            ),
        ]
        for (name, text, words) in cases {
            let file = try write(dir, name, text)
            let r = try await CLI.run(["audit", file])
            #expect(r.status == 2, "\(name): exit \(r.status) \(r.stderr)")
            for w in words { #expect(r.stderr.contains(w), "\(name): '\(w)' in \(r.stderr)") }
        }
        // timeline --pins reads through the same code.
        let t = try await CLI.run(
            ["timeline", "--horizon", "5", "--pins", dir.appendingPathComponent("deep.plist").path] + CLI.dirArgs)
        #expect(t.status == 2 && t.stderr.contains("nested deeper than 256 levels"), "exit \(t.status) \(t.stderr)")
        // 250 levels are still read.
        let ok = try write(
            dir, "nested250.xml",
            "<network-security-config>" + String(repeating: "<domain-config>", count: 250)
                + String(repeating: "</domain-config>", count: 250) + "</network-security-config>\n")
        #expect(try await audit([ok]).status == 0)
    }

    /// Inputs that took minutes (time grew with the square of their size): each is now read in one pass.
    @Test("large inputs take linear time: pins.json, domain-configs, OkHttp .add( calls")
    func linearTime() async throws {
        let p = try await Self.pins()
        let (k1, k2) = (p["leaf-v1"]!, p["leaf-v3-rekey"]!)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // CPU time: far above the linear readers' (about 1 s here), below the quadratic ones' (over 60 s).
        let bound = Duration.seconds(45)
        // pins.json with 5,000 domains: each host's line was searched from line 0 (over 60 s; now about 1 s).
        let domains = (0..<5000).map { i in
            #"{"host": "h\#(i).example.com", "includeSubdomains": true, "expiration": "\#(Self.day(i == 4999 ? 10 : 365))", "pins": ["#
                + #"{"role": "current", "certificate": "leaf", "sha256": "\#(k1)"},"# + "\n"
                + #"{"role": "backup", "certificate": "leaf", "sha256": "\#(k2)"}]}"#
        }
        let json = try write(
            dir, "pins5000.json",
            #"{"format": "pinninglab-pins", "version": 1, "domains": ["# + "\n"
                + domains.joined(separator: ",\n") + "\n]}\n")
        let (j, jt) = try await timedRun(["audit", "--format", "json", json])
        // More than nothing: the CPU time is measured (a zero would make every bound below pass).
        #expect(
            j.status == 1 && jt > .milliseconds(10) && jt < bound,
            "pins.json: exit \(j.status) after \(jt) of CPU \(j.stderr.prefix(300))")
        let doc = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        #expect(((doc?["files"] as? [[String: Any]])?.first?["domains"] as? [String])?.count == 5000)
        // Lines are still found: the last domain's expiration (the only one soon) is on its host's line.
        let findings = (doc?["findings"] as? [[String: Any]])?.map { "\($0["id"] ?? "")@\($0["line"] ?? "")" }
        #expect(findings == ["pin-set-expires-soon@10000"], "\(findings ?? [])")
        // 20,000 nested <domain-config>: each walked all its ancestors (15 s); now refused by depth at once.
        let nested = try write(
            dir, "nested20k.xml",
            "<network-security-config>" + String(repeating: "<domain-config>", count: 20_000)
                + String(repeating: "</domain-config>", count: 20_000) + "</network-security-config>\n")
        let (n, nt) = try await timedRun(["audit", nested])
        #expect(n.status == 2 && nt < bound && n.stderr.contains("nested deeper than 256"), "\(nt) \(n.stderr)")
        // 20,000 pinned domain-configs and 20,000 unpinned ones: each unpinned one was compared with every pinned one
        // (16 s in a release build; now under 1 s in a debug build).
        var configs = (0..<20_000).map { i in
            #"<domain-config><domain includeSubdomains="true">p\#(i).pinning.test</domain><pin-set><pin digest="SHA-256">\#(k1)</pin><pin digest="SHA-256">\#(k2)</pin></pin-set></domain-config>"#
        }
        configs += (0..<20_000).map { i in #"<domain-config><domain>u\#(i).other.test</domain></domain-config>"# }
        configs.append(#"<domain-config><domain>cdn.p19999.pinning.test</domain></domain-config>"#)
        let wide = try write(
            dir, "wide.xml",
            "<network-security-config>\n" + configs.joined(separator: "\n") + "\n</network-security-config>\n")
        let (w, wt) = try await timedRun(["audit", "--format", "json", wide])
        let wideIDs =
            ((try? JSONSerialization.jsonObject(with: Data(w.stdout.utf8)) as? [String: Any])?["findings"]
            as? [[String: Any]])?
            .map { "\($0["id"] ?? "")@\($0["line"] ?? "")" }
        #expect(wt < bound && wideIDs == ["subdomains-unpinned@40002"], "\(wt) \(wideIDs ?? []) \(w.stderr)")
        // OkHttp: 200,000 `.add(` never closed, each scanned to the end of the file (over 60 s); 50,000 nested (16 s).
        let unclosed = try write(dir, "unclosed.kt", String(repeating: ".add(", count: 200_000) + "\n")
        let (u, ut) = try await timedRun(["audit", unclosed])
        #expect(u.status == 2 && ut < bound && u.stderr.contains("no OkHttp pin found"), "\(ut) \(u.stderr)")
        let deepAdd = try write(
            dir, "nested.kt",
            String(repeating: ".add(\"a.com\", ", count: 50_000) + " \"sha256/\(k1)\""
                + String(repeating: ")", count: 50_000) + "\n")
        let (d, dt) = try await timedRun(["audit", "--format", "json", deepAdd])
        #expect(d.status == 1 && dt < bound && d.stdout.contains("single-pin"), "\(dt) \(d.stderr)")
    }

    /// PEM.decodeAll (--against, and every PEM reader) searched the rest of the text per block, which Foundation
    /// copies on Linux: 20,000 certificates took 16 s, 40,000 over a minute. Now one pass over the bytes.
    @Test("PEM.decodeAll takes linear time, and still skips junk and blocks that are not base64")
    func pemDecodeAllIsLinear() async throws {
        let pem = try await Self.leafPEM()
        let der = try #require(PEM.decodeAll(pem).first)
        let clock = ContinuousClock()
        let start = clock.now
        let all = PEM.decodeAll(String(repeating: pem, count: 20_000))
        let elapsed = clock.now - start
        #expect(
            all.count == 20_000 && all.allSatisfy { $0 == der } && elapsed < .seconds(30), "\(all.count) in \(elapsed)")
        // A block whose body is not base64: PEM.encode's frame around "!!" (made here, so no file holds a PEM block).
        let frame = PEM.encode([0]).split(separator: "\n")
        let notBase64 = "\(frame[0])\n!!\n\(frame[2])\n"
        #expect(PEM.decodeAll("junk\n" + pem + "\r\n" + notBase64 + pem) == [der, der])
    }

    /// --against read any file whole (a 54 MB PEM peaked at 1.16 GB): a chain over 1 MB is refused before decoding.
    @Test("--against: a file over 1 MB, a directory or a FIFO is refused at once, naming the file and the limit")
    func againstLimits() async throws {
        let p = try await Self.pins()
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = try write(dir, "n.xml", Self.nsc(pins: [p["leaf-v1"]!, p["leaf-v3-rekey"]!]))
        let pem = try await Self.leafPEM()
        let many = try write(dir, "many.pem", String(repeating: pem, count: 3000))
        // One block of 1.9 MB (30,000 lines of 64 base64 characters), encoded here.
        let huge = try write(dir, "huge.pem", PEM.encode([UInt8](repeating: 0, count: 30_000 * 48)))
        for file in [many, huge] {
            let (r, t) = try await timedRun(["audit", "--against", file, config])
            // the message below: refused before decoding
            #expect(r.status == 2, "\(file): exit \(r.status) after \(t)")
            #expect(
                r.stderr.contains("--against: \(file) is ") && r.stderr.contains("larger than the 1.0 MB"),
                "\(r.stderr)")
        }
        // A real chain still works.
        let chain = try write(dir, "chain.pem", pem)
        #expect(try await audit(["--against", chain, config]).ids == [])
        let sub = dir.appendingPathComponent("sub.pem")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let fifo = dir.appendingPathComponent("fifo.pem").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for (path, words) in [(sub.path, "is a directory"), (fifo, "is not a regular file (a FIFO)")] {
            let (r, t) = try await timedRun(["audit", "--against", path, config])
            #expect(r.status == 2 && r.stderr.contains("--against: \(path) \(words)"), "\(t): \(r.stderr)")
        }
    }

    /// Wrong types in an Info.plist passed as "0 findings" (TSKEnforcePinning as <string>false</string> even turns
    /// pinning off in TrustKit); a bad kTSKExpirationDate in Swift was skipped; an empty OkHttp file had no pins.
    @Test("Info.plist wrong types, a bad Swift expiration, a file without pins: exit 2, naming the key path and type")
    func wrongTypes() async throws {
        let p = try await Self.pins()
        let (k1, k2) = (p["leaf-v1"]!, p["leaf-v3-rekey"]!)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        func trustKit(_ domains: String) -> String {
            "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict>\n<key>TSKConfiguration</key>\n<dict>\n<key>TSKPinnedDomains</key>\n"
                + domains + "\n</dict>\n</dict>\n</plist>\n"
        }
        let hashes = "<key>TSKPublicKeyHashes</key><array><string>\(k1)</string><string>\(k2)</string></array>"
        let domain = "TSKConfiguration.TSKPinnedDomains.example.com"
        let cases: [(String, String, [String])] = [
            (
                "enforce-string.plist",
                trustKit(
                    "<dict><key>example.com</key><dict>\(hashes)<key>TSKEnforcePinning</key><string>false</string></dict></dict>"
                ),
                [
                    "enforce-string.plist:7:", "\(domain).TSKEnforcePinning",
                    "a <string> ('false'), expected <true/> or <false/>", "NOT enforced",
                ]
            ),
            (
                "enforce-int.plist",
                trustKit(
                    "<dict><key>example.com</key><dict>\(hashes)<key>TSKEnforcePinning</key><integer>0</integer></dict></dict>"
                ),
                ["\(domain).TSKEnforcePinning", "an <integer> ('0')", "NOT enforced"]
            ),
            (
                "hashes-string.plist",
                trustKit(
                    "<dict><key>example.com</key><dict><key>TSKPublicKeyHashes</key><string>\(k1)</string></dict></dict>"
                ),
                ["\(domain).TSKPublicKeyHashes", "a <string>", "expected an <array>"]
            ),
            (
                "hashes-missing.plist",
                trustKit("<dict><key>example.com</key><dict><key>TSKIncludeSubdomains</key><true/></dict></dict>"),
                ["\(domain):", "no TSKPublicKeyHashes"]
            ),
            (
                "domains-array.plist", trustKit("<array><string>example.com</string></array>"),
                ["domains-array.plist:7:", "TSKConfiguration.TSKPinnedDomains: an <array>, expected a <dict>"]
            ),
            (
                "pin-int.plist",
                trustKit(
                    "<dict><key>example.com</key><dict><key>TSKPublicKeyHashes</key><array><integer>5</integer></array></dict></dict>"
                ),
                ["\(domain).TSKPublicKeyHashes[0]", "an <integer> ('5'), expected a <string>"]
            ),
            (
                "sub-string.plist",
                trustKit(
                    "<dict><key>example.com</key><dict>\(hashes)<key>TSKIncludeSubdomains</key><string>YES</string></dict></dict>"
                ),
                ["\(domain).TSKIncludeSubdomains", "expected <true/> or <false/>"]
            ),
            (
                "leaf-string.plist",
                "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n<dict><key>NSAppTransportSecurity</key><dict><key>NSPinnedDomains</key><dict>"
                    + "<key>example.com</key><dict><key>NSPinnedLeafIdentities</key><string>\(k1)</string></dict></dict></dict></dict>\n</plist>\n",
                [
                    "NSAppTransportSecurity.NSPinnedDomains.example.com.NSPinnedLeafIdentities", "a <string>",
                    "expected an <array>",
                ]
            ),
            (
                "bad-date.swift",
                "let c = [kTSKPinnedDomains: [\"a.com\": [kTSKPublicKeyHashes: [\"\(k1)\", \"\(k2)\"],\n kTSKExpirationDate: \"2020-99-99\"]]]\n",
                ["bad-date.swift:2:", "kTSKExpirationDate", "\"2020-99-99\" is not a date", "YYYY-MM-DD"]
            ),
            ("empty.kt", "", ["empty.kt:", "no OkHttp pin found"]),
        ]
        for (name, text, words) in cases {
            let file = try write(dir, name, text)
            let r = try await CLI.run(["audit", file])
            #expect(r.status == 2, "\(name): exit \(r.status) \(r.stdout)")
            for w in words { #expect(r.stderr.contains(w), "\(name): '\(w)' in \(r.stderr)") }
        }
        // <true/> and <false/> still read as before.
        let off = try write(
            dir, "off.plist",
            trustKit(
                "<dict><key>example.com</key><dict>\(hashes)<key>TSKIncludeSubdomains</key><true/><key>TSKEnforcePinning</key><false/></dict></dict>"
            ))
        #expect(try await audit([off]).ids == ["pinning-not-enforced"])
    }

    /// Entities blanked text silently; libxml2's error numbers were printed raw ("XML error 45"); an 11 MB well-formed
    /// file was called malformed.
    @Test("XML messages in words: entities refused, errors named, a size limit, not UTF-8")
    func xmlMessages() async throws {
        let p = try await Self.pins()
        let (k1, k2) = (p["leaf-v1"]!, p["leaf-v3-rekey"]!)
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lol =
            #"<!ENTITY lol "lol">"#
            + (1..<10).map { i in
                "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i > 1 ? String(i - 1) : "");", count: 10) + "\">"
            }.joined()
        let valid = Self.nsc(pins: [k1, k2])
        let line =
            #"<domain-config><domain includeSubdomains="true">h.pinning.test</domain><pin-set><pin digest="SHA-256">\#(k1)</pin><pin digest="SHA-256">\#(k2)</pin></pin-set></domain-config>"#
            + "\n"
        let cases: [(String, String, [String])] = [
            (
                "ent.xml",
                "<?xml version=\"1.0\"?>\n<!DOCTYPE x [ <!ENTITY xxe SYSTEM \"file:///etc/passwd\"> <!ENTITY loc \"a.test\"> ]>\n"
                    + "<network-security-config><domain-config><domain>&loc;</domain><pin-set><pin digest=\"SHA-256\">\(k1)</pin></pin-set></domain-config></network-security-config>\n",
                [
                    "ent.xml:2:", "the DOCTYPE declares the entity 'xxe'", "DTD entities are not supported",
                    "write the value literally",
                ]
            ),
            (
                "laughs.xml",
                "<?xml version=\"1.0\"?>\n<!DOCTYPE l [\(lol)]>\n<network-security-config><domain-config><domain>&lol9;</domain></domain-config></network-security-config>\n",
                ["laughs.xml:2:", "DTD entities are not supported"]
            ),
            (
                "comment.plist",
                String(valid.prefix(valid.range(of: "<debug-overrides>")!.lowerBound.utf16Offset(in: valid)))
                    + "<!-- cut",
                ["comment.plist:", "a comment is never closed", "-->"]
            ),
            (
                "latin.xml",
                "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<network-security-config><domain-config><domain>\u{FF}host</domain></domain-config></network-security-config>\n",
                ["latin.xml:2:", "not UTF-8: byte 0xFF", "save the file as UTF-8"]
            ),
            (
                "big.xml",
                "<network-security-config>\n" + String(repeating: line, count: 9 * 1024 * 1024 / line.utf8.count + 1)
                    + "</network-security-config>\n",
                ["big.xml:", "larger than the 8.0 MB pinlab audit reads"]
            ),
        ]
        for (name, text, words) in cases {
            let file = dir.appendingPathComponent(name)
            // latin.xml: the \u{FF} written as one ISO-8859-1 byte, not UTF-8.
            try (name == "latin.xml" ? text.data(using: .isoLatin1)! : Data(text.utf8)).write(to: file)
            let r = try await CLI.run(["audit", file.path])
            #expect(r.status == 2, "\(name): exit \(r.status) \(r.stdout.suffix(200))")
            #expect(
                !r.stderr.contains("XML error") && !r.stderr.contains("NSXMLParserErrorDomain"), "\(name): \(r.stderr)")
            for w in words { #expect(r.stderr.contains(w), "\(name): '\(w)' in \(r.stderr)") }
        }
        // Apple's DOCTYPE (no internal subset) is still read; an encoding other than UTF-8, declared, no longer is
        // (the next test).
        let plist = try write(
            dir, "apple.plist",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"><dict/></plist>\n"
        )
        #expect(try await audit([plist]).status == 0)
    }

    /// The fuzz finding (RELIABILITY.md, section 1): `encoding="UTF-\x80"` counted as "another encoding", so the UTF-8
    /// check was skipped, libxml2 passed the comment's raw bytes on and Foundation's XMLParser trapped on them (exit
    /// 132). A declared UTF-16 did the same. Now only UTF-8 (and US-ASCII) is read, before the XML parser sees a byte.
    @Test(
        "encodings: not UTF-8, or declared other than UTF-8/US-ASCII — exit 2 naming the file and line, never a crash")
    func encodings() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plist = Array("<plist version=\"1.0\"><dict/></plist>\n".utf8)
        func decl(_ encoding: [UInt8]) -> [UInt8] {
            Array("<?xml version=\"1.0\" encoding=\"".utf8) + encoding + Array("\"?>\n".utf8)
        }
        func comment(_ bytes: [UInt8]) -> [UInt8] { Array("<!-- caf".utf8) + bytes + Array(" -->\n".utf8) }
        let cases: [(String, [UInt8], [String])] = [
            // The fuzzer's input, byte for byte.
            (
                "fuzz.plist", decl(Array("UTF-".utf8) + [0x80]) + comment([0x9C]) + plist,
                [
                    "fuzz.plist:1:", #"encoding="UTF-\x80""#, "reads UTF-8 (and US-ASCII) only",
                    #"declare encoding="UTF-8""#,
                ]
            ),
            (
                "utf16.plist", decl(Array("UTF-16".utf8)) + comment([0x9C]) + plist,
                ["utf16.plist:1:", #"encoding="UTF-16""#, "iconv -f UTF-16 -t UTF-8"]
            ),
            (
                "ff.plist", decl(Array("UTF-8".utf8)) + comment([0xFF]) + plist,
                ["ff.plist:2:", "not UTF-8: byte 0xFF", "save the file as UTF-8"]
            ),
            (
                "ff-undeclared.xml",
                Array("<?xml version=\"1.0\"?>\n".utf8) + comment([0xFF]) + Array("<network-security-config/>\n".utf8),
                ["ff-undeclared.xml:2:", "not UTF-8: byte 0xFF"]
            ),
            (
                "latin1.xml",
                Array(
                    "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<network-security-config><domain-config><domain>caf"
                        .utf8)
                    + [0xE9] + Array(".test</domain></domain-config></network-security-config>\n".utf8),
                ["latin1.xml:1:", #"encoding="ISO-8859-1""#, "iconv -f ISO-8859-1 -t UTF-8"]
            ),
            (
                "bom16.plist", [0xFF, 0xFE] + Array("<?xml version=\"1.0\"?>".utf8).flatMap { [$0, 0] },
                ["bom16.plist:1:", "the file is UTF-16", "FF FE"]
            ),
            ("nul.plist", Array("<\0?\0x\0m\0l\0".utf8), ["nul.plist:1:", "byte 0x00 (NUL)"]),
            (
                "ascii.plist", decl(Array("US-ASCII".utf8)) + comment([0xC3, 0xA9]) + plist,
                ["ascii.plist:2:", "byte 0xC3 is not US-ASCII"]
            ),
        ]
        for (name, bytes, words) in cases {
            let file = dir.appendingPathComponent(name)
            try Data(bytes).write(to: file)
            let r = try await CLI.run(["audit", file.path])
            #expect(r.status == 2, "\(name): exit \(r.status) (132: the XML parser trapped) \(r.stderr.prefix(300))")
            #expect(r.stdout.isEmpty, "\(name): nothing on standard output")
            #expect(r.stderr.contains(file.path) && r.stderr.contains("Fix:"), "\(name): \(r.stderr)")
            for w in words { #expect(r.stderr.contains(w), "\(name): '\(w)' in \(r.stderr)") }
            // timeline --pins reads the file the same way.
            let tl = try await CLI.run(["timeline", "--horizon", "5", "--pins", file.path] + CLI.dirArgs)
            #expect(
                tl.status == 2 && tl.stderr.contains(file.path),
                "\(name): timeline exit \(tl.status) \(tl.stderr.prefix(300))")
        }
        // Still read: UTF-8 declared as UTF-8, utf8 or nothing, with a UTF-8 byte-order mark, US-ASCII, and é in UTF-8.
        for (name, bytes) in [
            ("utf8.plist", decl(Array("UTF-8".utf8)) + comment([0xC3, 0xA9]) + plist),
            ("utf8-lower.plist", decl(Array("utf8".utf8)) + plist),
            ("bom8.plist", [0xEF, 0xBB, 0xBF] + decl(Array("UTF-8".utf8)) + comment([0xC3, 0xA9]) + plist),
            ("us-ascii.plist", decl(Array("US-ASCII".utf8)) + plist),
            ("none.plist", comment([0xC3, 0xA9]) + plist),
        ] {
            let file = dir.appendingPathComponent(name)
            try Data(bytes).write(to: file)
            let a = try await audit([file.path])
            #expect(a.status == 0, "\(name): exit \(a.status) \(a.stderr)")
        }
    }

    /// A directory was "NSCocoaErrorDomain error 256", a FIFO or /dev/null "You don't have permission".
    @Test(
        "a directory, a FIFO (never waited on) or a device given as a file: said in words, for audit and timeline --pins"
    )
    func notRegularFiles() async throws {
        let dir = try tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sub = dir.appendingPathComponent("dir.xml")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let fifo = dir.appendingPathComponent("fifo.xml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for (path, words) in [
            (sub.path, "is a directory"), (fifo, "is not a regular file (a FIFO)"),
            ("/dev/null", "is not a regular file (a character device)"),
        ] {
            let (r, t) = try await timedRun(["audit", path])
            // Exit 2 is the proof it did not wait: CLI.run gives up on a run after 120 s. (No time bound here: a loaded CI
            // machine took over 10 s to start the process.)
            #expect(
                r.status == 2 && r.stderr.contains("\(path): \(words)") && r.stderr.contains("Fix:"),
                "\(t): \(r.stderr)")
            let tl = try await CLI.run(["timeline", "--horizon", "5", "--pins", path] + CLI.dirArgs)
            #expect(tl.status == 2 && tl.stderr.contains("\(path): \(words)"), "\(tl.stderr)")
        }
    }
}
