// The lab's trust model (SECURITY.md), enforced: seeds never derive a CA key, every text describing a CA is read
// from its certificate, and a scoped proxy root vouches for the hosts of its scope only (judged by openssl verify).
import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

@Suite("Trust model: seeds, reach, scoped proxy root")
struct TrustModelTests {
    @Test("two folders with the same seed share leaf and client keys, never a CA key")
    func seedsNeverDeriveCAKeys() throws {
        let a = temporaryDirectory("trust-seed-a")
        let b = temporaryDirectory("trust-seed-b")
        defer { for d in [a, b] { try? FileManager.default.removeItem(at: d) } }
        let pa = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: a, seed: "docs"))
        let pb = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: b, seed: "docs"))
        for id in pa.identities where id.role.isCA {
            #expect(try pb.identity(id.name).pins.spkiSHA256 != id.pins.spkiSHA256, "\(id.name): a CA key is random")
            #expect(pa.keyOrigins[id.keyName] == "random" && !pa.isSeeded(id), "\(id.name)")
        }
        for name in ["proxy-root", "lab-root", "rogue-root", "twin-root-a", "twin-intermediate-a", "client-ca"] {
            #expect(try pa.identity(name).pins.spkiSHA256 != pb.identity(name).pins.spkiSHA256, "\(name)")
        }
        for name in ["leaf-v1", "leaf-v3-rekey", "leaf-emergency-rekey", "client-valid", "leaf-ed25519", "proxy-leaf"] {
            #expect(
                try pa.identity(name).pins.spkiSHA256 == pb.identity(name).pins.spkiSHA256, "\(name): a seeded leaf key"
            )
            #expect(try pa.isSeeded(pa.identity(name)), "\(name)")
        }
        // The state file records which keys are seeded.
        let state = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: a.appendingPathComponent("state.json")))
                as? [String: Any])
        let keys = try #require(state["keys"] as? [String: [String: String]])
        #expect(
            keys["proxy-root"]?["origin"] == "random" && keys["K1"]?["origin"]?.hasPrefix("seed:") == true, "\(keys)")
    }

    @Test("a CA's reach is read from its certificate, its issuers' constraints included")
    func reachIsReadFromTheCertificate() async throws {
        let pki = try await SharedPKI.pki()
        let labRoot = try pki.identity("lab-root").reach()
        #expect(
            labRoot.isCA && labRoot.permitted == ["localhost", "test", "127.0.0.0/8", "::1/128"]
                && labRoot.excluded.isEmpty)
        #expect(
            labRoot.summary.hasPrefix("name-constrained to: localhost, test, 127.0.0.0/8, ::1/128 ("),
            "\(labRoot.summary)")
        #expect(try pki.identity("proxy-root").reach().summary == CAReach.unconstrainedSummary)
        let intermediate = try pki.identity("lab-intermediate-a").reach()
        #expect(
            intermediate.isConstrained && intermediate.inherited,
            "lab-intermediate-a reaches only what lab-root permits")
        #expect(
            try !pki.identity("twin-intermediate-a").reach().isConstrained, "a CA under proxy-root reaches any site")
        #expect(try !pki.identity("leaf-v1").reach().isCA)
        // A constrained root's warning names the JDK; an unconstrained one says ANY site.
        #expect(labRoot.warning(name: "lab-root")?.contains("The JDK") == true)
        #expect(try pki.identity("proxy-root").reach().warning(name: "proxy-root")?.contains("ANY site") == true)
    }

    @Test("a seeded, unconstrained root is refused for installation; a constrained or random one is not")
    func seededUnconstrainedRootIsNotInstallable() throws {
        let dir = temporaryDirectory("trust-refuse")
        defer { try? FileManager.default.removeItem(at: dir) }
        var o = Lab.libraryPKIOptions(directory: dir, seed: "docs")
        let fresh = try LabPKI.open(spec: Lab.builtInSpec(), options: o)
        for id in fresh.identities where id.role == .root { try fresh.checkInstallable(id) }
        // The state of a folder an older PinningLab seeded: every EC key's origin is the seed.
        let url = dir.appendingPathComponent("state.json")
        var state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var keys = try #require(state["keys"] as? [String: [String: String]])
        let seeded = try #require(keys["K1"]?["origin"])
        for name in ["proxy-root", "lab-root", "rogue-root"] { keys[name]?["origin"] = seeded }
        state["keys"] = keys
        try JSONSerialization.data(withJSONObject: state).write(to: url)
        chmod(url.path, 0o600)
        o.reissue = true
        let old = try LabPKI.open(spec: Lab.builtInSpec(), options: o)
        let e = #expect(throws: PKIError.self) { try old.checkInstallable(old.identity("proxy-root")) }
        #expect(e?.code == .seededUnconstrainedRoot && e?.entity == "proxy-root" && e!.description.contains("--rekey"))
        #expect(throws: PKIError.self) { try old.checkInstallable(old.identity("rogue-root")) }
        try old.checkInstallable(old.identity("lab-root"))  // name-constrained
    }

    @Test("proxy scopes map to RFC 5280 permitted dNSName subtrees; bad scopes are clear errors")
    func scopesMapToNameConstraints() throws {
        let s = try ProxyScope(parsing: "API.example.com, **.example.net,*.example.org,192.0.2.10")
        #expect(s.permitted.map(\.description) == ["api.example.com", "example.net", "example.org", "192.0.2.10/32"])
        #expect(s.excluded.isEmpty, "addresses named: the IP type is constrained by the permitted ones")
        #expect(s.notes.count == 1 && s.notes[0].contains("*.example.org"))
        #expect(try ProxyScope(parsing: "api.example.com").excluded.map(\.description) == ["0.0.0.0/0", "::/0"])
        for bad in [
            "", "com", "**.com", "a..b", "ex*ample.com", "-a.example.com", "*", "999.1.1.1",
            String(repeating: "a", count: 64) + ".com",
        ] {
            let e = #expect(throws: PKIError.self, "\(bad)") { try ProxyScope(parsing: bad) }
            #expect(e?.code == .badScope && e!.description.contains("--scope"), "\(String(describing: e))")
        }
    }

    @Test("the spec field scope: name-constrains a CA as --scope does; a scope on a leaf is a clear error")
    func specScopeField() throws {
        let spec = try PKISpec.parse(
            yaml: """
                version: 1
                entities:
                  scoped: { role: root, scope: [api.example.com, "**.example.net"] }
                """)
        let e = try #require(spec.entity("scoped"))
        #expect(e.permitted.map(\.description) == ["api.example.com", "example.net"])
        #expect(e.excluded.map(\.description) == ["0.0.0.0/0", "::/0"])
        let bad = #expect(throws: PKIError.self) {
            try PKISpec.parse(
                yaml: "version: 1\nentities:\n  r: { role: root }\n  l: { role: leaf, issuer: r, scope: [a.test] }\n")
        }
        #expect(bad?.code == .badScope && bad?.field == "scope" && bad?.line == 4, "\(String(describing: bad))")
        let tld = #expect(throws: PKIError.self) {
            try PKISpec.parse(yaml: "version: 1\nentities:\n  r: { role: root, scope: com }\n")
        }
        #expect(tld?.code == .badScope && tld!.description.contains("top-level domain"), "\(String(describing: tld))")
    }

    @Test(
        "a scoped proxy root: openssl verify accepts its leaves inside the scope and refuses them outside; no root's key vouches for e-mail",
        .requires("openssl"))
    func scopedProxyRootVouchesForItsScopeOnly() async throws {
        let dir = temporaryDirectory("trust-scoped")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: dir, seed: "docs"))
        #expect(try pki.scopedProxyRoot() == nil)
        let root = try pki.issueScopedProxyRoot(ProxyScope(parsing: "api.example.com,**.example.net"))
        #expect(try pki.certificateAuthority(LabPKI.scopedProxyRootName) == root)
        #expect(root.pins.spkiSHA256 != (try pki.identity("proxy-root").pins.spkiSHA256) && !pki.isSeeded(root))
        #expect(Storage_mode(pki.keyFile(LabPKI.scopedProxyRootName).path) == 0o600)
        let reach = try root.reach()
        #expect(reach.permitted == ["api.example.com", "example.net"] && reach.excluded == ["0.0.0.0/0", "::/0"])
        let rootFile = pki.files(for: root.name).certificatePEM.path
        let minter = try LeafMinter(issuer: root)
        func verify(_ host: String) async throws -> Run {
            let leaf = dir.appendingPathComponent("leaf-\(host).pem")
            try PEM.encode(try minter.mint(host: host)).write(to: leaf, atomically: true, encoding: .utf8)
            return try await run(["openssl", "verify", "-CAfile", rootFile, leaf.path])
        }
        for inside in ["api.example.com", "v2.api.example.com", "example.net", "a.b.example.net"] {
            let r = try await verify(inside)
            #expect(r.status == 0, "\(inside) is inside the scope: \(r.output)")
        }
        for outside in ["www.example.com", "example.com", "www.google.com", "evilexample.net", "192.0.2.1", "::1"] {
            let r = try await verify(outside)
            #expect(
                r.status != 0 && r.output.contains("subtree violation"), "\(outside) is outside the scope: \(r.output)")
        }
        // The same leaves from the unconstrained proxy-root verify for any host: the difference is the scope.
        let unconstrained = try LeafMinter(issuer: pki.identity("proxy-root"))
        let www = dir.appendingPathComponent("www.pem")
        try PEM.encode(try unconstrained.mint(host: "www.google.com")).write(to: www, atomically: true, encoding: .utf8)
        let proxyRootFile = dir.appendingPathComponent("proxy-root.pem")
        try PEM.encode(try pki.identity("proxy-root").certificateDER).write(
            to: proxyRootFile, atomically: true, encoding: .utf8)
        #expect(try await run(["openssl", "verify", "-CAfile", proxyRootFile.path, www.path]).status == 0)
        // From the side of whoever holds the key of a root a device is asked to trust (either proxy root, lab-root,
        // lab-root-2, lab-root-yr): an S/MIME certificate for a real address, signed with it by the openssl CLI, is refused for
        // e-mail — the roots' EKU (serverAuth, for lab roots also OCSPSigning) bounds what name constraints do not.
        // Without the EKU every one verifies (status 0).
        let mailKey = dir.appendingPathComponent("mail.key")
        let csr = dir.appendingPathComponent("mail.csr")
        let ext = dir.appendingPathComponent("mail.ext")
        try "extendedKeyUsage=emailProtection\nsubjectAltName=email:ceo@bank.example\n".write(
            to: ext, atomically: true, encoding: .utf8)
        #expect(
            try await run([
                "openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", mailKey.path, "-subj", "/CN=ceo@bank.example", "-out", csr.path,
            ]).status == 0)
        let labRoots = try ["lab-root", "lab-root-2", "lab-root-yr"].map { name in
            let file = dir.appendingPathComponent("\(name).pem")
            try PEM.encode(try pki.identity(name).certificateDER).write(to: file, atomically: true, encoding: .utf8)
            return (name, file.path)
        }
        for (name, file) in [(LabPKI.scopedProxyRootName, rootFile), ("proxy-root", proxyRootFile.path)] + labRoots {
            let mail = dir.appendingPathComponent("mail-\(name).pem")
            let signed = try await run([
                "openssl", "x509", "-req", "-in", csr.path, "-CA", file, "-CAkey", pki.keyFile(name).path,
                "-set_serial", "7", "-days", "1", "-extfile", ext.path, "-out", mail.path,
            ])
            #expect(signed.status == 0, "\(signed.output)")
            let r = try await run(["openssl", "verify", "-purpose", "smimesign", "-CAfile", file, mail.path])
            #expect(
                r.status != 0 && r.output.contains("error 26 at 1 depth lookup: unsuitable certificate purpose"),
                "\(name): \(r.output)")
        }
        // Re-opening keeps the key and scope; a new --scope makes a new key.
        #expect(try pki.scopedProxyRoot()?.pins.spkiSHA256 == root.pins.spkiSHA256)
        let other = try pki.issueScopedProxyRoot(ProxyScope(parsing: "api.example.com"))
        #expect(other.pins.spkiSHA256 != root.pins.spkiSHA256)
        // Minted leaves (30 days by default) never outlive their 7-day issuer.
        let leaf = dir.appendingPathComponent("lifetime.pem")
        try PEM.encode(try minter.mint(host: "api.example.com")).write(to: leaf, atomically: true, encoding: .utf8)
        let end = try await run(["openssl", "x509", "-noout", "-in", leaf.path, "-checkend", "\(8 * 86400)"])
        #expect(end.status == 1, "the leaf expires within 8 days: \(end.output)")
    }

    @Test(
        "SECURITY.md lists every CA of the built-in spec, and its constrained/unconstrained claim matches the certificate"
    )
    func securityDocumentMatchesThePKI() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("SECURITY.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        // Rows of the table: | `name` | role | reach | …
        var rows: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            rows[name] = cells[2]
        }
        let pki = try await SharedPKI.pki()
        let scopedDir = temporaryDirectory("trust-doc")
        defer { try? FileManager.default.removeItem(at: scopedDir) }
        let scopedPKI = try LabPKI.open(spec: Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: scopedDir))
        var cas = pki.identities.filter(\.role.isCA)
        cas.append(try scopedPKI.issueScopedProxyRoot(ProxyScope(parsing: "api.example.com")))
        for ca in cas {
            guard let claim = rows[ca.name] else {
                Issue.record("SECURITY.md has no table row for the CA \(ca.name)")
                continue
            }
            let reach = try ca.reach()
            if !reach.isConstrained {
                #expect(
                    claim.hasPrefix("**unconstrained**"),
                    "\(ca.name): its certificate has no name constraints; SECURITY.md says \(claim)")
            } else if reach.inherited {
                #expect(
                    claim.hasPrefix("constrained by its issuer"),
                    "\(ca.name): constrained by its issuer; SECURITY.md says \(claim)")
            } else {
                #expect(claim.hasPrefix("constrained to"), "\(ca.name): SECURITY.md says \(claim)")
                // The scoped root's names are the user's; the lab's own roots must list theirs.
                for p in reach.permitted where ca.name != LabPKI.scopedProxyRootName {
                    #expect(claim.contains(p), "\(ca.name): \(p) missing from \(claim)")
                }
            }
        }
        #expect(Set(rows.keys) == Set(cas.map(\.name)), "no row for a CA that does not exist")
    }
}
