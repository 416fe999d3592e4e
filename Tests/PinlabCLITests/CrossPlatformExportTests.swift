import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// Issue 41, part 4: the React Native (react-native-ssl-public-key-pinning) and Flutter (http_certificate_pinning)
/// exports parse in each library's documented format and carry the PKI's pins; `pinlab audit` reads both and flags a
/// domain-key wildcard (OkHttp's on Android, a literal name through TrustKit on iOS) and a `badCertificateCallback`
/// "pin" (dart:io calls it only for untrusted chains). Fixture files are written here at test time.
@Suite("React Native and Flutter exports and audit readers")
struct CrossPlatformExportTests {
    func tempDir(_ label: String) throws -> URL {
        let d = TestScratch.root.appendingPathComponent("pinlab-xplat-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    func export(_ args: [String]) async throws -> String {
        let r = try await CLI.run(["export"] + args + CLI.dirArgs)
        #expect(r.status == 0, "pinlab export \(args.joined(separator: " ")): \(r.stderr)")
        return r.stdout
    }

    /// `pinlab pki pins --format json`: name → (SPKI base64, certificate SHA-256 base64).
    func pkiPins() async throws -> [String: (spki: String, certificate: String)] {
        let r = try await CLI.run(["pki", "pins", "--format", "json", "leaf-v1", "leaf-v3-rekey"] + CLI.dirArgs)
        #expect(r.status == 0, "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var out: [String: (String, String)] = [:]
        for row in rows {
            let spki = try #require((row["spkiSHA256"] as? [String: Any])?["base64"] as? String)
            let cert = try #require((row["certificateSHA256"] as? [String: Any])?["base64"] as? String)
            out[try #require(row["name"] as? String)] = (spki, cert)
        }
        return out
    }

    struct Audit {
        var status: Int32
        var findings: [[String: Any]]
        var files: [[String: Any]]
        var stderr: String
        var ids: [String] { findings.map { $0["id"] as! String } }
    }

    func audit(_ files: [URL]) async throws -> Audit {
        let r = try await CLI.run(["audit", "--format", "json"] + files.map(\.path))
        guard r.status != 2 else { return Audit(status: 2, findings: [], files: [], stderr: r.stderr) }
        let doc = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)\(r.stderr)")
        return Audit(
            status: r.status, findings: try #require(doc["findings"] as? [[String: Any]]),
            files: try #require(doc["files"] as? [[String: Any]]), stderr: r.stderr)
    }

    // MARK: - React Native

    /// The example of react-native-ssl-public-key-pinning's README ("Usage" → "Example"), read from
    /// github.com/frw/react-native-ssl-public-key-pinning README.md at commit 08a1c70c (Google Trust Services'
    /// public root hashes, as the README lists them).
    static let readmeExample = """
        import { initializeSslPinning } from 'react-native-ssl-public-key-pinning';

        await initializeSslPinning({
          'google.com': {
            includeSubdomains: true,
            publicKeyHashes: [
              'CLOmM1/OXvSPjw5UOYbAf9GKOxImEp9hhku9W90fHMk=',
              'hxqRlPTu1bMS/0DITB1SSu0vd4u/8l8TjPgfaAp63Gc=',
              'Vfd95BwDeSQo+NUYxVEEIlvkOlWY2SalKK1lPhzOx78=',
              'QXnt2YHvdHR3tJYmQIr0Paosp6t/nggsEGD4QJZ3Q0g=',
              'mEflZT5enoR1FuXLgYYGqnVEoZvmf9c2bVBpiOjYQ0c=',
            ],
          },
        });

        """

    /// A stand-in for the library's module: `initializeSslPinning` checks its argument against the README's
    /// Options table (domain → `includeSubdomains?: boolean`, `publicKeyHashes: string[]` of base64 SHA-256 SPKI
    /// hashes, at least two per domain for iOS) and records it on `globalThis`.
    static let stub = """
        export async function initializeSslPinning(options) {
          if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new Error('options: not an object');
          for (const [domain, o] of Object.entries(options)) {
            if (typeof o !== 'object' || o === null) throw new Error(domain + ': not an object');
            for (const k of Object.keys(o)) {
              if (k !== 'includeSubdomains' && k !== 'publicKeyHashes') throw new Error(domain + ': unknown option ' + k);
            }
            if ('includeSubdomains' in o && typeof o.includeSubdomains !== 'boolean') throw new Error(domain + ': includeSubdomains is not a boolean');
            if (!Array.isArray(o.publicKeyHashes)) throw new Error(domain + ': publicKeyHashes is not an array');
            if (o.publicKeyHashes.length < 2) throw new Error(domain + ': TrustKit (iOS) needs at least two pins');
            for (const h of o.publicKeyHashes) {
              if (typeof h !== 'string' || !/^[A-Za-z0-9+\\/]{43}=$/.test(h)) throw new Error(domain + ': not a base64 SHA-256 hash: ' + h);
            }
          }
          (globalThis.__pinningCalls ??= []).push(options);
        }

        """

    /// Runs `entry` (an ES module importing the library) with node against the stub; returns the recorded calls.
    func runWithStub(_ source: String, call: String?) async throws -> (
        status: Int32, calls: [[String: Any]], output: String
    ) {
        let dir = try tempDir("rn")
        let lib = dir.appendingPathComponent("node_modules/react-native-ssl-public-key-pinning")
        try FileManager.default.createDirectory(at: lib, withIntermediateDirectories: true)
        try #"{"name":"react-native-ssl-public-key-pinning","type":"module","main":"index.js"}"#
            .write(to: lib.appendingPathComponent("package.json"), atomically: true, encoding: .utf8)
        try Self.stub.write(to: lib.appendingPathComponent("index.js"), atomically: true, encoding: .utf8)
        try #"{"type":"module"}"#.write(
            to: dir.appendingPathComponent("package.json"), atomically: true, encoding: .utf8)
        try source.write(to: dir.appendingPathComponent("sslPinning.js"), atomically: true, encoding: .utf8)
        let runner = """
            const m = await import('./sslPinning.js');
            \(call.map { "await m.\($0)();" } ?? "")
            console.log(JSON.stringify(globalThis.__pinningCalls ?? []));

            """
        try runner.write(to: dir.appendingPathComponent("run.mjs"), atomically: true, encoding: .utf8)
        let r = await ChildProcess.run(["node", dir.appendingPathComponent("run.mjs").path], timeout: .seconds(30))
        let calls = (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]]) ?? []
        return (r.status, calls, r.output)
    }

    @Test(
        "react-native: the exported module runs in node and hands initializeSslPinning the README's shape with the PKI's pins",
        .requires("node"))
    func reactNativeExportRunsInNode() async throws {
        // The stub accepts the README's own example, and refuses a single pin and a hex fingerprint: it can fail.
        let readme = try await runWithStub(Self.readmeExample, call: nil)
        #expect(readme.status == 0 && readme.calls.count == 1, "\(readme.output)")
        let bad = Self.readmeExample.replacingOccurrences(
            of: "'CLOmM1/OXvSPjw5UOYbAf9GKOxImEp9hhku9W90fHMk=',",
            with: "'2B:35:52:B1:C1:A1:0F:0D:30:FE:D8:A4:7E:93:6C:81:9F:A9:54:03:41:27:D8:EF:6C:F1:2E:16:42:31:13:3E',")
        #expect(try await runWithStub(bad, call: nil).status != 0, "a certificate fingerprint is not an SPKI hash")

        let pins = try await pkiPins()
        let k1 = try #require(pins["leaf-v1"]?.spki)
        let k2 = try #require(pins["leaf-v3-rekey"]?.spki)
        let js = try await export(["react-native", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
        let run = try await runWithStub(js, call: "configurePinningLabPinning")
        #expect(run.status == 0, "\(run.output)\n\(js)")
        let options = try #require(run.calls.first, "\(run.output)")
        #expect(options.keys.sorted() == ["localhost"])
        let localhost = try #require(options["localhost"] as? [String: Any])
        #expect(localhost["publicKeyHashes"] as? [String] == [k1, k2])
        #expect(localhost["includeSubdomains"] as? Bool == false)

        // One pin: TrustKit's rule, so the export adds the backup key (leaf-v3-rekey) as the TrustKit exports do.
        let single = try await export(["react-native", "--scenario", "baseline", "--profile", "leaf-spki"])
        let singleRun = try await runWithStub(single, call: "configurePinningLabPinning")
        #expect(singleRun.status == 0, "\(singleRun.output)")
        #expect(((singleRun.calls.first?["localhost"] as? [String: Any])?["publicKeyHashes"] as? [String]) == [k1, k2])

        // With subdomains the one domain key carries includeSubdomains; no wildcard key is written.
        let sub = try await export([
            "react-native", "leaf-v1", "leaf-v3-rekey", "--host", "pinning.test", "--include-subdomains",
        ])
        let subRun = try await runWithStub(sub, call: "configurePinningLabPinning")
        #expect(subRun.status == 0, "\(subRun.output)")
        let subOptions = try #require(subRun.calls.first)
        #expect(
            subOptions.keys.sorted() == ["pinning.test"]
                && (subOptions["pinning.test"] as? [String: Any])?["includeSubdomains"] as? Bool == true)
        #expect(sub.contains("**.pinning.test"), "the header says what Android's OkHttp pattern is")
    }

    @Test("audit reads the README example and the export; it flags a wildcard key and platforms pinning differently")
    func reactNativeAudit() async throws {
        let dir = try tempDir("rn-audit")
        let readme = dir.appendingPathComponent("App.js")
        try Self.readmeExample.write(to: readme, atomically: true, encoding: .utf8)
        let exported = dir.appendingPathComponent("sslPinning.js")
        try await export(["react-native", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
            .write(to: exported, atomically: true, encoding: .utf8)
        let clean = try await audit([readme, exported])
        #expect(clean.status == 0 && clean.ids.isEmpty, "\(clean.findings) \(clean.stderr)")
        #expect(
            clean.files.map { $0["kind"] as? String } == [
                "react-native-ssl-public-key-pinning", "react-native-ssl-public-key-pinning",
            ])
        #expect(clean.files.map { $0["domains"] as? [String] } == [["google.com"], ["localhost"]])

        let pins = try await pkiPins()
        let k1 = try #require(pins["leaf-v1"]?.spki)
        let k2 = try #require(pins["leaf-v3-rekey"]?.spki)
        let wildcard = dir.appendingPathComponent("pinning.ts")
        try """
        import { Platform } from 'react-native';
        import { initializeSslPinning } from 'react-native-ssl-public-key-pinning';

        const HASHES = ['\(k1)', '\(k2)'];

        export async function pin() {
          if (Platform.OS === 'ios') {
            await initializeSslPinning({ 'api.pinning.test': { includeSubdomains: true, publicKeyHashes: HASHES } });
          } else {
            await initializeSslPinning({
              '*.pinning.test': { publicKeyHashes: HASHES },
              'api.pinning.test': { includeSubdomains: false, publicKeyHashes: HASHES },
            });
          }
        }

        """.write(to: wildcard, atomically: true, encoding: .utf8)
        let a = try await audit([wildcard])
        #expect(a.status == 1, "\(a.stderr)")
        #expect(a.ids.sorted() == ["subdomains-differ-by-platform", "wildcard-differs-by-platform"], "\(a.findings)")
        let w = try #require(a.findings.first { $0["id"] as? String == "wildcard-differs-by-platform" })
        #expect(
            w["line"] as? Int == 11 && w["domain"] as? String == "*.pinning.test" && w["severity"] as? String == "high")
        let message = try #require(w["message"] as? String)
        #expect(message.contains("one label") && message.contains("TrustKit"), "\(message)")
        let d = try #require(a.findings.first { $0["id"] as? String == "subdomains-differ-by-platform" })
        #expect(d["domain"] as? String == "api.pinning.test" && d["line"] as? Int == 12)

        // A hex certificate fingerprint where the library takes SPKI hashes is an error naming the line.
        let hex = dir.appendingPathComponent("hex.js")
        try "initializeSslPinning({ 'a.test': { publicKeyHashes: ['\(k1)',\n '2B:35:52:B1'] } });\n"
            .write(to: hex, atomically: true, encoding: .utf8)
        let e = try await audit([hex])
        #expect(e.status == 2 && e.stderr.contains("hex.js:2"), "\(e.stderr)")
    }

    // MARK: - Flutter (http_certificate_pinning)

    /// The README's "Using Dio" example, from github.com/diefferson/http_certificate_pinning README.md at commit
    /// 1abad419, completed with a fingerprint list in the README's "The Result is like" form (colon-separated
    /// upper-case hex). The README passes the list positionally; the package's source
    /// (lib/src/dio/certificate_pinning_interceptor.dart) takes `{List<String>? allowedSHAFingerprints, int timeout}`,
    /// named, as the export writes it. No Dart SDK is installed here: the Dart is checked by `DartShape` below,
    /// not by the analyzer.
    static func readmeDio(_ fingerprints: [String]) -> String {
        """
        import 'package:http_certificate_pinning/http_certificate_pinning.dart';

        const List<String> allowedSHAFingerprints = <String>[\(fingerprints.map { "'\($0)'" }.joined(separator: ", "))];

          // Add CertificatePinningInterceptor in dio Client
          Dio getClient(String baseUrl, List<String> allowedSHAFingerprints){
              var dio =  Dio(BaseOptions(baseUrl: baseUrl))
                ..interceptors.add(CertificatePinningInterceptor(allowedSHAFingerprints: allowedSHAFingerprints));
              return dio;
          }

        """
    }

    /// A structural check of Dart source: strings and comments skipped, brackets balanced, the package imported, a
    /// `CertificatePinningInterceptor(allowedSHAFingerprints: NAME)` whose NAME is a list literal of fingerprints.
    enum DartShape {
        static func fingerprints(_ dart: String) -> (problems: [String], fingerprints: [String]) {
            var problems: [String] = []
            // Strip comments and strings, keeping the strings aside.
            var code = ""
            var strings: [String] = []
            var i = dart.startIndex
            var stack: [Character] = []
            while i < dart.endIndex {
                let c = dart[i]
                if dart[i...].hasPrefix("//") {
                    while i < dart.endIndex && dart[i] != "\n" { i = dart.index(after: i) }
                    continue
                }
                if c == "'" || c == "\"" {
                    var s = ""
                    i = dart.index(after: i)
                    while i < dart.endIndex && dart[i] != c && dart[i] != "\n" {
                        s.append(dart[i])
                        i = dart.index(after: i)
                    }
                    if i == dart.endIndex || dart[i] == "\n" { problems.append("unterminated string \(s)") }
                    strings.append(s)
                    code += "S\(strings.count - 1)"
                    if i < dart.endIndex { i = dart.index(after: i) }
                    continue
                }
                if "([{".contains(c) { stack.append(c) }
                if let close = [")": "(", "]": "[", "}": "{"][String(c)] {
                    if stack.popLast() != Character(close) { problems.append("unbalanced \(c)") }
                }
                code.append(c)
                i = dart.index(after: i)
            }
            if !stack.isEmpty { problems.append("unclosed \(stack)") }
            let importIndex = strings.firstIndex(of: "package:http_certificate_pinning/http_certificate_pinning.dart")
            if importIndex.map({ !code.contains("import S\($0);") }) ?? true {
                problems.append("the package is not imported")
            }
            let compact = code.filter { !$0.isWhitespace }
            guard let call = compact.range(of: "CertificatePinningInterceptor(allowedSHAFingerprints:") else {
                problems.append("no CertificatePinningInterceptor(allowedSHAFingerprints: …)")
                return (problems, [])
            }
            let name = compact[call.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            guard let def = compact.range(of: "List<String>\(name)=<String>[") else {
                problems.append("\(name) is not a List<String> literal")
                return (problems, [])
            }
            let body = compact[def.upperBound...].prefix { $0 != "]" }
            var out: [String] = []
            for item in body.split(separator: ",") {
                guard item.hasPrefix("S"), let n = Int(item.dropFirst()), n < strings.count else {
                    problems.append("list item \(item) is not a string")
                    continue
                }
                let fp = strings[n]
                let pairs = fp.split(separator: ":", omittingEmptySubsequences: false)
                if pairs.count != 32
                    || !pairs.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isHexDigit && !$0.isLowercase } })
                {
                    problems.append("'\(fp)' is not 32 colon-separated upper-case hex pairs")
                }
                out.append(fp)
            }
            return (problems, out)
        }
    }

    func colonHex(base64: String) throws -> String {
        let d = try #require(Data(base64Encoded: base64))
        return d.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    @Test(
        "flutter: the Dart export has the README's structure and the PKI certificates' fingerprints, as openssl prints them",
        .requires("openssl"))
    func flutterExport() async throws {
        let pins = try await pkiPins()
        let f1 = try colonHex(base64: try #require(pins["leaf-v1"]?.certificate))
        let f2 = try colonHex(base64: try #require(pins["leaf-v3-rekey"]?.certificate))
        // The checker passes the README's example and fails broken ones.
        let readme = DartShape.fingerprints(Self.readmeDio([f1, f2]))
        #expect(readme.problems.isEmpty && readme.fingerprints == [f1, f2], "\(readme.problems)")
        #expect(!DartShape.fingerprints(Self.readmeDio([f1.lowercased()])).problems.isEmpty)
        #expect(!DartShape.fingerprints(Self.readmeDio([f1]) + "}").problems.isEmpty)
        #expect(!DartShape.fingerprints(Self.readmeDio([String(f1.dropLast(3))])).problems.isEmpty)

        let dart = try await export(["flutter", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
        let shape = DartShape.fingerprints(dart)
        #expect(shape.problems.isEmpty, "\(shape.problems)\n\(dart)")
        #expect(shape.fingerprints == [f1, f2], "\(dart)")
        #expect(dart.contains("import 'package:dio/dio.dart';"))

        // openssl's `x509 -fingerprint -sha256` (the README's command) prints the same fingerprint.
        let pem = try await CLI.run(["pki", "export", "leaf-v1", "--format", "pem"] + CLI.dirArgs)
        let r = await ChildProcess.run(
            ["openssl", "x509", "-noout", "-fingerprint", "-sha256"], input: Array(pem.stdout.utf8),
            timeout: .seconds(20))
        #expect(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("=" + f1), "\(r.output)")

        // Certificate pins: leaf-cert exports too; pins.json (hashes only) is refused.
        let cert = try await export(["flutter", "--scenario", "baseline", "--profile", "leaf-cert"])
        #expect(DartShape.fingerprints(cert).fingerprints == [f1])
        let dir = try tempDir("dart-from")
        let json = dir.appendingPathComponent("pins.json")
        try await export(["pins-json", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
            .write(to: json, atomically: true, encoding: .utf8)
        let refused = try await CLI.run(["export", "flutter", "--from", json.path] + CLI.dirArgs)
        #expect(refused.status == 2 && refused.stderr.contains("certificate fingerprints"), "\(refused.stderr)")
    }

    @Test(
        "audit: a badCertificateCallback 'pin' and one that returns true are flagged; the export's interceptor is read")
    func flutterAudit() async throws {
        let dir = try tempDir("dart-audit")
        let pins = try await pkiPins()
        let f1 = try colonHex(base64: try #require(pins["leaf-v1"]?.certificate))
        let exported = dir.appendingPathComponent("pinning_lab_pins.dart")
        try await export(["flutter", "--scenario", "baseline", "--profile", "leaf-spki+backup"])
            .write(to: exported, atomically: true, encoding: .utf8)
        let clean = try await audit([exported])
        #expect(clean.status == 0 && clean.ids.isEmpty, "\(clean.findings) \(clean.stderr)")
        #expect(clean.files.first?["kind"] as? String == "dart")

        let callback = dir.appendingPathComponent("client.dart")
        try """
        import 'dart:io';
        import 'package:crypto/crypto.dart';

        const pinnedFingerprint = '\(f1)';

        HttpClient pinnedClient() {
          final client = HttpClient(context: SecurityContext.defaultContext);
          client.badCertificateCallback = (X509Certificate cert, String host, int port) =>
              sha256.convert(cert.der).toString().toUpperCase() == pinnedFingerprint.replaceAll(':', '');
          return client;
        }

        HttpClient laxClient() => HttpClient()..badCertificateCallback = (cert, host, port) => true;

        """.write(to: callback, atomically: true, encoding: .utf8)
        let single = dir.appendingPathComponent("single.dart")
        try """
        import 'package:http_certificate_pinning/http_certificate_pinning.dart';
        final dio = Dio(BaseOptions(baseUrl: 'https://api.pinning.test/v1'))
          ..interceptors.add(CertificatePinningInterceptor(allowedSHAFingerprints: ['\(f1)']));

        """.write(to: single, atomically: true, encoding: .utf8)
        let a = try await audit([callback, single])
        #expect(a.status == 1, "\(a.stderr)")
        #expect(
            a.ids == ["bad-certificate-callback-pin", "bad-certificate-callback-accepts-all", "single-pin"],
            "\(a.findings)")
        #expect(a.findings.map { $0["line"] as? Int } == [8, 13, 3])
        #expect(a.findings[1]["mastg"] as? String == "MASTG-TEST-0282")
        #expect((a.findings[0]["message"] as? String)?.contains("only when the chain does not verify") == true)
        #expect(a.files.last?["domains"] as? [String] == ["api.pinning.test"])
    }
}
