import ArgumentParser
import Foundation
import PinningLab
import PinningLabExports
import PinningLabPKI

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write pins and trust anchors in the form a pinning library or a device takes.",
        discussion: """
            Formats: \(ExportFormat.all.map(\.rawValue).joined(separator: ", ")).
            Pins come from a scenario and a pin profile (--scenario baseline --profile leaf-spki+backup), or from \
            identities named on the command line (default: leaf-v1 and its backup key's leaf-v3-rekey). TrustKit \
            refuses a single pin: a single-pin profile gets the backup key K2 added, and the file says so.
            With --out DIR (an existing folder or a path ending in /) the main file and the material it refers to \
            (.cer files, raw resources, trust files, README) are written there; otherwise the main file goes to \
            --out FILE or standard output.

            With --from pins.json the pins come from PinningLab's pin-set source instead (one JSON document: domains, \
            pins with roles current/backup, expiration, subdomains; `pinlab export pins-json` writes one); every format \
            that takes hashes renders from it, with the system's trust anchors (alamofire and mobileconfig need \
            certificates and refuse it). A document with several domains needs --host to choose one.

            Examples:
              pinlab export pins-json --scenario baseline --profile leaf-spki+backup --out pins.json
              pinlab export nspinneddomains --from pins.json
              pinlab export okhttp-java --scenario baseline --profile leaf-spki+backup
              pinlab export alamofire --out App/Pinning/
              pinlab export mobileconfig --include-proxy-root --out profile/
              pinlab export mobileconfig --include-proxy-root --proxy-root proxy-root-scoped --out profile/
              pinlab export farm --out farm/        (a device farm's certificate upload: .cer, .pfx + password, .mobileconfig)
              pinlab export ech --out ech/          (the lab's ECHConfigList: echconfig.b64 and the binary echconfig.list)

            Every root's reach is read from its certificate; an export carrying a root that is not \
            name-constrained (proxy-root) warns on standard error and in the text, and a root whose key came from \
            a seed without name constraints is refused (SECURITY.md).
            """)

    @OptionGroup var pki: PKIOptionsGroup

    @OptionGroup var source: CatalogueSource

    @Argument(help: "The format: \(ExportFormat.all.map(\.rawValue).joined(separator: " | ")).")
    var format: String

    @Argument(help: "Identities whose keys to pin (default: leaf-v1 leaf-v3-rekey). Not with --scenario.")
    var names: [String] = []

    @Option(help: "Take the pins of this scenario's client (see `pinlab scenarios list`).")
    var scenario: String?

    @Option(
        help:
            "The pin profile with --scenario: none, leaf-cert, leaf-spki, leaf-spki+backup, intermediate-spki, root-spki."
    )
    var profile: String?

    @Option(help: "The host the pins apply to (with --from: the domain of pins.json to export).")
    var host: String?

    @Option(help: "Read the pins from this pins.json (see `pinlab export pins-json`) instead of the lab PKI.")
    var from: String?

    @Flag(name: .customLong("include-subdomains"), help: "Apply the pins to subdomains of --host too.")
    var includeSubdomains = false

    @Option(
        help:
            "The Android pin-set expiration, YYYY-MM-DD: on and after it Android stops enforcing the pins, so make it the app's release horizon (default: --pin-horizon days from today)."
    )
    var expiration: String?

    @Option(
        name: .customLong("pin-horizon"),
        help:
            "Android: days from today to the pin-set expiration (1–3650; default \(PinExport.defaultPinHorizonDays); fewer than \(PinExport.shortestSensiblePinHorizonDays) is warned about)."
    )
    var pinHorizon: Int?

    @Option(
        name: .customLong("certificate-transparency"),
        help:
            "nsc: write <certificateTransparency enabled=…> for the domain: on or off (default: leave it out, the platform's default)."
    )
    var certificateTransparency: String?

    @Flag(
        name: .customLong("include-proxy-root"),
        help:
            "mobileconfig: also install the proxy root (the interception lessons). proxy-root is NOT name-constrained: remove it after the session."
    )
    var includeProxyRoot = false

    @Option(
        name: .customLong("proxy-root"),
        help:
            "The root --include-proxy-root installs: proxy-root (unconstrained, the default) or proxy-root-scoped (name-constrained to the hosts of `pinlab pki proxy-root --scope`)."
    )
    var proxyRootName: String = "proxy-root"

    @Option(help: "Write to this file, or to this folder (with the .cer, .pem and README files).")
    var out: String?

    func run() async throws {
        do {
            try export()
        } catch let e as ExportError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(2)
        } catch let e as PinConfigError {
            FileHandle.standardError.write(Data("error: \(e)\n".utf8))
            throw ExitCode(2)
        }
    }

    private func export() throws {
        let f = try ExportFormat.named(format)
        if scenario != nil && !names.isEmpty {
            throw ExportError(
                .badArguments, argument: "NAMES",
                problem: "identities (\(names.joined(separator: " "))) and --scenario both choose the pins.",
                fix: "give either --scenario ID --profile P, or identity names.")
        }
        if profile != nil && scenario == nil {
            throw ExportError(
                .badArguments, argument: "--profile", problem: "a profile is relative to a scenario's client.",
                fix: "add --scenario ID (e.g. --scenario baseline), or name identities instead.")
        }
        let day = try expiration.map(Self.parseDay)
        if expiration != nil && pinHorizon != nil {
            throw ExportError(
                .badArguments, argument: "--pin-horizon",
                problem: "--expiration and --pin-horizon both set the pin-set expiration.",
                fix: "give one: --pin-horizon DAYS (from today) or --expiration YYYY-MM-DD.")
        }
        if let pinHorizon, !(1...3650).contains(pinHorizon) {
            throw ExportError(
                .badArguments, argument: "--pin-horizon", problem: "\(pinHorizon) days is out of range.",
                fix: "give 1 to 3650 days: the time this build of the app will be in use (365 by default).")
        }
        var ct: Bool?
        if let certificateTransparency {
            guard f == .nsc else {
                throw ExportError(
                    .badArguments, argument: "--certificate-transparency",
                    problem:
                        "only the nsc format says whether Certificate Transparency is required, not \(f.rawValue).",
                    fix: "use --format nsc, or drop --certificate-transparency.")
            }
            switch certificateTransparency {
            case "on": ct = true
            case "off": ct = false
            default:
                throw ExportError(
                    .badArguments, argument: "--certificate-transparency",
                    problem: "'\(certificateTransparency)' is neither on nor off.",
                    fix: "write --certificate-transparency on (require SCTs) or off.")
            }
        }
        if f == .farm && outFolder() == nil {
            throw ExportError(
                .badArguments, argument: "--out",
                problem:
                    "the farm bundle is several files, some binary (.cer, .pfx), and cannot go to \(out.map { "the file '\($0)'" } ?? "standard output").",
                fix: "give a folder: --out farm/ (an existing folder, or a path ending in /).")
        }
        var export: PinExport
        if let from {
            if scenario != nil || !names.isEmpty || includeProxyRoot || includeSubdomains {
                throw ExportError(
                    .badArguments, argument: "--from",
                    problem: "pins.json chooses the pins, the host's subdomains and the roots (none) itself.",
                    fix:
                        "drop --scenario, identity names, --include-subdomains and --include-proxy-root, or drop --from."
                )
            }
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: from)) } catch {
                throw PinConfigError(
                    file: from, problem: "cannot be read (\(error.localizedDescription)).",
                    fix: "give the path of a pins.json.")
            }
            export = try PinsDocument.parse(data, file: from).export(host: host, file: from)
            if let day { export.expiration = day }
            if let pinHorizon {
                export.pinHorizonDays = pinHorizon
                export.expiration = nil
            }
            export.certificateTransparency = ct
            if f == .nsc, let w = export.expirationWarning { warn(w) }
            try write(try f.render(export), folder: outFolder())
            return
        }
        let host = self.host ?? "localhost"
        let lab = try reportingErrors { try pki.open() }
        if let scenario {
            let s = try source.load().exportScenario(scenario)
            export = try PinExport(
                scenario: s, profile: PinProfile(rawValue: profile ?? "leaf-spki+backup"), in: lab,
                host: host, includeSubdomains: includeSubdomains)
        } else {
            export = try PinExport(identities: names, in: lab, host: host, includeSubdomains: includeSubdomains)
        }
        export.expiration = day
        if let pinHorizon { export.pinHorizonDays = pinHorizon }
        export.certificateTransparency = ct
        if includeProxyRoot {
            let proxy: Identity
            do {
                proxy = try lab.certificateAuthority(proxyRootName)
            } catch let e as PKIError {
                throw ExportError(
                    .unknownIdentity, argument: proxyRootName == "proxy-root" ? "--include-proxy-root" : "--proxy-root",
                    problem: "\(e.reason).", fix: e.fix ?? "use the built-in spec, or drop the flag.")
            }
            guard proxy.role == .root else {
                throw ExportError(
                    .badArguments, argument: "--proxy-root", problem: "'\(proxyRootName)' is not a root.",
                    fix: "use proxy-root or proxy-root-scoped.")
            }
            if !export.deviceRoots.contains(proxy) { export.deviceRoots.append(proxy) }
        }
        if f == .farm {
            export.deviceClientIdentity = try reportingErrors { () throws -> DeviceClientIdentity in
                let name = "client-valid"
                let file = try lab.pkcs12File(for: name)
                let bytes = try Data(contentsOf: file)
                return DeviceClientIdentity(
                    name: name, subject: try lab.identity(name).subject, pkcs12: Array(bytes),
                    password: lab.pkcs12Password)
            }
        }
        if f == .ech { export.echConfiguration = try reportingErrors { try lab.echConfiguration() } }
        // Defence in depth: a root whose key came from a seed and whose certificate has no name constraints is
        // never handed to a device (this PinningLab never seeds a CA key; an older one did).
        for root in export.roots { try reportingErrors { try lab.checkInstallable(root) } }
        for w in export.rootWarnings { warn(w) }
        if f == .trustKitPlist || f == .trustKitSwift { for w in export.trustKitKeyTypeWarnings { warn(w) } }
        if let leaf = export.pins.first?.identity, leaf.role == .leaf, !leaf.hosts.contains(host) {
            warn(
                "\(leaf.name) names \(leaf.hosts.joined(separator: ", ")), not '\(host)': a client connecting to \(host) fails host verification before pinning."
            )
        }
        if f == .nsc, let w = export.expirationWarning { warn(w) }
        let folder = outFolder()
        if f == .curl {
            export.trustFilePath =
                folder.map { $0.appendingPathComponent("trust.pem").path } ?? trustFileOutsideFolder(export, lab: lab)
        }
        var files = try f.render(export)
        if f == .curl && folder == nil { files = Array(files.prefix(1)) }  // the flags name the PKI's own trust file
        try write(files, folder: folder)
    }

    /// `--out` as a folder: an existing directory, or a path ending in `/`.
    private func outFolder() -> URL? {
        guard let out else { return nil }
        var isDir: ObjCBool = false
        if out.hasSuffix("/") || (FileManager.default.fileExists(atPath: out, isDirectory: &isDir) && isDir.boolValue) {
            return URL(fileURLWithPath: out, isDirectory: true).standardizedFileURL
        }
        return nil
    }

    /// The trust file curl should read when no folder is written: the root's own PEM in the PKI, or a bundle
    /// of several roots written next to the PKI.
    private func trustFileOutsideFolder(_ e: PinExport, lab: LabPKI) -> String {
        if e.trustAnchors.count == 1 { return lab.files(for: e.trustAnchors[0].name).certificatePEM.path }
        let url = lab.directory.appendingPathComponent(
            "exports/trust-\(e.trustAnchors.map(\.name).joined(separator: "+")).pem")
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? Data(PEM.encode(e.trustAnchors.map(\.certificateDER)).utf8).write(to: url)
        return url.path
    }

    private func write(_ files: [ExportFile], folder: URL?) throws {
        guard let main = files.first else { return }
        if let folder {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                fail("--out " + writeFailure(folder.path, error))
            }
            for file in files {
                let url = folder.appendingPathComponent(file.name)
                writeOutputFile(Array(file.bytes), to: url.path, option: "--out", mode: file.isSecret ? 0o600 : 0o644)
                FileHandle.standardError.write(Data("wrote \(url.path) (\(file.bytes.count) bytes)\n".utf8))
            }
        } else if let out {
            writeOutputFile(Array(main.bytes), to: out, option: "--out")
            FileHandle.standardError.write(Data("wrote \(out) (\(main.bytes.count) bytes)\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(main.bytes))
        }
        if folder == nil, files.count > 1 {
            let others = files.dropFirst().map(\.name).joined(separator: ", ")
            FileHandle.standardError.write(
                Data("note: \(others) not written; use --out DIR/ to write them next to \(main.name)\n".utf8))
        }
    }

    static func parseDay(_ text: String) throws(ExportError) -> Date {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        guard text.count == 10, let d = f.date(from: text) else {
            throw ExportError(
                .badArguments, argument: "--expiration", problem: "'\(text)' is not a date.",
                fix: "write it YYYY-MM-DD, e.g. 2027-06-30.")
        }
        return d
    }

    private func warn(_ message: String) {
        // The exported files say WARNING: in their comments; on standard error the prefix is said once.
        let text = message.hasPrefix("WARNING: ") ? String(message.dropFirst("WARNING: ".count)) : message
        FileHandle.standardError.write(Data("warning: \(text)\n".utf8))
    }
}
