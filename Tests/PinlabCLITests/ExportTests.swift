import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// `pinlab export`: every format is parsed by an independent parser (Python's plistlib and xml.etree, xmllint),
/// its pins are compared with the PKI's and with openssl's, the Android file is checked against the documented
/// element rules, and the OkHttp Java pinner is compiled and run against `pinlab serve`.
@Suite("pinlab export")
struct ExportTests {
    /// Tests/Exports: outside the test target's folder, so SwiftPM does not warn about unhandled .py/.java files.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Exports")
    static let checker = fixtures.appendingPathComponent("check_exports.py").path

    static func tool(_ name: String) -> String? {
        ChildProcess.resolve(name)
    }
    static let okhttpJars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]
    static let javaReady =
        tool("javac") != nil && tool("java") != nil
        && okhttpJars.allSatisfy { FileManager.default.fileExists(atPath: $0) }
    static let pythonReady = tool("python3") != nil
    static let xmllintReady = tool("xmllint") != nil

    func tempDir(_ label: String) throws -> URL {
        let d = TestScratch.root.appendingPathComponent(
            "pinlab-export-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// The files `--out` names are written from the careless side's view: a link someone planted at the path is
    /// replaced, never followed (the file it points to is untouched), a key gets 0600, and a missing folder is an
    /// error naming the path and the fix, not a Foundation error dump. `Data.write(to:)`, used before, wrote through
    /// the link into the other file.
    @Test func outFilesReplaceAPlantedLinkAndNameTheirErrors() async throws {
        let dir = try tempDir("out")
        defer { try? FileManager.default.removeItem(at: dir) }
        let victim = dir.appendingPathComponent("victim.txt")
        try "keep me\n".write(to: victim, atomically: true, encoding: .utf8)
        for (args, name, mode) in [
            (["export", "mobileconfig"], "pins.mobileconfig", mode_t(0o644)),
            (["export", "curl"], "pins.txt", 0o644),
            (["pki", "export", "leaf-v1", "--format", "key"], "leaf.key", 0o600),
        ] {
            let out = dir.appendingPathComponent(name)
            try FileManager.default.createSymbolicLink(at: out, withDestinationURL: victim)
            let r = try await CLI.run(args + ["--out", out.path] + CLI.dirArgs)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(try String(contentsOf: victim, encoding: .utf8) == "keep me\n", "\(args) wrote through the link")
            var st = stat()
            #expect(lstat(out.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG, "\(args): \(name) is a regular file")
            let perms = st.st_mode & 0o777
            #expect(mode == 0o600 ? perms == 0o600 : perms & 0o600 == 0o600, "\(args): mode \(String(perms, radix: 8))")
        }
        let missing = dir.appendingPathComponent("no/such/folder/pins.txt").path
        for args in [["export", "curl"], ["pki", "export", "leaf-v1"]] {
            let r = try await CLI.run(args + ["--out", missing] + CLI.dirArgs)
            #expect(
                r.status == 2 && r.stderr.contains(missing) && r.stderr.contains("mkdir -p")
                    && !r.stderr.contains("NSCocoaErrorDomain"),
                "\(args): \(r.stderr)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// `pinlab export ARGS`; expects success and returns standard output.
    func export(_ args: [String]) async throws -> String {
        let r = try await CLI.run(["export"] + args + CLI.dirArgs)
        #expect(r.status == 0, "pinlab export \(args.joined(separator: " ")): \(r.stderr)")
        return r.stdout
    }

    /// Every pin of every identity, from `pinlab pki pins --format json` (the identity files' source).
    func pkiPins() async throws -> [String: String] {
        let r = try await CLI.run(["pki", "pins", "--format", "json"] + PKIIdentities.all + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var out: [String: String] = [:]
        for row in rows {
            let name = try #require(row["name"] as? String)
            out[name] = try #require((row["spkiSHA256"] as? [String: Any])?["base64"] as? String)
        }
        return out
    }

    /// The SPKI pin of a certificate computed by the openssl CLI only (STYLE.md's command).
    func opensslPin(pem: String) async throws -> String {
        let r = await ChildProcess.run(
            [
                "sh", "-c",
                "openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            ],
            input: Array(pem.utf8), timeout: .seconds(20))
        #expect(r.status == 0, "\(r.stderrText)")
        return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func certificatePEM(_ name: String) async throws -> String {
        let r = try await CLI.run(["pki", "export", name, "--format", "pem"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout
    }

    func python(_ kind: String, _ file: URL) async throws -> [String: Any] {
        let r = await ChildProcess.run(["python3", Self.checker, kind, file.path], timeout: .seconds(30))
        #expect(r.status == 0, "\(kind) \(file.lastPathComponent): \(r.output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.output)")
    }

    // MARK: - Pins equal the PKI's

    @Test("pins in every pinning format equal the PKI's, and openssl's")
    func pinsEqualThePKIsAndOpenSSLs() async throws {
        let pins = try await pkiPins()
        let k1 = try #require(pins["leaf-v1"])
        let k2 = try #require(pins["leaf-v3-rekey"])
        #expect(try await opensslPin(pem: certificatePEM("leaf-v1")) == k1, "openssl agrees with the PKI on leaf-v1")
        #expect(try await opensslPin(pem: certificatePEM("leaf-v3-rekey")) == k2)
        let intermediate = try #require(pins["lab-intermediate-a"])
        #expect(try await opensslPin(pem: certificatePEM("lab-intermediate-a")) == intermediate)

        let java = try await export(["okhttp-java", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
        #expect(pinLiterals(java, prefix: "sha256/") == [k1, k2], "\(java)")
        let kotlin = try await export(["okhttp-kotlin", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
        #expect(
            pinLiterals(kotlin, prefix: "sha256/") == pinLiterals(java, prefix: "sha256/"),
            "no kotlinc here: the Kotlin pinner's pins are checked against the Java one's")
        #expect(
            kotlin.contains("CertificatePinner.Builder()") && kotlin.contains(".add(\"localhost\", \"sha256/\(k1)\")"))

        let curl = try await export(["curl", "--scenario", "baseline", "--profile", "intermediate-spki"])
        #expect(curl.contains("--pinnedpubkey 'sha256//\(intermediate)'"), "\(curl)")
        #expect(!curl.contains(k2), "curl takes one pin: no backup is added")

        let swift = try await export(["trustkit-swift", "leaf-v1", "leaf-v3-rekey"])
        #expect(pinLiterals(swift, prefix: "").filter { $0.count == 44 } == [k1, k2], "\(swift)")
        #expect(
            swift.contains("kTSKPublicKeyHashes")
                && swift.contains("TrustKit.initSharedInstance(withConfiguration: trustKitConfig)"))
    }

    /// The quoted strings of `text` that start with `prefix`, prefix removed.
    func pinLiterals(_ text: String, prefix: String) -> [String] {
        var out: [String] = []
        for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
            let parts = line.split(separator: "\"", omittingEmptySubsequences: false)
            for (i, p) in parts.enumerated() where i % 2 == 1 && p.hasPrefix(prefix) && p.hasSuffix("=") {
                out.append(String(p.dropFirst(prefix.count)))
            }
        }
        return out
    }

    /// TrustKit and Alamofire are Apple-only, so the Swift exports cannot be type-checked here; `swiftc -parse`
    /// proves they are well-formed Swift (a broken literal fails).
    @Test(
        "the Swift exports (TrustKit, Alamofire) parse with swiftc -parse",
        .enabled(if: tool("swiftc") != nil, "swiftc is not on PATH"))
    func swiftExportsParse() async throws {
        let dir = try tempDir("swift")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (format, file) in [
            ("trustkit-swift", "TrustKitConfiguration.swift"), ("alamofire", "PinningLabTrust.swift"),
        ] {
            for profile in ["leaf-spki+backup", "leaf-cert", "root-spki"]
            where !(format == "trustkit-swift" && profile == "leaf-cert") {
                let out = dir.appendingPathComponent("\(format)-\(profile)", isDirectory: true)
                _ = try await export([format, "--scenario", "baseline", "--profile", profile, "--out", out.path + "/"])
                let r = await ChildProcess.run(
                    ["swiftc", "-parse", out.appendingPathComponent(file).path], timeout: .seconds(60))
                #expect(r.status == 0, "\(format) \(profile): \(r.output)")
            }
        }
        let broken = dir.appendingPathComponent("broken.swift")
        try "let x = [\n".write(to: broken, atomically: true, encoding: .utf8)
        #expect(await ChildProcess.run(["swiftc", "-parse", broken.path], timeout: .seconds(60)).status != 0)
    }

    // MARK: - TrustKit

    @Test(
        "trustkit-plist parses with plistlib; a single-pin profile gets K2 added, and says so",
        .enabled(if: pythonReady, "python3 is not installed"))
    func trustKitPlist() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("trustkit")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (profile, expected) in [
            ("leaf-spki+backup", ["leaf-v1", "leaf-v3-rekey"]),
            ("intermediate-spki", ["lab-intermediate-a", "leaf-v3-rekey"]),
            ("root-spki", ["lab-root", "leaf-v3-rekey"]),
        ] {
            let file = dir.appendingPathComponent("\(profile).plist")
            _ = try await export(["trustkit-plist", "--scenario", "baseline", "--profile", profile, "--out", file.path])
            let doc = try await python("plist", file)
            let config = try #require(doc["TSKConfiguration"] as? [String: Any])
            #expect(config["TSKSwizzleNetworkDelegates"] as? Bool == false)
            let domains = try #require(config["TSKPinnedDomains"] as? [String: Any])
            #expect(Array(domains.keys) == ["localhost"])
            let domain = try #require(domains["localhost"] as? [String: Any])
            #expect(domain["TSKPublicKeyHashes"] as? [String] == expected.map { pins[$0]! }, "\(profile)")
            #expect(domain["TSKEnforcePinning"] as? Bool == true)
            #expect(domain["TSKIncludeSubdomains"] as? Bool == false)
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.contains("TrustKit refuses a single pin") == (profile != "leaf-spki+backup"), "\(text)")
        }
    }

    // MARK: - Alamofire

    @Test("alamofire writes the evaluators and the .cer files whose keys are the pins")
    func alamofire() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("alamofire")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try await export([
            "alamofire", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--out", dir.path + "/",
        ])
        let swift = try String(contentsOf: dir.appendingPathComponent("PinningLabTrust.swift"), encoding: .utf8)
        for needle in [
            "ServerTrustManager(evaluators: [", "PublicKeysTrustEvaluator(", "PinnedCertificatesTrustEvaluator(",
            ".af.publicKeys", "static let certificateNames = [\"leaf-v1\", \"leaf-v3-rekey\"]",
            "Session(serverTrustManager: publicKeysManager())",
        ] {
            #expect(swift.contains(needle), "missing \(needle)")
        }
        for name in ["leaf-v1", "leaf-v3-rekey"] {
            let cer = dir.appendingPathComponent("\(name).cer")
            let r = await ChildProcess.run(
                ["openssl", "x509", "-inform", "der", "-in", cer.path], timeout: .seconds(20))
            #expect(r.status == 0, "\(name).cer is DER: \(r.stderrText)")
            #expect(try await opensslPin(pem: r.stdoutText) == pins[name], "\(name).cer carries the pinned key")
        }
        let cert = try await export(["alamofire", "--scenario", "renewal-same-key", "--profile", "leaf-cert"])
        #expect(
            cert.contains("Session(serverTrustManager: pinnedCertificatesManager())"), "leaf-cert pins certificates")
    }

    // MARK: - Android network security config

    static func day(_ d: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: d)
    }

    @Test(
        "nsc parses with xmllint and xml.etree and obeys Android's element rules; a broken file is caught",
        .enabled(if: pythonReady && xmllintReady, "python3 or xmllint (libxml2-utils) is not installed"))
    func networkSecurityConfig() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("nsc")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try await export([
            "nsc", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--out", dir.path + "/",
        ])
        let file = dir.appendingPathComponent("network_security_config.xml")
        let lint = await ChildProcess.run(["xmllint", "--noout", file.path], timeout: .seconds(20))
        #expect(lint.status == 0, "\(lint.output)")
        let summary = try await python("nsc", file)
        #expect(summary["pins"] as? [String] == [pins["leaf-v1"]!, pins["leaf-v3-rekey"]!])
        #expect(summary["anchors"] as? [String] == ["@raw/lab_root"])
        #expect(summary["debugAnchors"] as? [String] == ["@raw/lab_root", "user"])
        #expect((summary["domains"] as? [[String: String]])?.first?["host"] == "localhost")
        // The expiration follows the app's release horizon, one year from today by default — not leaf-v1's
        // notAfter (about 30 days away), which would switch pinning off on devices a month after a release.
        let show = try await CLI.run(["pki", "list", "--format", "json"] + CLI.dirArgs)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [[String: Any]])
        let notAfter = try #require(rows.first { $0["name"] as? String == "leaf-v1" }?["notAfter"] as? String)
        let inAYear = [0.0, 86_400].map { Self.day(Date().addingTimeInterval(365 * 86_400 + $0)) }
        #expect(inAYear.contains(summary["expiration"] as? String ?? ""), "\(summary) vs \(inAYear)")
        #expect(summary["expiration"] as? String != String(notAfter.prefix(10)))
        let text0 = try String(contentsOf: file, encoding: .utf8)
        #expect(text0.contains("365 days after this export") && !text0.contains("WARNING"), "\(text0)")
        // A horizon of its own; one under 90 days is warned about (by pinlab and by the checker), as is a past date.
        let horizon = try tempDir("nsc-horizon")
        defer { try? FileManager.default.removeItem(at: horizon) }
        let long = horizon.appendingPathComponent("long.xml")
        let longRun = try await CLI.run(["export", "nsc", "--pin-horizon", "730", "--out", long.path] + CLI.dirArgs)
        #expect(longRun.status == 0 && !longRun.stderr.contains("warning"), "\(longRun.stdout)\(longRun.stderr)")
        let expected730 = [0.0, 86_400].map { Self.day(Date().addingTimeInterval(730 * 86_400 + $0)) }
        #expect(expected730.contains(try await python("nsc", long)["expiration"] as? String ?? ""))
        for (args, words) in [
            (["--pin-horizon", "30"], ["30 days from now", "stops enforcing"]),
            (["--expiration", "2020-01-01"], ["2020-01-01 is in the past"]),
        ] {
            let short = horizon.appendingPathComponent("short.xml")
            let r = try await CLI.run(["export", "nsc"] + args + ["--out", short.path] + CLI.dirArgs)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            for w in words + ["warning:", "--pin-horizon"] {
                #expect(r.stderr.contains(w), "\(args): \(w) in \(r.stderr)")
            }
            #expect(try String(contentsOf: short, encoding: .utf8).contains("WARNING"))
            let checked = await ChildProcess.run(["python3", Self.checker, "nsc", short.path], timeout: .seconds(30))
            #expect(checked.status == 1 && checked.stdoutText.contains("Android stops enforcing"), "\(checked.output)")
        }
        for (args, words) in [
            (["--pin-horizon", "0"], ["out of range", "1 to 3650"]),
            (["--pin-horizon", "400", "--expiration", "2031-01-02"], ["both set"]),
        ] {
            let r = try await CLI.run(["export", "nsc"] + args + CLI.dirArgs)
            #expect(r.status == 2, "\(args): \(r.stdout)\(r.stderr)")
            for w in words + ["--pin-horizon"] { #expect(r.stderr.contains(w), "\(args): \(w) in \(r.stderr)") }
        }
        // Certificate Transparency: left out by default (the platform's default), on or off when asked; a wrong
        // value or another format is a clear error.
        #expect(summary["certificateTransparency"] is NSNull, "\(summary)")
        for (value, expected) in [("on", "true"), ("off", "false")] {
            let ctFile = horizon.appendingPathComponent("ct-\(value).xml")
            let r = try await CLI.run(
                ["export", "nsc", "--certificate-transparency", value, "--out", ctFile.path] + CLI.dirArgs)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try await python("nsc", ctFile)["certificateTransparency"] as? String == expected)
        }
        // A host with an empty or over-long label went into the exported configuration as given.
        for host in ["...", "a..b", String(repeating: "a", count: 64) + ".test", "999.1.1.1", "a b"] {
            let r = try await CLI.run(["export", "nsc", "--host", host] + CLI.dirArgs)
            #expect(
                r.status == 2 && r.stderr.contains("--host") && r.stderr.contains("is not a host name"),
                "\(host): \(r.stdout)\(r.stderr)")
        }
        for (args, words) in [
            (["nsc", "--certificate-transparency", "yes"], ["neither on nor off"]),
            (["curl", "--certificate-transparency", "on"], ["only the nsc format"]),
        ] {
            let r = try await CLI.run(["export"] + args + CLI.dirArgs)
            #expect(r.status == 2, "\(args): \(r.stdout)\(r.stderr)")
            for w in words + ["--certificate-transparency"] {
                #expect(r.stderr.contains(w), "\(args): \(w) in \(r.stderr)")
            }
        }
        // The raw resource is the lab root.
        let raw = try String(contentsOf: dir.appendingPathComponent("lab_root.pem"), encoding: .utf8)
        #expect(await raw == (try certificatePEM("lab-root")))

        let fixed = try tempDir("nsc-flag")
        defer { try? FileManager.default.removeItem(at: fixed) }
        let flagged = fixed.appendingPathComponent("n.xml")
        _ = try await export([
            "nsc", "--expiration", "2031-01-02", "--include-subdomains", "--host", "api.pinning.test", "--out",
            flagged.path,
        ])
        let s2 = try await python("nsc", flagged)
        #expect(s2["expiration"] as? String == "2031-01-02")
        #expect((s2["domains"] as? [[String: String]])?.first?["includeSubdomains"] == "true")

        // The checker rejects what Android rejects: an unknown attribute, a pin that is not SHA-256, a misplaced element.
        let text = try String(contentsOf: file, encoding: .utf8)
        for (label, broken) in [
            ("attribute", text.replacingOccurrences(of: "<pin-set expiration=", with: "<pin-set expires=")),
            ("digest", text.replacingOccurrences(of: "digest=\"SHA-256\"", with: "digest=\"SHA-1\"")),
            ("element", text.replacingOccurrences(of: "<debug-overrides>", with: "<debug-overrides><pin-set/>")),
            ("pin", text.replacingOccurrences(of: pins["leaf-v1"]!, with: "AAAA")),
        ] {
            #expect(broken != text, "\(label): the mutation applies")
            let bad = dir.appendingPathComponent("broken-\(label).xml")
            try broken.write(to: bad, atomically: true, encoding: .utf8)
            let r = await ChildProcess.run(["python3", Self.checker, "nsc", bad.path], timeout: .seconds(30))
            #expect(r.status == 1, "\(label) is caught: \(r.output)")
        }
    }

    // MARK: - Apple configuration profile

    @Test(
        "mobileconfig parses with plistlib; its payloads carry lab-root's (and proxy-root's) DER; UUIDs are stable",
        .enabled(if: pythonReady, "python3 is not installed"))
    func mobileconfig() async throws {
        let dir = try tempDir("mobileconfig")
        defer { try? FileManager.default.removeItem(at: dir) }
        func der(_ name: String) async throws -> String {
            let f = dir.appendingPathComponent("\(name).der")
            let r = try await CLI.run(["pki", "export", name, "--format", "der", "--out", f.path] + CLI.dirArgs)
            #expect(r.status == 0, "\(r.stderr)")
            return try Data(contentsOf: f).base64EncodedString()
        }
        func profile(_ args: [String], _ label: String) async throws -> [String: Any] {
            let out = dir.appendingPathComponent(label, isDirectory: true)
            _ = try await export(["mobileconfig"] + args + ["--out", out.path + "/"])
            return try await python("plist", out.appendingPathComponent("PinningLab.mobileconfig"))
        }
        let plain = try await profile([], "plain")
        #expect(plain["PayloadType"] as? String == "Configuration")
        #expect(plain["PayloadVersion"] as? Int == 1)
        let payloads = try #require(plain["PayloadContent"] as? [[String: Any]])
        #expect(payloads.count == 1)
        #expect(payloads[0]["PayloadType"] as? String == "com.apple.security.root")
        #expect(
            await (payloads[0]["PayloadContent"] as? [String: String])?["data"] == (try der("lab-root")),
            "the payload's bytes are lab-root's DER")
        let readme = try String(contentsOf: dir.appendingPathComponent("plain/README.md"), encoding: .utf8)
        for step in [
            "VPN & Device Management", "Certificate Trust Settings",
            "xcrun simctl keychain booted add-root-cert lab-root.pem",
            "Encryption & credentials", "API 24",
        ] {
            #expect(readme.contains(step), "README: \(step)")
        }

        let withProxy = try await profile(["--include-proxy-root"], "proxy")
        let both = try #require(withProxy["PayloadContent"] as? [[String: Any]])
        // proxy-root is NOT name-constrained: the profile, its payload and the README say so, not the opposite.
        let proxyReadme = try String(contentsOf: dir.appendingPathComponent("proxy/README.md"), encoding: .utf8)
        #expect(
            proxyReadme.contains("`proxy-root`: NOT name-constrained")
                && !proxyReadme.contains("cannot vouch for real"),
            "\(proxyReadme)")
        #expect(
            (withProxy["PayloadDescription"] as? String)?.contains("WARNING: proxy-root is NOT name-constrained")
                == true)
        #expect(both.map { $0["PayloadDisplayName"] as? String } == ["lab-root", "proxy-root"])
        #expect(await (both[1]["PayloadContent"] as? [String: String])?["data"] == (try der("proxy-root")))
        // The intercepting-proxy scenario's device trusts proxy-root: its profile installs it without the flag.
        let scenario = try await profile(["--scenario", "intercepting-proxy"], "scenario")
        #expect((scenario["PayloadContent"] as? [[String: Any]])?.count == 2)

        let again = try await profile([], "again")
        let uuid = { (d: [String: Any]) in d["PayloadUUID"] as? String }
        #expect(uuid(plain) == uuid(again), "stable PayloadUUID")
        #expect(uuid(plain) != uuid(withProxy), "another set of roots is another profile")
        #expect(
            payloads[0]["PayloadUUID"] as? String == both[0]["PayloadUUID"] as? String,
            "lab-root's payload UUID is its own")
        let uuids = [uuid(plain), uuid(withProxy)] + both.map { $0["PayloadUUID"] as? String }
        for u in uuids { #expect(u.flatMap(UUID.init(uuidString:)) != nil, "\(u ?? "nil") is a UUID") }
    }

    @Test(
        "every mobileconfig payload's description states its certificate's name constraints (plistlib + openssl x509)",
        .enabled(if: pythonReady && tool("openssl") != nil, "python3 or openssl is not installed"))
    func mobileconfigDescriptionsMatchCertificates() async throws {
        let dir = try tempDir("mobileconfig-reach")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (label, args) in [
            ("plain", []), ("proxy", ["--include-proxy-root"]), ("scenario", ["--scenario", "intercepting-proxy"]),
        ] {
            let out = dir.appendingPathComponent(label, isDirectory: true)
            let r = try await CLI.run(["export", "mobileconfig"] + args + ["--out", out.path + "/"] + CLI.dirArgs)
            #expect(r.status == 0, "\(label): \(r.stderr)")
            let checked = await ChildProcess.run(
                ["python3", Self.checker, "reach", out.appendingPathComponent("PinningLab.mobileconfig").path],
                timeout: .seconds(30))
            #expect(checked.status == 0, "\(label): \(checked.output)")
            let payloads = try JSONSerialization.jsonObject(with: Data(checked.stdout)) as? [[String: Any]] ?? []
            #expect(payloads.count == (label == "plain" ? 1 : 2), "\(label): \(checked.output)")
            // An export that includes proxy-root warns on standard error too.
            #expect(
                r.stderr.contains("warning: proxy-root is NOT name-constrained") == (label != "plain"),
                "\(label): \(r.stderr)")
        }
        // The checker catches a description that lies (the old "name-constrained to .test and localhost").
        let file = dir.appendingPathComponent("proxy/PinningLab.mobileconfig")
        let text = try String(contentsOf: file, encoding: .utf8)
        let lie = text.replacingOccurrences(
            of: "It is NOT name-constrained", with: "It is name-constrained to: localhost, test")
        #expect(lie != text)
        let bad = dir.appendingPathComponent("lie.mobileconfig")
        try lie.write(to: bad, atomically: true, encoding: .utf8)
        let caught = await ChildProcess.run(["python3", Self.checker, "reach", bad.path], timeout: .seconds(30))
        #expect(caught.status == 1 && caught.stdoutText.contains("proxy-root"), "\(caught.output)")
    }

    // MARK: - OkHttp and curl against pinlab serve

    /// Starts `pinlab serve` on both engines for baseline and intercepting-proxy; returns the servers of the manifest.
    func serve() async throws -> (ChildProcess.Background, [[String: Any]], URL) {
        let bin = try #require(CLI.binary)
        let dir = try tempDir("serve")
        let manifest = dir.appendingPathComponent("manifest.json")
        let server = try ChildProcess.spawnBackground(
            [
                bin.path, "serve", "--scenario", "baseline", "--scenario", "intercepting-proxy", "--engine", "both",
                "--manifest", manifest.path,
            ] + CLI.dirArgs)
        for _ in 0..<400 {  // complete once it parses; up to 20 s (the PKI may be issued first)
            if let d = try? Data(contentsOf: manifest),
                let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any],
                let servers = o["servers"] as? [[String: Any]]
            {
                return (server, servers, dir)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.terminate()
        Issue.record("pinlab serve wrote no manifest in 20 s")
        throw CancellationError()
    }

    @Test(
        "curl with the exported flags accepts baseline and refuses intercepting-proxy (exit 90)",
        .enabled(if: tool("curl") != nil, "curl is not installed"))
    func curlFlagsAgainstServe() async throws {
        let (server, servers, dir) = try await serve()
        defer {
            server.terminate()
            try? FileManager.default.removeItem(at: dir)
        }
        _ = try await export([
            "curl", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--out", dir.path + "/",
        ])
        let text = try String(contentsOf: dir.appendingPathComponent("curl-flags.txt"), encoding: .utf8)
        let flags = try #require(text.split(separator: "\n").last { !$0.hasPrefix("#") }).description
        #expect(
            flags.hasPrefix("--cacert '\(dir.standardizedFileURL.path)/trust.pem' --pinnedpubkey 'sha256//"), "\(flags)"
        )
        for s in servers {
            let id = s["id"] as! String
            let url = s["url"] as! String
            let trust = s["trustFile"] as! String
            // The scenario's trust store (intercepting-proxy: lab-root + proxy-root) replaces the export's own.
            let line =
                "curl -s -o /dev/null --max-time 10 "
                + flags.replacingOccurrences(
                    of: "'\(dir.standardizedFileURL.path)/trust.pem'", with: "'\(trust)'") + " " + url
            let r = await ChildProcess.run(["sh", "-c", line], timeout: .seconds(20))
            #expect(
                r.status == (id == "baseline" ? 0 : 90),
                "\(id) on \(s["engine"] ?? ""): \(line) → \(r.status) \(r.stderrText)")
        }
    }

    @Test(
        "the exported OkHttp Java pinner compiles and accepts baseline, refuses intercepting-proxy",
        .enabled(
            if: javaReady,
            "javac/java or Debian's libokhttp-java (/usr/share/java/okhttp.jar, okio.jar) is missing: apt-get install -y default-jdk-headless libokhttp-java"
        ),
        arguments: ["leaf-spki", "leaf-spki+backup", "intermediate-spki", "root-spki"])
    func okHttpJavaAgainstServe(profile: String) async throws {
        let (server, servers, dir) = try await serve()
        defer {
            server.terminate()
            try? FileManager.default.removeItem(at: dir)
        }
        let src = dir.appendingPathComponent("src", isDirectory: true)
        let classes = dir.appendingPathComponent("classes", isDirectory: true)
        try FileManager.default.createDirectory(at: classes, withIntermediateDirectories: true)
        _ = try await export(["okhttp-java", "--scenario", "baseline", "--profile", profile, "--out", src.path + "/"])
        try FileManager.default.copyItem(
            at: Self.fixtures.appendingPathComponent("PinCheck.java"),
            to: src.appendingPathComponent("PinCheck.java"))
        let cp = Self.okhttpJars.joined(separator: ":")
        let javac = await ChildProcess.run(
            [
                "javac", "-nowarn", "-cp", cp, "-d", classes.path,
                src.appendingPathComponent("PinningLabPins.java").path,
                src.appendingPathComponent("PinCheck.java").path,
            ], timeout: TestTimeouts.compile)
        try #require(javac.status == 0, "javac: \(javac.output)")
        #expect(servers.count == 4, "baseline and intercepting-proxy on two engines")
        for s in servers {
            let id = s["id"] as! String
            let url = s["url"] as! String
            let trust = s["trustFile"] as! String
            let r = await ChildProcess.run(
                ["java", "-cp", classes.path + ":" + cp, "PinCheck", url, trust],
                timeout: .seconds(60))
            let cell = "\(profile), \(id) on \(s["engine"] ?? "")"
            if id == "baseline" {
                #expect(r.status == 0 && r.stdoutText.hasPrefix("ACCEPT 200"), "\(cell): \(r.output)")
            } else {
                #expect(r.status == 3 && r.stdoutText.contains("Certificate pinning failure"), "\(cell): \(r.output)")
            }
        }
    }

    // MARK: - NSPinnedDomains, Cronet, Ktor, pins.json

    @Test(
        "nspinneddomains parses with plistlib: leaf keys under NSPinnedLeafIdentities, CA keys under NSPinnedCAIdentities",
        .requires("python3"))
    func nsPinnedDomains() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("nspinned")
        defer { try? FileManager.default.removeItem(at: dir) }
        for (args, list, expected, sub) in [
            (
                ["--scenario", "baseline", "--profile", "leaf-spki+backup"], "NSPinnedLeafIdentities",
                ["leaf-v1", "leaf-v3-rekey"], false
            ),
            (
                ["lab-intermediate-a", "lab-root", "--include-subdomains", "--host", "api.pinning.test"],
                "NSPinnedCAIdentities",
                ["lab-intermediate-a", "lab-root"], true
            ),
        ] {
            let file = dir.appendingPathComponent("\(list).plist")
            _ = try await export(["nspinneddomains"] + args + ["--out", file.path])
            let doc = try await python("plist", file)
            let ats = try #require(doc["NSAppTransportSecurity"] as? [String: Any])
            let domains = try #require(ats["NSPinnedDomains"] as? [String: [String: Any]])
            #expect(domains.count == 1)
            let domain = try #require(domains.values.first)
            #expect(Set(domain.keys) == ["NSIncludesSubdomains", list], "one list, never both: \(domain.keys)")
            #expect(domain["NSIncludesSubdomains"] as? Bool == sub)
            let ids = try #require(domain[list] as? [[String: String]])
            #expect(ids.map { $0["SPKI-SHA256-BASE64"] } == expected.map { pins[$0] }, "\(list)")
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(
                text.contains(
                    list == "NSPinnedCAIdentities"
                        ? "at least one CA certificate in it" : "the server's leaf certificate"))
        }
        // Leaf and CA keys together would have to match both lists: refused.
        let mixed = try await CLI.run(["export", "nspinneddomains", "leaf-v1", "lab-root"] + CLI.dirArgs)
        #expect(
            mixed.status == 2 && mixed.stderr.contains("NSPinnedLeafIdentities")
                && mixed.stderr.contains("CA keys only"), "\(mixed.stderr)")
    }

    @Test(
        "cronet-java compiles against a stub CronetEngine.Builder and hands it the PKI's pins, subdomains, expiration, no bypass",
        .requires("javac", "java"))
    func cronetJava() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("cronet")
        defer { try? FileManager.default.removeItem(at: dir) }
        let src = dir.appendingPathComponent("src", isDirectory: true)
        let classes = dir.appendingPathComponent("classes", isDirectory: true)
        try FileManager.default.createDirectory(at: classes, withIntermediateDirectories: true)
        _ = try await export([
            "cronet-java", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--host", "api.pinning.test",
            "--include-subdomains", "--expiration", "2031-01-02", "--out", src.path + "/",
        ])
        let javac = await ChildProcess.run(
            [
                "javac", "-nowarn", "-d", classes.path,
                Self.fixtures.appendingPathComponent("cronet-stub/org/chromium/net/CronetEngine.java").path,
                Self.fixtures.appendingPathComponent("CronetCheck.java").path,
                src.appendingPathComponent("PinningLabCronetPins.java").path,
            ], timeout: TestTimeouts.compile)
        try #require(javac.status == 0, "javac: \(javac.output)")
        let r = await ChildProcess.run(["java", "-cp", classes.path, "CronetCheck"], timeout: .seconds(60))
        #expect(r.status == 0, "\(r.output)")
        let expected =
            ["leaf-v1", "leaf-v3-rekey"].map { "pin api.pinning.test \(pins[$0]!)" }.sorted()
            + ["includeSubdomains true", "expiration 2031-01-02", "bypass false"]
        #expect(r.stdoutText.split(separator: "\n").map(String.init) == expected, "\(r.output)")
    }

    @Test(
        "ktor-kotlin: Kotlin that tokenizes, balances and installs the PKI's pins on the OkHttp engine",
        .requires("python3"))
    func ktorKotlin() async throws {
        let pins = try await pkiPins()
        let dir = try tempDir("ktor")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("PinningLabKtorPins.kt")
        _ = try await export([
            "ktor-kotlin", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--out", file.path,
        ])
        let summary = try await python("kotlin", file)
        #expect(
            summary["imports"] as? [String] == [
                "io.ktor.client.HttpClient", "io.ktor.client.engine.okhttp.OkHttp", "okhttp3.CertificatePinner",
            ])
        #expect(
            summary["pins"] as? [[String]] == [
                ["localhost", pins["leaf-v1"]!], ["localhost", pins["leaf-v3-rekey"]!],
            ])
        let calls = try #require(summary["calls"] as? [String])
        for call in [
            "HttpClient", "OkHttp", "engine", "config", "certificatePinner", "CertificatePinner.Builder", "build",
        ] {
            #expect(calls.contains(call), "\(call)")
        }
        // The checker is not a rubber stamp: an unbalanced literal and a short pin are caught.
        let text = try String(contentsOf: file, encoding: .utf8)
        for (label, broken) in [
            (
                "bracket",
                text.replacingOccurrences(
                    of: "certificatePinner(certificatePinner)", with: "certificatePinner(certificatePinner")
            ),
            ("pin", text.replacingOccurrences(of: pins["leaf-v1"]!, with: "AAAA")),
        ] {
            let bad = dir.appendingPathComponent("broken-\(label).kt")
            try broken.write(to: bad, atomically: true, encoding: .utf8)
            let r = await ChildProcess.run(["python3", Self.checker, "kotlin", bad.path], timeout: .seconds(30))
            #expect(r.status == 1, "\(label) is caught: \(r.output)")
        }
    }

    @Test(
        "pins-json validates against the JSON Schema, and --from renders every hash-taking format with the same pins",
        .requires("python3"), .requiresPython(module: "jsonschema"))
    func pinsJSONSource() async throws {
        let pins = try await pkiPins()
        let (k1, k2, root) = (pins["leaf-v1"]!, pins["leaf-v3-rekey"]!, pins["lab-root"]!)
        let dir = try tempDir("pinsjson")
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("pins.json")
        _ = try await export([
            "pins-json", "--scenario", "baseline", "--profile", "leaf-spki+backup", "--host", "api.pinning.test",
            "--include-subdomains", "--expiration", "2031-01-02", "--out", source.path,
        ])
        let doc = try await python("schema", source)
        let domain = try #require((doc["domains"] as? [[String: Any]])?.first)
        #expect(domain["host"] as? String == "api.pinning.test" && domain["includeSubdomains"] as? Bool == true)
        #expect(domain["expiration"] as? String == "2031-01-02")
        let rows = try #require(domain["pins"] as? [[String: String]])
        #expect(
            rows.map { [$0["sha256"]!, $0["role"]!, $0["certificate"]!] } == [
                [k1, "current", "leaf"], [k2, "backup", "leaf"],
            ])
        // The schema is not a rubber stamp.
        let bad = dir.appendingPathComponent("bad.json")
        try String(contentsOf: source, encoding: .utf8).replacingOccurrences(of: "\"backup\"", with: "\"spare\"")
            .write(to: bad, atomically: true, encoding: .utf8)
        #expect(
            await ChildProcess.run(["python3", Self.checker, "schema", bad.path], timeout: .seconds(30)).status == 1)

        // Every format that takes hashes renders from it, with its pins; those that need certificates refuse.
        for format in [
            "trustkit-plist", "trustkit-swift", "okhttp-kotlin", "okhttp-java", "nsc", "curl",
            "nspinneddomains", "cronet-java", "ktor-kotlin", "pins-json",
        ] {
            let out = dir.appendingPathComponent("from-\(format)", isDirectory: true)
            let r = try await CLI.run(["export", format, "--from", source.path, "--out", out.path + "/"])
            #expect(r.status == 0, "\(format): \(r.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: out.path)
            let text = try String(contentsOf: out.appendingPathComponent(files.sorted().first!), encoding: .utf8)
            #expect(text.contains(k1) && text.contains(k2) && text.contains("api.pinning.test"), "\(format): \(text)")
        }
        let nsc = try await python("nsc", dir.appendingPathComponent("from-nsc/network_security_config.xml"))
        #expect(nsc["pins"] as? [String] == [k1, k2] && nsc["expiration"] as? String == "2031-01-02")
        #expect(nsc["anchors"] as? [String] == [], "no anchors of its own: the system's")
        let plist = try await python(
            "plist", dir.appendingPathComponent("from-nspinneddomains/NSPinnedDomains-Info.plist"))
        #expect("\(plist)".contains(k1))
        let again = try await python("schema", dir.appendingPathComponent("from-pins-json/pins.json"))
        #expect(
            (again["domains"] as? [[String: Any]])?.first?["pins"] as? [[String: String]] == rows,
            "pins.json round-trips")
        for format in ["alamofire", "mobileconfig"] {
            let r = try await CLI.run(["export", format, "--from", source.path])
            #expect(
                r.status == 2 && r.stderr.contains("--from") && r.stderr.contains("drop --from"),
                "\(format): \(r.stderr)")
        }
        // A root pin keeps its kind: NSPinnedDomains files it as a CA identity.
        let rootSource = dir.appendingPathComponent("root.json")
        _ = try await export([
            "pins-json", "--scenario", "baseline", "--profile", "root-spki", "--out", rootSource.path,
        ])
        let rootOut = try await CLI.run(["export", "nspinneddomains", "--from", rootSource.path])
        #expect(rootOut.stdout.contains("NSPinnedCAIdentities") && rootOut.stdout.contains(root), "\(rootOut.stdout)")
        // Bad input names the file and the key path.
        let wrong = dir.appendingPathComponent("wrong.json")
        try String(contentsOf: source, encoding: .utf8).replacingOccurrences(of: k2, with: String(k2.prefix(28)))
            .write(to: wrong, atomically: true, encoding: .utf8)
        let refused = try await CLI.run(["export", "nsc", "--from", wrong.path])
        #expect(
            refused.status == 2 && refused.stderr.contains("wrong.json")
                && refused.stderr.contains("domains[0].pins[1].sha256")
                && refused.stderr.contains("32 bytes"), "\(refused.stderr)")
    }

    // MARK: - Errors

    @Test("bad input names the argument and the fix")
    func errors() async throws {
        func failing(_ args: [String]) async throws -> String {
            let r = try await CLI.run(["export"] + args + CLI.dirArgs)
            #expect(r.status == 2, "\(args): exit \(r.status) \(r.stderr)")
            #expect(r.stdout.isEmpty, "nothing written to standard output on error")
            return r.stderr
        }
        let prefix = try await failing(["trustkit"])
        #expect(
            prefix.contains("FORMAT: 'trustkit' is not an export format")
                && prefix.contains("did you mean 'trustkit-plist' or 'trustkit-swift'?"), "\(prefix)")
        let typo = try await failing(["okhtp-java"])
        #expect(typo.contains("did you mean 'okhttp-java'?"), "\(typo)")
        let scenario = try await failing(["curl", "--scenario", "basline"])
        #expect(
            scenario.contains("--scenario: 'basline' is not a scenario")
                && scenario.contains("did you mean 'baseline'?"), "\(scenario)")
        let profile = try await failing(["curl", "--scenario", "baseline", "--profile", "leaf-spk"])
        #expect(
            profile.contains("--profile: 'leaf-spk' is not a pin profile")
                && profile.contains("did you mean 'leaf-spki'?"), "\(profile)")
        let short = try await failing(["curl", "--scenario", "baseline", "--profile", "leaf"])
        #expect(short.contains("did you mean 'leaf-cert', 'leaf-spki' or 'leaf-spki+backup'?"), "\(short)")
        let name = try await failing(["okhttp-java", "leaf-v9"])
        #expect(
            name.contains("NAMES: 'leaf-v9' is not an identity") && name.contains("did you mean 'leaf-v1'?")
                && name.contains("pinlab pki list"), "\(name)")
        let none = try await failing(["okhttp-java", "--scenario", "baseline", "--profile", "none"])
        #expect(none.contains("--profile") && none.contains("no pins"), "\(none)")
        let cert = try await failing(["nsc", "--scenario", "baseline", "--profile", "leaf-cert"])
        #expect(cert.contains("SPKI") && cert.contains("alamofire"), "\(cert)")
        let both = try await failing(["curl", "leaf-v1", "--scenario", "baseline"])
        #expect(both.contains("NAMES"), "\(both)")
        let orphan = try await failing(["curl", "--profile", "leaf-spki"])
        #expect(orphan.contains("--profile") && orphan.contains("--scenario"), "\(orphan)")
        let day = try await failing(["nsc", "--expiration", "31/12/2030"])
        #expect(day.contains("--expiration") && day.contains("YYYY-MM-DD"), "\(day)")
        let single = try await failing(["trustkit-plist", "leaf-v3-rekey"])
        #expect(single.contains("two distinct pins"), "K2 alone cannot get K2 as its backup: \(single)")
    }
}

/// The identities whose pins the tests compare.
enum PKIIdentities {
    static let all = ["leaf-v1", "leaf-v3-rekey", "lab-intermediate-a", "lab-root", "proxy-root"]
}
