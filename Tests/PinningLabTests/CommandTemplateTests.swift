import Foundation
import PinningLab
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
        "{url}", "{host}", "{port}", "{ip}", "{ca}", "{pins}", "{pins.curl}", "{pins.okhttp}",
        "{pins.hex}", "{certpins.hex}", "{client.cert}", "{client.key}", "{client.p12}", "{client.password}",
        "{scenario}", "{profile}",
    ]

    @Test func everyPlaceholderExpands() throws {
        // A placeholder the product adds without a case here fails this line.
        #expect(Self.everyPlaceholder == CommandTemplate.placeholders.map { "{\($0)}" })
        let t = try CommandTemplate(["client"] + Self.everyPlaceholder + ["--pin={pins.hex}"])
        let a = t.arguments(for: context(profile: .leafSPKIBackup, pins: [k1, k2], client: true))
        let b1 = Data(k1).base64EncodedString()
        let b2 = Data(k2).base64EncodedString()
        #expect(a == [
            "client", "https://localhost:8443/", "localhost", "8443", "127.0.0.1", "/tmp/ca.pem",
            "\(b1),\(b2)", "sha256//\(b1);sha256//\(b2)", "sha256/\(b1),sha256/\(b2)",
            String(repeating: "11", count: 32) + "," + String(repeating: "22", count: 32),
            String(repeating: "ab", count: 32), "/tmp/c.pem", "/tmp/c.key", "/tmp/c.p12", "pinninglab",
            "rekey", "leaf-spki+backup", "--pin=" + String(repeating: "11", count: 32) + "," + String(repeating: "22", count: 32),
        ])
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
        let t = try CommandTemplate(["curl", "[--pinnedpubkey {pins.curl}]", "[--cert {client.cert}]", "{pins}", "{client.password}", "{url}"])
        let none = t.arguments(for: context(profile: .none, pins: [], client: false))
        #expect(none == ["curl", "", "", "https://localhost:8443/"])
        let pinned = t.arguments(for: context(profile: .leafSPKI, pins: [k1], client: true))
        #expect(pinned == ["curl", "--pinnedpubkey", "sha256//\(Data(k1).base64EncodedString())", "--cert", "/tmp/c.pem",
                           Data(k1).base64EncodedString(), "pinninglab", "https://localhost:8443/"])
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
        let scratch = FileManager.default.temporaryDirectory
        let ctx = context(profile: .leafSPKI, pins: [k1], client: false)
        let ok = CommandClient(template: try CommandTemplate(["sh", "-c", "test \"$PINLAB_PINS_CURL\" = '{pins.curl}'"]))
        #expect(await ok.run(ctx, scratch: scratch).outcome.claim == .accepted)
        let refused = CommandClient(template: try CommandTemplate(["sh", "-c", "echo 'SSL: public key does not match pinned public key' >&2; exit 90"]))
        let r = await refused.run(ctx, scratch: scratch).outcome
        #expect(r.claim == .refused && r.exitStatus == 90)
        #expect(r.detail.contains("does not match pinned"))
        let slow = CommandClient(template: try CommandTemplate(["sleep", "30"]), timeout: .milliseconds(300))
        let s = await slow.run(ctx, scratch: scratch)
        #expect(s.outcome.claim == .refused && s.outcome.category == .timeout)
        #expect(s.milliseconds < 10_000)
        let missing = CommandClient(template: try CommandTemplate(["no-such-client-\(UUID().uuidString)"]))
        #expect(await missing.run(ctx, scratch: scratch).outcome.detail.contains("command not found"))
    }

    /// A client that claims success without ever connecting: the server is the oracle, so an expected accept
    /// fails and an expected refusal is a disagreement.
    @Test func claimsAreCheckedAgainstTheServer() async throws {
        let liar = CommandClient(name: "liar", template: try CommandTemplate(["true"]))
        let report = try await TestLab.runner().run(
            .command(liar),
            options: CheckOptions(engines: [Engines.openssl], profiles: [.none], scenarios: ["baseline", "expired-leaf"]))
        let baseline = try #require(report.verdict("baseline", .none, "openssl"))
        let expired = try #require(report.verdict("expired-leaf", .none, "openssl"))
        #expect(baseline.status == .fail)
        #expect(baseline.claim == .accepted && baseline.observed == .refused)
        #expect(expired.status == .disagree)
        #expect(expired.reason.contains("the server received no request"))
        #expect(report.deviates)
    }
}

@Suite("curl --pinnedpubkey through a command template", .serialized,
       .enabled(if: Tool.runs(needing: "curl"), "curl is not installed (apt-get install curl)"))
struct CurlTests {
    /// curl validates the chain and the host name with --cacert, and --pinnedpubkey compares the SHA-256 of the
    /// server's own SPKI: for the profiles it declares it behaves like the correct client.
    @Test func curlConformsOnItsDeclaredProfiles() async throws {
        try #require(Tool.path("curl") != nil, "curl is not on the PATH (apt-get install curl)")
        let report = try await TestLab.runner().run(.command(try CommandClient.curl()), options: CheckOptions(jobs: 8))
        #expect(report.deviations.isEmpty, "\(report.deviations.map { "\($0.scenario)/\($0.profile)/\($0.engine): \($0.reason)" })")
        #expect(report.summary.skipped == report.summary.total / 2, "curl declares 3 of 6 profiles")
        #expect(report.summary.pass > 0)
        #expect(report.summary.wrongReason == 0,
                "curl refuses for the reason a correct client does: \(report.verdicts.filter(\.wrongReason).map(\.reason))")
        let mtls = try #require(report.verdict("mtls-required-valid", .leafSPKI, "gnutls"))
        #expect(mtls.evidence?.clientCertificateSubject != nil, "curl presented the client certificate")
    }

    /// Declared for every profile, curl shows its documented limit: it pins only the leaf key, so certificate,
    /// intermediate and root pins never match and every cell that should accept with them refuses.
    @Test func curlPinsOnlyTheLeafKey() async throws {
        try #require(Tool.path("curl") != nil, "curl is not on the PATH (apt-get install curl)")
        let all = CommandClient(
            name: "curl-all-profiles", template: try CommandClient.curl().template, supportedProfiles: nil)
        let report = try await TestLab.runner().run(.command(all), options: CheckOptions(engines: [Engines.openssl], jobs: 8))
        let acceptAll = Predictions.allAcceptRootNotSent + ["reversed-chain"]
        let predicted = cells(acceptAll, [.leafCert, .intermediateSPKI, .rootSPKI])
            .union(cells(["renewal-same-key", "rekey", "emergency-rekey"], [.intermediateSPKI, .rootSPKI]))
            .union(cells(["sibling-intermediate"], [.rootSPKI]))
            .subtracting(report.cells(.unsupported, engine: "openssl"))
        let failed = report.cells(.fail, engine: "openssl")
        #expect(failed.subtracting(predicted).isEmpty, "unpredicted: \(failed.subtracting(predicted).sorted())")
        #expect(predicted.subtracting(failed).isEmpty, "missing: \(predicted.subtracting(failed).sorted())")
        #expect(report.cells(.disagree, engine: "openssl").isEmpty)
    }
}
