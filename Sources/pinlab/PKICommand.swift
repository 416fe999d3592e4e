import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabExports
import PinningLabPKI

struct PKICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pki",
        abstract: "Create and inspect the lab PKI: stable keys, fresh certificates, every pin format.",
        subcommands: [Init.self, List.self, Show.self, Export.self, Pins.self, ProxyRoot.self]
    )
}

/// Options every `pki` subcommand takes.
struct PKIOptionsGroup: ParsableArguments {
    @Option(
        name: .customLong("dir"),
        help:
            "The PKI folder (keys are kept here, mode 0700). Default: the nearest .pinninglab/ in this folder or above, else a new one here."
    )
    var explicitDir: String?

    /// The folder: --dir, else the nearest `.pinninglab/` (said on standard error).
    var dir: String { explicitDir ?? DefaultPKIFolder.path }

    @Option(
        name: .long,
        help:
            "A PKI spec file instead of the built-in pki/lab.yaml (the folder remembers it: later commands without --spec use it while it is unchanged)."
    )
    var spec: String?

    @Option(
        name: .long,
        help:
            "Derive the EC and Ed25519 keys of leaf and client certificates from this text (the same leaf pins on every machine). CA keys stay random."
    )
    var seed: String?

    @Flag(
        name: .customLong("post-quantum"), inversion: .prefixedNo,
        help:
            "Add the built-in post-quantum part (pki/post-quantum.yaml: ML-DSA-65 and ML-DSA-87 identities) to the built-in lab PKI; the folder remembers it (--no-post-quantum drops it, keeping the other keys). Needs Linux or macOS 26."
    )
    var postQuantum: Bool?

    func open(force: Bool = false, reissue: Bool = false, rekey: Set<String> = []) throws -> LabPKI {
        let directory = URL(fileURLWithPath: dir, isDirectory: true)
        if let postQuantum, let spec {
            throw ValidationError(
                "--\(postQuantum ? "" : "no-")post-quantum chooses the built-in lab PKI's part, not --spec \(spec): declare ML-DSA entities in your spec instead (keyType: ML-DSA-65 or ML-DSA-87; see pki/post-quantum.yaml)"
            )
        }
        var (chosen, specFile) = try specForOpening(spec, directory: directory)
        switch postQuantum {
        case true?:
            chosen = try BuiltInLab.spec(postQuantum: true)
            specFile = BuiltInLab.postQuantumSpecName
        case false?:
            // The built-in spec alone, said so: the folder's record of a part (or of a spec file) is dropped.
            chosen = try BuiltInLab.spec()
            specFile = BuiltInLab.builtInSpecName
        case nil: break
        }
        let specValue = try chosen ?? Lab.builtInSpec()
        var o = Lab.pkiOptions(directory: directory, seed: seed)
        o.specFile = specFile
        o.regenerateKeys = force
        o.reissue = reissue
        o.rekey = rekey
        if isatty(STDERR_FILENO) == 1 {
            o.progress = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
        }
        let pki = try Lab.pki(spec: specValue, options: o)
        announceReplacedKeys(pki)
        return pki
    }
}

/// Runs `body`, turning PKI errors into a clean message and exit code 2 (a setup problem: the spec, the folder).
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as PKIError {
        FileHandle.standardError.write(Data("error: \(e)\n".utf8))
        throw ExitCode(2)
    }
}

extension PKICommand {
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create keys (once) and issue every certificate of the lab PKI.")
        @OptionGroup var options: PKIOptionsGroup
        @Flag(help: "Replace every key (all pins change) and re-issue everything.") var force = false
        @Flag(help: "Re-issue every certificate even if the kept ones are fresh.") var reissue = false

        func run() async throws {
            let start = Date()
            let pki = try reportingErrors { try options.open(force: force, reissue: reissue) }
            let ms = Int(Date().timeIntervalSince(start) * 1000)
            let keys =
                pki.refresh.generatedKeys.isEmpty
                ? "keys kept" : "\(pki.refresh.generatedKeys.count) keys created"
            let certs = pki.refresh.reissued ? "certificates issued (\(pki.refresh.reason))" : pki.refresh.reason
            print("PKI in \(pki.directory.path): \(pki.identities.count) identities, \(keys), \(certs) in \(ms) ms.")
            if !pki.refresh.repaired.isEmpty {
                print("Repaired \(pki.refresh.repaired.count) damaged or missing item(s):")
                for line in pki.refresh.repaired { print("  \(line)") }
            }
            // A spec of one's own (--spec) may have no lab-root or leaf-v1: name its own roots and first leaf.
            let roots = pki.identities.filter { $0.role == .root }.map(\.name)
            let anchors = roots.contains("lab-root") ? ["lab-root"] : roots
            if anchors.count == 1 {
                print("Trust file: \(pki.files(for: anchors[0]).certificatePEM.path)")
                if anchors == ["lab-root"], pki["pq-root"] != nil {
                    print("Post-quantum trust file (ML-DSA-65): \(pki.files(for: "pq-root").certificatePEM.path)")
                }
            } else if !anchors.isEmpty {
                print(
                    "Roots: \(anchors.joined(separator: ", ")) (each one's cert.pem is in \(pki.directory.appendingPathComponent("certs").path)/NAME/)"
                )
            }
            if !pki.ctLogs.isEmpty {
                print(
                    "CT log lists: \(pki.ctLogListFile.path) (log list v3), \(pki.ctLogOpenSSLFile.path) (openssl -ctlogfile)"
                )
            }
            let ech = try reportingErrors { try pki.echConfiguration() }
            print(
                "ECH config list: \(pki.echFiles.configListBase64.path) (public name \(ech.publicName); {ech.config})")
            warnSeededCAs(pki)
            if let leaf = pki["leaf-v1"]?.name ?? pki.identities.first(where: { $0.role == .leaf })?.name {
                print("Next: pinlab pki list · pinlab pki show \(leaf) · pinlab pki pins \(leaf) --format curl")
            } else {
                print("Next: pinlab pki list")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every identity with its issuer, key, validity and SPKI pin.")
        @OptionGroup var options: PKIOptionsGroup
        @Option(help: "text or json.") var format: String = "text"

        func run() async throws {
            let pki = try reportingErrors { try options.open() }
            switch format {
            case "json": print(listJSON(pki))
            case "text":
                var rows = [["NAME", "ROLE", "ISSUER", "KEY", "VALIDITY", "SPKI SHA-256"]]
                for id in pki.identities {
                    rows.append([
                        id.name, id.role.rawValue, id.isSelfSigned ? "(self)" : id.issuerName,
                        "\(id.keyName) \(id.keyType.displayName)", validityText(id), id.pins.spkiBase64,
                    ])
                }
                print(table(rows), terminator: "")
            default: throw ValidationError("--format must be text or json, not '\(format)'")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show one identity: names, validity, key, chain, every pin, files.")
        @OptionGroup var options: PKIOptionsGroup
        @Argument(help: "The identity, e.g. leaf-v1.") var name: String

        func run() async throws {
            let pki = try reportingErrors { try options.open() }
            let id = try reportingErrors {
                name == LabPKI.scopedProxyRootName ? try pki.certificateAuthority(name) : try pki.identity(name)
            }
            let spec = pki.spec.entity(name)
            let f = pki.files(for: name)
            var facts = [
                ("role", "\(id.role)\(spec?.pathLength.map { " (path length \($0))" } ?? "")"),
                ("subject", id.subject),
                ("issuer", "\(id.issuer)\(id.isSelfSigned ? " (self-signed)" : " — \(id.issuerName)")"),
                ("serial", id.serialHex),
                ("validity", "\(iso(id.notBefore)) → \(iso(id.notAfter))  [\(validityText(id))]"),
                (
                    "key",
                    "\(id.keyName), \(id.keyType.displayName), \(pki.isSeeded(id) ? "derived from a seed" : "random")"
                ),
            ]
            if id.role.isCA, let reach = try? id.reach() {
                facts.append(("reach", reach.summary))
                if id.role == .root, let w = reach.warning(name: id.name) {
                    FileHandle.standardError.write(Data("warning: \(w)\n".utf8))
                }
            }
            if !id.hosts.isEmpty { facts.append(("hosts", id.hosts.joined(separator: ", "))) }
            if let s = spec {
                if !s.usages.isEmpty { facts.append(("usages", s.usages.map(\.rawValue).joined(separator: ", "))) }
                if let sig = s.signature { facts.append(("signature", "\(sig)")) }
                if let t = s.twinOf { facts.append(("twin of", "\(t) (same subject and key identifier, another key)")) }
            }
            facts.append(("chain", ([id.name] + pki.issuers(of: id).map(\.name)).joined(separator: " ← ")))
            for (i, sct) in pki.timestampSummaries(of: id).enumerated() {
                facts.append((i == 0 ? "SCTs" : "", "\(sct)"))
            }
            let p12 = id.role == .leaf || id.role == .client ? ",identity.p12" : ""
            print(
                """
                \(id.name) — \(spec?.summary ?? id.role.rawValue)
                \(facts.map { "  \($0.0.padding(toLength: 11, withPad: " ", startingAt: 0))\($0.1)\n" }.joined())\
                  pins
                    SPKI SHA-256         \(id.pins.spkiBase64)
                                         \(id.pins.spkiHex)
                    OkHttp               \(PinFormat.okhttpPin(id.pins.spkiBase64))
                    curl                 \(PinFormat.curlPin(id.pins.spkiBase64))
                    certificate SHA-256  \(id.pins.certificateBase64)
                    bare key SHA-256     \(id.pins.rawKeyBase64)  (SecKeyCopyExternalRepresentation: not an SPKI pin)
                  files      \(f.folder.path)/{cert.pem,cert.cer,chain.pem,fullchain.pem,root.pem,key.pem\(p12),pins.json}
                """)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write one identity's certificate, chain, key or PKCS#12, or the lab's ECHConfigList (--ech).",
            discussion: """
                --ech writes the lab's Encrypted Client Hello configuration list (public name \
                \(ECHConfiguration.labPublicName), X25519), kept in the PKI folder's ech/: --format base64 (the \
                default, one line) or binary.
                """)
        @OptionGroup var options: PKIOptionsGroup
        @Argument(help: "The identity, e.g. leaf-v1 (not with --ech).") var name: String?
        @Option(help: "pem | der | chain | fullchain | root | key | p12; with --ech: base64 | binary")
        var format: String?
        @Flag(help: "Write the lab's ECHConfigList instead of an identity.") var ech = false
        @Option(help: "PKCS#12 password (default: the lab's, 'pinninglab').") var password: String?
        @Option(help: "Write here instead of standard output.") var out: String?
        @Flag(
            help:
                "Allow --format key or p12 of a CA that is not name-constrained (proxy-root, twin-root-a, rogue-root, client-ca …): whoever holds that key can impersonate ANY site to a device that trusts the CA."
        )
        var allowUnconstrainedKey = false

        func validate() throws {
            if ech {
                if let name { throw ValidationError("--ech writes the ECHConfigList, not an identity: drop '\(name)'") }
                guard ["base64", "binary"].contains(format ?? "base64") else {
                    throw ValidationError("with --ech, --format must be base64 or binary, not '\(format ?? "")'")
                }
                return
            }
            guard name != nil else { throw ValidationError("name an identity (e.g. leaf-v1), or give --ech") }
            guard IdentityExportFormat(parsing: format ?? "pem") != nil else {
                throw ValidationError(
                    "--format must be pem, der, chain, fullchain, root, key or p12, not '\(format ?? "")'")
            }
        }

        /// `--ech`: the list in base64 (one line) or binary, as the PKI folder's `ech/` files hold it.
        func exportECH() throws {
            let pki = try reportingErrors { try options.open() }
            let list = try reportingErrors { try pki.echConfiguration() }
            let binary = format == "binary"
            let bytes = binary ? list.configList : Array((list.configListBase64 + "\n").utf8)
            if let out {
                writeOutputFile(bytes, to: out, option: "--out", mode: 0o644)
                FileHandle.standardError.write(Data("wrote \(out) (\(bytes.count) bytes)\n".utf8))
            } else {
                if binary && isatty(STDOUT_FILENO) == 1 {
                    throw ValidationError("--format binary is binary: add --out FILE or redirect standard output")
                }
                FileHandle.standardOutput.write(Data(bytes))
            }
        }

        func run() async throws {
            if ech { return try exportECH() }
            let name = self.name ?? ""
            let format = self.format ?? "pem"
            let pki = try reportingErrors { try options.open() }
            let id = try reportingErrors { try pki.identity(name) }
            guard let exportFormat = IdentityExportFormat(parsing: format) else {
                throw ValidationError("--format must be pem, der, chain, fullchain, root, key or p12, not '\(format)'")
            }
            // The private key of a CA without name constraints mints a certificate for any site: never by accident.
            if exportFormat.isSecret, let ca = unconstrainedCA(sharingKeyWith: id, in: pki) {
                let who = ca == id.name ? ca : "\(ca) (whose key \(id.name) shares: \(id.keyName))"
                guard allowUnconstrainedKey else {
                    FileHandle.standardError.write(
                        Data(
                            """
                            error: --format \(format) hands out the private key of \(who), a CA that is NOT name-constrained: \
                            whoever holds it can impersonate ANY site to a device that trusts \(ca). Refused. Fix: export \
                            its certificate (--format pem), or add --allow-unconstrained-key if you mean to take its key out \
                            of \(pki.directory.path) (`pinlab pki proxy-root --rekey` replaces proxy-root's key afterwards).

                            """.utf8))
                    throw ExitCode(2)
                }
                FileHandle.standardError.write(
                    Data(
                        """
                        warning: this is the private key of \(who), a CA that is NOT name-constrained: whoever holds it \
                        can impersonate ANY site to a device that trusts \(ca). Keep it off shared disks and chats; \
                        remove it when done.

                        """.utf8))
            }
            // A trust file (the certificate of a root, or a chain ending with its root) is what gets installed.
            let installs =
                exportFormat == .root || exportFormat == .fullchain
                || (id.role == .root && (exportFormat == .pem || exportFormat == .der))
            if installs, let root = pki[id.rootName] {
                try reportingErrors { try pki.checkInstallable(root) }
                if let reach = try? root.reach(), !reach.isConstrained, let w = reach.warning(name: root.name) {
                    FileHandle.standardError.write(Data("warning: \(w)\n".utf8))
                }
            }
            let bytes = try reportingErrors { try pki.export(id, as: exportFormat, password: password) }
            let binary = exportFormat.isBinary
            if let out {
                writeOutputFile(Array(bytes), to: out, option: "--out", mode: exportFormat.isSecret ? 0o600 : 0o644)
                FileHandle.standardError.write(Data("wrote \(out) (\(bytes.count) bytes)\n".utf8))
            } else {
                if binary && isatty(STDOUT_FILENO) == 1 {
                    throw ValidationError("--format \(format) is binary: add --out FILE or redirect standard output")
                }
                FileHandle.standardOutput.write(Data(bytes))
            }
        }
    }

    struct Pins: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print SPKI pins of identities in a tool's format.",
            discussion: "Without names: leaf-v1 (key K1) and leaf-v3-rekey (backup key K2), the pin set an app ships.")
        @OptionGroup var options: PKIOptionsGroup
        @Argument(help: "Identities whose pins to print.") var names: [String] = []
        @Option(help: "okhttp | curl | trustkit | nsc | hpkp | json") var format: String = "json"

        func run() async throws {
            let f = PinFormat(rawValue: format)
            guard PinFormat.all.contains(f) else {
                throw ValidationError(
                    "--format must be one of \(PinFormat.all.map(\.rawValue).joined(separator: ", ")), not '\(format)'")
            }
            let pki = try reportingErrors { try options.open() }
            let ids = try reportingErrors {
                try (names.isEmpty ? ["leaf-v1", "leaf-v3-rekey"] : names).map { try pki.identity($0) }
            }
            if f == .trustkit {
                // TrustKit rebuilds the SPKI from a table of key types: a pin of any other key never matches.
                let table = PinningLibraryKeyTypes.trustKit
                for id in ids {
                    guard let l = table.limitation(id.keyType) else { continue }
                    FileHandle.standardError.write(
                        Data(
                            "warning: the pin of \(id.name) (key \(id.keyName), \(id.keyType.displayName)) can never match\(l.everyRelease ? "" : " on those releases"): \(l.text) (\(table.shortSource)).\n"
                                .utf8))
                }
            }
            print(f.render(ids), terminator: "")
        }
    }
}

extension PKICommand {
    struct ProxyRoot: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "proxy-root",
            abstract: "Show, re-key or scope the interception proxy's root.",
            discussion: """
                proxy-root is NOT name-constrained: a device that trusts it accepts a certificate for ANY site from \
                whoever holds its key. It is valid for 7 days (re-issued daily with the same key); --rekey gives it \
                a new random key and re-issues everything it signs (devices that trusted the old one no longer do).

                --scope issues proxy-root-scoped instead: a root with its own random key whose certificate is \
                name-constrained (RFC 5280 permitted dNSName subtrees) to the hosts listed, so installing it exposes \
                only them. A name permits itself and its subdomains: 'api.example.com' covers api.example.com and \
                v2.api.example.com. '**.example.com' becomes example.com (the domain and every subdomain); \
                '*.example.com' cannot be said exactly and is widened to example.com too. Every IP address is \
                excluded unless the scope lists addresses. Use it with `pinlab intercept --proxy-root \
                proxy-root-scoped`. The JDK (Java/Kotlin on a JVM) ignores a trust anchor's name constraints: \
                there even the scoped root vouches for any site.

                Examples:
                  pinlab pki proxy-root --rekey
                  pinlab pki proxy-root --scope 'api.example.com,**.example.com'
                """)
        @OptionGroup var options: PKIOptionsGroup
        @Flag(help: "Replace proxy-root's key with a new random one and re-issue what it signs.") var rekey = false
        @Option(
            help:
                "Issue proxy-root-scoped, name-constrained to these hosts (comma-separated: api.example.com, **.example.com, *.example.com, an IP address)."
        )
        var scope: String?

        func run() async throws {
            let pki = try reportingErrors { try options.open(rekey: rekey ? ["proxy-root"] : []) }
            var shown: [Identity] = []
            if let proxy = pki["proxy-root"] { shown.append(proxy) }
            if let scope {
                let parsed = try reportingErrors { try ProxyScope(parsing: scope) }
                for note in parsed.notes { FileHandle.standardError.write(Data("note: \(note)\n".utf8)) }
                shown.append(try reportingErrors { try pki.issueScopedProxyRoot(parsed) })
            } else if let scoped = try reportingErrors({ try pki.scopedProxyRoot() }) {
                shown.append(scoped)
            }
            if rekey { print("proxy-root: new random key; every certificate re-issued (\(pki.refresh.reason)).") }
            for id in shown {
                let reach = try reportingErrors { try id.reach() }
                print(
                    """
                    \(id.name): \(reach.summary)
                      key        \(pki.isSeeded(id) ? "derived from a seed (run --rekey)" : "random"), \(pki.keyFile(id.keyName).path)
                      validity   \(iso(id.notBefore)) → \(iso(id.notAfter))  [\(validityText(id))]
                      SPKI       \(id.pins.spkiBase64)
                      trust file \(pki.files(for: id.name).certificatePEM.path)
                    """)
                if let w = reach.warning(name: id.name) { FileHandle.standardError.write(Data("warning: \(w)\n".utf8)) }
            }
        }
    }
}

/// The first CA that uses `identity`'s key (itself, or another entity sharing its key) and whose certificate, with
/// its issuers', carries no name constraint: its key can sign a certificate for any site. Nil when there is none.
func unconstrainedCA(sharingKeyWith identity: Identity, in pki: LabPKI) -> String? {
    let sharing = [identity] + pki.identities.filter { $0.keyName == identity.keyName && $0.name != identity.name }
    for id in sharing where id.role.isCA {
        guard let reach = try? id.reach() else { return id.name }  // unreadable: assume the worst
        if reach.isCA && !reach.isConstrained { return id.name }
    }
    return nil
}

/// Warns about CA keys an earlier PinningLab derived from a seed (this one never does).
func warnSeededCAs(_ pki: LabPKI) {
    let seeded = pki.identities.filter { $0.role.isCA && pki.isSeeded($0) }.map(\.name)
    guard !seeded.isEmpty else { return }
    FileHandle.standardError.write(
        Data(
            """
            warning: the keys of \(seeded.joined(separator: ", ")) were derived from a seed by an earlier PinningLab: \
            whoever knows the seed can mint certificates they vouch for. Run `pinlab pki init --force` for new random keys \
            (every pin changes); unconstrained roots among them are refused by every export until then.

            """.utf8))
}

// MARK: - Text helpers

func iso(_ d: Date) -> String {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime]
    return f.string(from: d)
}

func validityText(_ id: Identity, now: Date = Date()) -> String {
    func span(_ t: TimeInterval) -> String {
        let a = abs(t)
        if a >= 86400 * 2 { return "\(Int(a / 86400))d" }
        if a >= 3600 * 2 { return "\(Int(a / 3600))h" }
        return "\(Int(a / 60))m"
    }
    if now < id.notBefore { return "not yet valid (in \(span(id.notBefore.timeIntervalSince(now))))" }
    if now > id.notAfter { return "expired (\(span(now.timeIntervalSince(id.notAfter))) ago)" }
    return "valid (\(span(id.notAfter.timeIntervalSince(now))) left)"
}

func table(_ rows: [[String]]) -> String {
    guard let first = rows.first else { return "" }
    var widths = [Int](repeating: 0, count: first.count)
    for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
    return rows.map { r in
        r.enumerated().map { i, c in i == r.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
        }
        .joined(separator: "  ")
    }.joined(separator: "\n") + "\n"
}

func listJSON(_ pki: LabPKI) -> String {
    struct Row: Encodable {
        var name, role, issuer, key, keyType, subject, notBefore, notAfter, validity: String
        var hosts: [String]
        var spkiSHA256, certificateSHA256, rawKeySHA256: String
        var files: [String: String]
    }
    let rows = pki.identities.map { id -> Row in
        let f = pki.files(for: id.name)
        var files = [
            "certificatePEM": f.certificatePEM.path, "certificateDER": f.certificateDER.path,
            "chainPEM": f.chainPEM.path, "fullChainPEM": f.fullChainPEM.path, "rootPEM": f.rootPEM.path,
            "keyPEM": f.keyPEM.path, "pins": f.pinsJSON.path,
        ]
        if id.role == .leaf || id.role == .client { files["pkcs12"] = f.pkcs12.path }
        return Row(
            name: id.name, role: id.role.rawValue, issuer: id.issuerName, key: id.keyName,
            keyType: id.keyType.rawValue, subject: id.subject, notBefore: iso(id.notBefore),
            notAfter: iso(id.notAfter), validity: validityText(id), hosts: id.hosts,
            spkiSHA256: id.pins.spkiBase64, certificateSHA256: id.pins.certificateBase64,
            rawKeySHA256: id.pins.rawKeyBase64, files: files)
    }
    return (try? JSONOutput.string(rows)) ?? ""
}
