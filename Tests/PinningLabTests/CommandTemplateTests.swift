import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("Command templates")
struct CommandTemplateTests {
    let k1: [UInt8] = Array(repeating: 0x11, count: 32)
    let k2: [UInt8] = Array(repeating: 0x22, count: 32)
    let cert: [UInt8] = Array(repeating: 0xAB, count: 32)

    func context(profile: PinProfile, pins: [[UInt8]], client: Bool) -> CellContext {
        CellContext(
            scenario: "rekey", profile: profile, port: 8443, caFile: "/tmp/ca.pem", pins: pins,
            certificatePins: pins.isEmpty ? [] : [cert],
            clientCertificateFile: client ? "/tmp/c.pem" : nil, clientKeyFile: client ? "/tmp/c.key" : nil,
            clientPKCS12File: client ? "/tmp/c.p12" : nil, clientPKCS12Password: client ? "pinninglab" : nil)
    }

    static let everyPlaceholder = [
        "{url}", "{host}", "{port}", "{ip}", "{resolve}", "{hosts.file}", "{ca}", "{pins}", "{pins.curl}",
        "{pins.okhttp}",
        "{pins.hex}", "{pins.domain}", "{pins.subdomains}", "{pins.okhttp.pattern}", "{certpins.hex}", "{client.cert}",
        "{client.key}", "{client.p12}", "{client.password}",
        "{scenario}", "{profile}", "{ocsp.url}", "{crl.url}", "{ech.config}",
    ]

    @Test func everyPlaceholderExpands() throws {
        // A placeholder the product adds without a case here fails this line.
        #expect(Self.everyPlaceholder == CommandTemplate.placeholders.map { "{\($0)}" })
        let t = try CommandTemplate(["client"] + Self.everyPlaceholder + ["--pin={pins.hex}"])
        let a = t.arguments(for: context(profile: .leafSPKIBackup, pins: [k1, k2], client: true))
        let b1 = Data(k1).base64EncodedString()
        let b2 = Data(k2).base64EncodedString()
        #expect(
            a == [
                "client", "https://localhost:8443/", "localhost", "8443", "127.0.0.1", "localhost:8443:127.0.0.1", "",
                "/tmp/ca.pem",
                "\(b1),\(b2)", "sha256//\(b1);sha256//\(b2)", "sha256/\(b1),sha256/\(b2)",
                String(repeating: "11", count: 32) + "," + String(repeating: "22", count: 32),
                "localhost", "false", "localhost",
                String(repeating: "ab", count: 32), "/tmp/c.pem", "/tmp/c.key", "/tmp/c.p12", "pinninglab",
                "rekey", "leaf-spki+backup", "", "", "",
                "--pin=" + String(repeating: "11", count: 32) + "," + String(repeating: "22", count: 32),
            ])
    }

    /// A scenario's host name reaches the client in the URL, `{host}`, curl's `--resolve` entry, a hosts file and the
    /// environment, while the address stays the server's.
    @Test func hostPlaceholdersRouteTheNameToTheServer() throws {
        var c = CellContext(
            scenario: "pinned-cert-other-host", profile: .leafCert, host: "other.pinning.test", port: 40123,
            caFile: "/tmp/ca.pem", pins: [k1], certificatePins: [cert])
        c.hostsFile = "/tmp/hosts"
        let t = try CommandTemplate([
            "c", "{url}", "{host}", "--resolve", "{resolve}", "-Djdk.net.hosts.file={hosts.file}",
        ])
        #expect(
            t.arguments(for: c) == [
                "c", "https://other.pinning.test:40123/", "other.pinning.test", "--resolve",
                "other.pinning.test:40123:127.0.0.1", "-Djdk.net.hosts.file=/tmp/hosts",
            ])
        #expect(c.environment["PINLAB_HOST"] == "other.pinning.test")
        #expect(c.environment["PINLAB_RESOLVE"] == "other.pinning.test:40123:127.0.0.1")
        #expect(c.environment["PINLAB_HOSTS_FILE"] == "/tmp/hosts")
        #expect(c.environment["PINLAB_IP"] == "127.0.0.1")
        #expect(c.hostsFileContents == "127.0.0.1 other.pinning.test\n")
        // Pins declared for a scope: the domain, whether subdomains are covered, and OkHttp's pattern.
        c.pinScope = PinScope(domain: "api.pinning.test", includeSubdomains: true)
        let scoped = try CommandTemplate(["c", "{pins.domain}", "{pins.subdomains}", "{pins.okhttp.pattern}"])
        #expect(scoped.arguments(for: c) == ["c", "api.pinning.test", "true", "**.api.pinning.test"])
        #expect(c.environment["PINLAB_PINS_OKHTTP_PATTERN"] == "**.api.pinning.test")
        c.ip = "::1"
        #expect(c.resolve == "other.pinning.test:40123:[::1]")
    }

    /// The JVM resolves the scenario's host name from `{hosts.file}` (`-Djdk.net.hosts.file`), which
    /// `CommandClient` writes before the run: no /etc/hosts entry.
    @Test(.requires("java"))
    func theJVMResolvesTheHostFromTheHostsFile() async throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-jvm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("Resolve.java")
        try """
        public class Resolve {
            public static void main(String[] a) throws Exception {
                System.exit(java.net.InetAddress.getByName(a[0]).getHostAddress().equals(a[1]) ? 0 : 3);
            }
        }
        """.write(to: source, atomically: true, encoding: .utf8)
        let client = CommandClient(
            template: try CommandTemplate(["java", "-Djdk.net.hosts.file={hosts.file}", source.path, "{host}", "{ip}"]),
            timeout: .seconds(120))
        let c = CellContext(
            scenario: "pinned-cert-other-host", profile: .none, host: "other.pinning.test", port: 1,
            caFile: "", pins: [], certificatePins: [])
        let (outcome, _) = await client.run(c, scratch: dir)
        #expect(outcome.claim == .accepted, "\(outcome.detail)")
        var elsewhere = CellContext(
            scenario: "x", profile: .none, host: "cdn.pinning.test", port: 1, caFile: "",
            pins: [], certificatePins: [])
        let otherHosts = dir.appendingPathComponent("other-hosts")
        try "127.0.0.1 other.pinning.test\n".write(to: otherHosts, atomically: true, encoding: .utf8)
        elsewhere.hostsFile = otherHosts.path
        #expect(
            await client.run(elsewhere, scratch: dir).outcome.claim == .refused,
            "a name outside the file does not resolve")
    }

    /// The CommandTemplates article's table lists exactly the placeholders the product expands, in its order.
    @Test func theArticleListsEveryPlaceholder() throws {
        let article = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/PinningLab/PinningLab.docc/CommandTemplates.md")
        let rows = try String(contentsOf: article, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("| `{") }
            .compactMap { $0.split(separator: "`").dropFirst().first.map(String.init) }
        #expect(rows == CommandTemplate.placeholders.map { "{\($0)}" })
    }

    @Test func profileNoneAndNoClientIdentityExpandToEmptyAndDropOptionalGroups() throws {
        let t = try CommandTemplate([
            "curl", "[--pinnedpubkey {pins.curl}]", "[--cert {client.cert}]", "{pins}", "{client.password}", "{url}",
        ])
        let none = t.arguments(for: context(profile: .none, pins: [], client: false))
        #expect(none == ["curl", "", "", "https://localhost:8443/"])
        let pinned = t.arguments(for: context(profile: .leafSPKI, pins: [k1], client: true))
        #expect(
            pinned == [
                "curl", "--pinnedpubkey", "sha256//\(Data(k1).base64EncodedString())", "--cert", "/tmp/c.pem",
                Data(k1).base64EncodedString(), "pinninglab", "https://localhost:8443/",
            ])
    }

    @Test(arguments: [
        (["curl", "{pin}"], "unknown placeholder {pin}"),
        (["curl", "{pins.curls}"], "Did you mean {pins.curl}"),
        (["curl", "[--pinnedpubkey", "{pins.curl}]"], "optional group"),
        ([String](), "empty"),
    ])
    func badTemplatesAreRejected(words: [String], message: String) {
        do {
            _ = try CommandTemplate(words)
            Issue.record("accepted \(words)")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    @Test func exitStatusIsTheClaimAndOverrunsAreKilled() async throws {
        let scratch = TestScratch.root
        let ctx = context(profile: .leafSPKI, pins: [k1], client: false)
        let ok = CommandClient(
            template: try CommandTemplate(["sh", "-c", "test \"$PINLAB_PINS_CURL\" = '{pins.curl}'"]))
        #expect(await ok.run(ctx, scratch: scratch).outcome.claim == .accepted)
        let refused = CommandClient(
            template: try CommandTemplate([
                "sh", "-c", "echo 'SSL: public key does not match pinned public key' >&2; exit 90",
            ]))
        let r = await refused.run(ctx, scratch: scratch).outcome
        #expect(r.claim == .refused && r.exitStatus == 90)
        #expect(r.detail.contains("does not match pinned"))
        let slow = CommandClient(template: try CommandTemplate(["sleep", "30"]), timeout: .milliseconds(300))
        let s = await slow.run(ctx, scratch: scratch)
        #expect(s.outcome.claim == .refused && s.outcome.category == .timeout)
        // Killed, not waited for: well before `sleep 30` would end (a loaded machine took 10.2 s to get there).
        #expect(s.milliseconds < 25_000)
        let missing = CommandClient(template: try CommandTemplate(["no-such-client-\(UUID().uuidString)"]))
        #expect(await missing.run(ctx, scratch: scratch).outcome.detail.contains("command not found"))
    }

    /// A client that claims success without ever connecting: the server is the oracle, so an expected accept
    /// fails and an expected refusal is a disagreement.
    @Test func claimsAreCheckedAgainstTheServer() async throws {
        let liar = CommandClient(name: "liar", template: try CommandTemplate(["true"]))
        let report = try await TestLab.runner().run(
            .command(liar),
            options: CheckOptions(
                engines: [Engines.openssl], profiles: [.none], scenarios: ["baseline", "expired-leaf"]))
        let baseline = try #require(report.verdict("baseline", .none, "openssl"))
        let expired = try #require(report.verdict("expired-leaf", .none, "openssl"))
        #expect(baseline.status == .fail)
        #expect(baseline.claim == .accepted && baseline.observed == .refused)
        #expect(expired.status == .disagree)
        #expect(expired.reason.contains("the server received no request"))
        #expect(report.deviates)
    }
}

@Suite(
    "curl --pinnedpubkey through a command template", .serialized,
    .requires("curl"))
struct CurlTests {
    /// curl validates the chain and the host name with --cacert (for the scenario's host name, routed to the server
    /// with `--resolve`), and --pinnedpubkey compares the SHA-256 of the server's own SPKI: for the profiles it
    /// declares it behaves like the correct client — except that curl does not follow App Transport Security:
    /// OpenSSL's DEFAULT cipher list still offers static RSA key exchange, so it connects without forward secrecy.
    @Test func curlConformsOnItsDeclaredProfiles() async throws {
        try #require(Tool.path("curl") != nil, "curl is not on the PATH (apt-get install curl)")
        let report = try await TestLab.runner().run(.command(try CommandClient.curl()), options: CheckOptions(jobs: 8))
        // curl has no pin scope: it applies --pinnedpubkey to whatever host it is sent to.
        let predicted = cells(["tls-v1-2-no-forward-secrecy"], [.none, .leafSPKI, .leafSPKIBackup])
            .union(
                cells(
                    ["pin-scope-subdomain-excluded", "pin-scope-unpinned-host", "pins-for-other-host"],
                    [.leafSPKI, .leafSPKIBackup]))
        for engine in ["openssl", "gnutls"] {
            let failed = report.cells(.fail, engine: engine)
            #expect(
                failed == predicted,
                "\(engine): unpredicted \(failed.subtracting(predicted).sorted()), missing \(predicted.subtracting(failed).sorted())"
            )
            // Only the scenarios of several connections are unsupported: a command is one process per connection.
            let multiStep = try Catalogue.bundled().scenarios.filter(\.isMultiStep).map(\.id)
            #expect(!multiStep.isEmpty)
            // …and, on GnuTLS, the SCTs of the TLS extension (GnuTLS has no hook to send them); and, on both, what
            // no engine of this build serves (ECH acceptance, ML-DSA keys).
            #expect(
                Set(report.cells(.unsupported, engine: engine).map(\.scenario))
                    == Set(
                        multiStep + Predictions.unservable + (engine == "gnutls" ? ["ct-tls-extension-valid"] : [])))
            // The server really negotiated static RSA with curl (no forward secrecy), on both engines.
            let rsa = try #require(report.verdict("tls-v1-2-no-forward-secrecy", .none, engine))
            #expect(rsa.evidence?.cipherSuite?.hasPrefix("TLS_RSA_") == true, "\(rsa.evidence?.cipherSuite ?? "none")")
            #expect(rsa.evidence?.negotiatedVersion == "TLSv1.2")
            // curl asked for other.pinning.test (SNI) at 127.0.0.1 and refused leaf-v1 on the host name.
            let other = try #require(report.verdict("pinned-cert-other-host", .leafSPKI, engine))
            #expect(other.evidence?.sni == "other.pinning.test")
            #expect(other.status == .pass, "\(other.reason)")
            #expect(other.category == .hostname, "\(other.reason)")
            // curl sends SNI without the trailing dot of api.pinning.test. (RFC 6066), verifies the name and pins it.
            let dotted = try #require(report.verdict("pin-scope-trailing-dot", .leafSPKI, engine))
            #expect(dotted.evidence?.sni == "api.pinning.test", "\(dotted.evidence?.sni ?? "no SNI")")
            #expect(dotted.status == .pass && dotted.category == .pinMismatch, "\(dotted.reason)")
        }
        #expect(report.cells(.disagree, engine: "openssl").isEmpty && report.cells(.disagree, engine: "gnutls").isEmpty)
        #expect(report.summary.skipped == report.summary.total / 2, "curl declares 3 of 6 profiles")
        #expect(report.summary.pass > 0)
        // curl checks the host name itself after OpenSSL verified the chain (Curl_ossl_verifyhost, after the
        // handshake), so a certificate that is both for another name and expired is refused for its date: the one
        // scenario with both flaws (a client without ECH asks api.pinning.test; the public name's certificate expired).
        let both = "ech-rejected-expired-public-cert"
        let otherReason = report.verdicts.filter(\.wrongReason)
        #expect(
            otherReason.filter { $0.scenario != both }.isEmpty,
            "curl refuses for the reason a correct client does: \(otherReason.map(\.reason))")
        #expect(
            otherReason.filter { $0.scenario == both }.allSatisfy { $0.category == .chainInvalid },
            "curl refuses the expired public-name certificate for its date: \(otherReason.map(\.reason))")
        let mtls = try #require(report.verdict("mtls-required-valid", .leafSPKI, "gnutls"))
        #expect(mtls.evidence?.clientCertificateSubject != nil, "curl presented the client certificate")
    }

    /// Declared for every profile, curl shows its documented limit: it pins only the leaf key, so certificate,
    /// intermediate and root pins never match and every cell that should accept with them refuses.
    @Test func curlPinsOnlyTheLeafKey() async throws {
        try #require(Tool.path("curl") != nil, "curl is not on the PATH (apt-get install curl)")
        let all = CommandClient(
            name: "curl-all-profiles", template: try CommandClient.curl().template, supportedProfiles: nil)
        let report = try await TestLab.runner().run(
            .command(all), options: CheckOptions(engines: [Engines.openssl], jobs: 8))
        let acceptAll = Predictions.allAcceptRootNotSent + Predictions.allAcceptRootSent
        let predicted = cells(acceptAll, [.leafCert, .intermediateSPKI, .rootSPKI])
            .union(cells(["tls-v1-2-no-forward-secrecy"], [.none, .leafSPKI, .leafSPKIBackup]))
            .union(
                cells(
                    ["pin-scope-subdomain-excluded", "pin-scope-unpinned-host", "pins-for-other-host"],
                    Predictions.pinnedProfiles)
            )
            .union(cells(["renewal-same-key", "rekey", "emergency-rekey"], [.intermediateSPKI, .rootSPKI]))
            .union(cells(["sibling-intermediate"], [.rootSPKI]))
            // The host serves its RSA certificate, which only the CA pins cover: curl pins the leaf key only.
            .union(cells(["dual-certificates-rsa-first"], [.intermediateSPKI, .rootSPKI]))
            // The CA moved; the root pin should hold (root-rollover-new-root-trusted's root cell varies by path).
            .union(
                cells(["intermediate-pool-rotation", "short-lived-renewal", "root-rollover-cross-signed"], [.rootSPKI])
            )
            .union(cells(["intermediate-pool-rotation-gen-y", "root-rollover-cross-signed-gen-y"], [.rootSPKI]))
            // curl sets X509_V_FLAG_PARTIAL_CHAIN: the trusted intermediate is an anchor; its certificate and
            // intermediate pins cannot be expressed (curl pins the leaf key only).
            .union(cells(["intermediate-as-trust-anchor"], [.leafCert, .intermediateSPKI]))
            // The CT scenarios' leaves chain to lab-intermediate-a and lab-root: those pins should hold.
            .union(
                cells(
                    [
                        "ct-embedded-valid", "ct-tls-extension-valid", "ct-one-sct", "ct-unknown-log",
                        "ct-bad-signature",
                        "ct-future-timestamp", "ct-ocsp-valid",
                    ], [.intermediateSPKI, .rootSPKI])
            )
            .subtracting(report.cells(.unsupported, engine: "openssl"))
            // curl declares no CT or revocation checking: cells that depend on it are undecided policy, not judged.
            .subtracting(report.cells(.policy, engine: "openssl"))
        let failed = report.cells(.fail, engine: "openssl")
        #expect(failed.subtracting(predicted).isEmpty, "unpredicted: \(failed.subtracting(predicted).sorted())")
        #expect(predicted.subtracting(failed).isEmpty, "missing: \(predicted.subtracting(failed).sorted())")
        #expect(report.cells(.disagree, engine: "openssl").isEmpty)
    }
}
