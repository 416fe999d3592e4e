import Foundation
import PinningLab
import PinningLabModel
import PinningLabTestSupport
import Testing

/// The hosts file a command client gets (`{hosts.file}`, `PINLAB_HOSTS_FILE`) maps every spelling of every host a
/// resolver may be asked for: the name as the scenario spells it and its canonical form (lower case, without the
/// trailing dot). It used to hold the one line `IP HOST` as spelled, so for `API.Pinning.Test` the JVM's
/// `jdk.net.hosts.file` resolver, asked by OkHttp for the lower-cased `api.pinning.test`, failed: "Unable to resolve
/// host api.pinning.test in hosts file", and a correct pinner was judged as refusing the valid unpinned cell.
@Suite struct HostsFileTests {
    static func context(host: String, steps: [StepContext] = []) -> CellContext {
        var c = CellContext(
            scenario: "x", profile: .none, host: host, port: 40123, caFile: "", pins: [], certificatePins: [])
        c.steps = steps
        return c
    }

    @Test func everySpellingOfTheHostIsMapped() {
        #expect(
            Self.context(host: "API.Pinning.Test").hostsFileContents
                == "127.0.0.1 API.Pinning.Test\n127.0.0.1 api.pinning.test\n")
        #expect(
            Self.context(host: "api.pinning.test.").hostsFileContents
                == "127.0.0.1 api.pinning.test.\n127.0.0.1 api.pinning.test\n")
        #expect(
            Self.context(host: "API.Pinning.Test.").hostsFileContents
                == "127.0.0.1 API.Pinning.Test.\n127.0.0.1 api.pinning.test.\n127.0.0.1 api.pinning.test\n")
        #expect(Self.context(host: "localhost").hostsFileContents == "127.0.0.1 localhost\n")
    }

    /// A cell of several connections (`PINLAB_STEPS`) may ask for other hosts in later steps: each is in the file,
    /// with its own address, in every spelling.
    @Test func everyStepsHostIsMapped() {
        let c = Self.context(
            host: "cdn.pinning.test",
            steps: [
                StepContext(step: 1, host: "cdn.pinning.test", port: 40123, pins: [], certificatePins: []),
                StepContext(step: 2, host: "API.Pinning.Test", ip: "::1", port: 40124, pins: [], certificatePins: []),
                StepContext(step: 3, host: "cdn.pinning.test", port: 40123, pins: [], certificatePins: []),
            ])
        #expect(c.hostsFileContents == "127.0.0.1 cdn.pinning.test\n::1 API.Pinning.Test\n::1 api.pinning.test\n")
        // The steps' curl entries keep the spelling of their URLs (curl compares `--resolve` names without case, and
        // the trailing dot of api.pinning.test. is in both).
        #expect(
            c.stepList[1].resolve == "API.Pinning.Test:40124:[::1]"
                && c.stepList[1].url == "https://API.Pinning.Test:40124/")
    }

    /// The file CommandClient writes is the one the template names.
    @Test func theCommandClientWritesEverySpelling() async throws {
        let dir = TestScratch.root.appendingPathComponent("hosts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("copy")
        let client = CommandClient(template: try CommandTemplate(["cp", "{hosts.file}", out.path]))
        let (outcome, _) = await client.run(Self.context(host: "API.Pinning.Test"), scratch: dir)
        #expect(outcome.claim == .accepted, "\(outcome.detail)")
        #expect(
            try String(contentsOf: out, encoding: .utf8) == "127.0.0.1 API.Pinning.Test\n127.0.0.1 api.pinning.test\n")
    }

    static let okhttpJars = ["/usr/share/java/okhttp.jar", "/usr/share/java/okio.jar"]

    /// Debian's OkHttp 3.13.1 with its default `Dns.SYSTEM`, resolving through `-Djdk.net.hosts.file={hosts.file}`
    /// (Tests/Jdk/OkHttpSystemDnsClient.java, compiled here), through the pin-scope rows on both engines.
    ///
    /// The unpinned cells (`none`) must pass: before every spelling was in the hosts file, `pin-scope-upper-case/none`
    /// failed with "UnknownHostException: Unable to resolve host api.pinning.test in hosts file".
    ///
    /// The pinned cells get what OkHttp 3.13.1's own host matching predicts. `RealConnection.connectTls` calls
    /// `CertificatePinner.check(address.url().host(), …)`; `HttpUrl` lower-cases the host (`Util.canonicalizeHost`:
    /// `IDN.toASCII(host).toLowerCase(Locale.US)`) and keeps a trailing dot; `findMatchingPins(hostname)` keeps the pins
    /// whose `Pin.matches(hostname)` holds, which for a pattern without `*.` is `hostname.equals(canonicalHostname)`
    /// (`canonicalHostname = HttpUrl.get("http://" + pattern).host()`, here `api.pinning.test`). So:
    /// - `API.Pinning.Test` becomes `api.pinning.test`: the pins apply, the proxy's leaf is refused — `pass`;
    /// - `api.pinning.test.` is not equal to `api.pinning.test`: no pins apply, the request goes to the proxy —
    ///   `fail` (OkHttp's trailing-dot bypass, which the scenario describes);
    /// - `api.pinning.test` itself: the pins apply — `pass`.
    @Test(
        .requires("javac", "java"), .requiresFile("/usr/share/java/okhttp.jar", package: "libokhttp-java"),
        .requiresFile("/usr/share/java/okio.jar", package: "libokhttp-java"))
    func okHttpWithTheSystemResolverThroughThePinScopeRows() async throws {
        let dir = TestScratch.root.appendingPathComponent("okhttp-hosts-\(UUID().uuidString)")
        let classes = dir.appendingPathComponent("classes")
        try FileManager.default.createDirectory(at: classes, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Jdk/OkHttpSystemDnsClient.java")
        let cp = Self.okhttpJars.joined(separator: ":")
        let javac = await ChildProcess.run(
            ["javac", "-nowarn", "-cp", cp, "-d", classes.path, source.path], timeout: .seconds(180))
        try #require(javac.status == 0, "javac: \(javac.output)")
        let template = try CommandTemplate([
            "java", "-Djdk.net.hosts.file={hosts.file}", "-cp", classes.path + ":" + cp, "OkHttpSystemDnsClient",
            "{url}", "{ca}", "{pins.okhttp.pattern}", "{pins.okhttp}",
        ])
        let client = CommandClient(
            name: "okhttp-system-dns", template: template,
            supportedProfiles: [.none, .leafSPKI, .rootSPKI], timeout: .seconds(60))
        let scenarios = ["pin-scope-upper-case", "pin-scope-trailing-dot", "pin-scope-exact-host"]
        let report = try await TestLab.runner().run(
            .command(client),
            options: CheckOptions(
                profiles: [.none, .leafSPKI, .rootSPKI], scenarios: scenarios, jobs: 2,
                timeout: .seconds(60)))
        // The profiles the client does not pin with (leaf-cert, …) are listed as skipped.
        let judged = report.verdicts.filter { $0.status != .skipped }
        #expect(judged.count == 3 * 3 * 2)
        for v in judged {
            print("okhttp-system-dns \(v.scenario)/\(v.profile)/\(v.engine): \(v.status) — \(v.reason)")
            let predicted: Verdict.Status = v.scenario == "pin-scope-trailing-dot" && v.profile != .none ? .fail : .pass
            #expect(v.status == predicted, "\(v.scenario)/\(v.profile) on \(v.engine): \(v.status): \(v.reason)")
            if v.profile == .none {
                #expect(!v.reason.contains("UnknownHostException"), "\(v.scenario) on \(v.engine): \(v.reason)")
            }
            if v.scenario == "pin-scope-trailing-dot" && v.profile != .none {
                #expect(v.observed == .accepted, "the request reached the proxy: \(v.reason)")
            }
        }
    }
}
