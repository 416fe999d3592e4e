public import Foundation
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `pinlab audit FILE…`: reads the pin configurations apps ship — Android's network_security_config.xml, an
/// Info.plist with TrustKit's `TSKConfiguration` or Apple's `NSPinnedDomains`, a TrustKit Swift dictionary literal,
/// an OkHttp `CertificatePinner` (`.add("host", "sha256/…")`) and PinningLab's pins.json — and reports what will
/// hurt: expired or soon-expiring pin sets, a single pin, a backup equal to the current pin, pins that match nothing
/// in a given chain, pin overrides that reach release builds, cleartext, scopes that leave subdomains unpinned.
public enum PinAudit {
    /// Audits `files`. A file that cannot be read, or that is malformed, is an error naming it (and the line).
    public static func run(files: [String], options: AuditOptions) throws(PinConfigError) -> AuditReport {
        var summaries: [AuditReport.FileSummary] = []
        var findings: [AuditFinding] = []
        var read: [AuditedFile] = []
        for file in files {
            let audited = try Self.read(file)
            read.append(audited)
            summaries.append(.init(file: file, kind: audited.kind, domains: audited.domains.map(\.host)))
            findings += audited.findings
            findings += checks(audited, options: options)
        }
        // Certificate transparency switched off matters by the app's targetSdk, which another file of the run declares.
        findings += AndroidSDKAudit.ctFindings(read)
        return AuditReport(files: summaries, findings: findings)
    }

    /// The pin sets a configuration file declares, per host, as base64 SHA-256 hashes (`pinlab timeline --pins`).
    public static func pinSets(in file: String) throws(PinConfigError) -> [(host: String, pins: [String])] {
        try read(file).domains.map { ($0.host, $0.pins.map(\.sha256)) }
    }

    /// The largest configuration file read (an XML one: ``XMLElementNode/maxBytes``). Configurations are a few KB;
    /// generated OkHttp or Swift sources of tens of MB still fit.
    static let maxFileBytes = 64 * 1024 * 1024

    static func read(_ file: String) throws(PinConfigError) -> AuditedFile {
        let data: Data
        switch readRegularFile(file, limit: maxFileBytes) {
        case .success(let d): data = d
        case .failure(let problem):
            throw PinConfigError(
                file: file, problem: problem.description + ".",
                fix: problem.isTooLarge
                    ? "give the configuration file itself, or a copy with only the pinning part."
                    : "give the path of a configuration file (network_security_config.xml, Info.plist, a .swift, .kt or .java source, pins.json)."
            )
        }
        let ext = URL(fileURLWithPath: file).pathExtension.lowercased()
        if data.starts(with: Array("bplist".utf8)) {
            throw PinConfigError(
                file: file,
                problem: "a binary property list; pinlab audit reads XML property lists (with their lines).",
                fix: "convert a copy: plutil -convert xml1 -o Info.xml.plist \(file)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let start = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        if AndroidSDKAudit.isGradle(file) { return AndroidSDKAudit.readGradle(text, file: file) }
        if ext == "json" || start.hasPrefix("{") { return try PinsJSONReader.read(data, text: text, file: file) }
        if ext == "xml" || ext == "plist" || start.hasPrefix("<") {
            let root = try XMLElementNode.parse(data, file: file)
            switch root.name {
            case "network-security-config": return try NSCReader.read(root, file: file)
            case "plist": return try PlistReader.read(root, file: file)
            case "manifest": return try AndroidSDKAudit.readManifest(root, file: file)
            default:
                throw PinConfigError(
                    file: file, line: root.line,
                    problem:
                        "the root element is <\(root.name)>: neither <network-security-config>, <plist> nor <manifest>.",
                    fix: "give Android's res/xml/network_security_config.xml, its AndroidManifest.xml or an Info.plist."
                )
            }
        }
        if let f = try CrossPlatformAudit.read(text, ext: ext, file: file) { return f }
        if ext == "swift" || text.contains("kTSKPinnedDomains") {
            return try TrustKitSwiftReader.read(text, file: file)
        }
        if ["kt", "java", "kts"].contains(ext) || text.contains(".add(") {
            return try OkHttpReader.read(text, file: file)
        }
        throw PinConfigError(
            file: file, problem: "not a pin configuration pinlab audit reads.",
            fix: "give a network_security_config.xml, an Info.plist (TrustKit or NSPinnedDomains), a TrustKit Swift "
                + "configuration (.swift), an OkHttp CertificatePinner (.kt/.java) or a pins.json.")
    }

    /// Why a path cannot be read as a file: in words, for messages (`FILE: is a directory`).
    public enum FileProblem: Error, CustomStringConvertible, Sendable {
        case cannotOpen(String)
        case directory
        case notRegular(String)
        case tooLarge(size: Int, limit: Int)
        case readFailed(String)

        public var description: String {
            switch self {
            case .cannotOpen(let reason): return "cannot be read (\(reason))"
            case .directory: return "is a directory"
            case .notRegular(let kind): return "is not a regular file (\(kind))"
            case .tooLarge(let size, let limit):
                return
                    "is \(XMLElementNode.megabytes(size)), larger than the \(XMLElementNode.megabytes(limit)) pinlab reads here"
            case .readFailed(let reason): return "cannot be read (\(reason))"
            }
        }
        public var isTooLarge: Bool { if case .tooLarge = self { return true } else { return false } }
    }

    /// The bytes of `path` if it is a regular file of at most `limit` bytes. The file is opened without waiting
    /// (a FIFO never blocks) and checked with fstat before any read: a directory, a FIFO or a device is refused in
    /// words, not with the system's "permission" or "error 256".
    public static func readRegularFile(_ path: String, limit: Int) -> Result<Data, FileProblem> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == EISDIR { return .failure(.directory) }
            return .failure(.cannotOpen(String(cString: strerror(code))))
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.readFailed(String(cString: strerror(errno)))) }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .failure(.directory)
        case S_IFIFO: return .failure(.notRegular("a FIFO"))
        case S_IFCHR: return .failure(.notRegular("a character device"))
        case S_IFBLK: return .failure(.notRegular("a block device"))
        case S_IFSOCK: return .failure(.notRegular("a socket"))
        default: return .failure(.notRegular("not a file"))
        }
        guard Int(st.st_size) <= limit else { return .failure(.tooLarge(size: Int(st.st_size), limit: limit)) }
        do {
            // One byte more than the limit: a file that grew since fstat is still refused.
            let data = try handle.read(upToCount: limit + 1) ?? Data()
            guard data.count <= limit else { return .failure(.tooLarge(size: data.count, limit: limit)) }
            return .success(data)
        } catch {
            return .failure(.readFailed(error.localizedDescription))
        }
    }

    // MARK: - Checks every format shares

    static func checks(_ f: AuditedFile, options: AuditOptions) -> [AuditFinding] {
        var out: [AuditFinding] = []
        let calendar = Calendar(identifier: .gregorian)
        for d in f.domains where !d.pins.isEmpty {
            func finding(
                _ id: String, _ severity: AuditSeverity, line: Int? = d.line, keyPath: String? = d.keyPath,
                mastg: String?, note: String, message: String, fix: String
            ) -> AuditFinding {
                AuditFinding(
                    id: id, severity: severity, file: f.file, line: line, keyPath: keyPath, domain: d.host,
                    mastg: mastg,
                    mastgNote: note, message: message, fix: fix)
            }
            // Expiration.
            if let exp = d.expiration {
                var utc = calendar
                utc.timeZone = TimeZone(identifier: "UTC")!
                let days = utc.dateComponents([.day], from: utc.startOfDay(for: options.now), to: exp).day ?? 0
                let text = d.expirationText ?? NSCExport.day(exp)
                if days <= 0 {
                    out.append(
                        finding(
                            AuditCheck.expiredPinSet, .high, line: d.expirationLine ?? d.line,
                            keyPath: d.expirationKeyPath ?? d.keyPath,
                            mastg: d.platform == .android ? "MASTG-TEST-0243" : nil,
                            note: d.platform.expiredNote,
                            message: "the pin set expired on \(text): from that day the pins are not enforced, and any "
                                + "certificate the trust anchors accept is taken — an interception proxy's too.",
                            fix:
                                "set the expiration past the last day this build will be in use (e.g. a year after release), "
                                + "after checking the pins still match the server: pinlab export nsc --pin-horizon 365."
                        ))
                } else if days < options.soonDays {
                    out.append(
                        finding(
                            AuditCheck.pinSetExpiresSoon, .medium, line: d.expirationLine ?? d.line,
                            keyPath: d.expirationKeyPath ?? d.keyPath,
                            mastg: nil,
                            note:
                                "no MASTG test: MASTG-TEST-0243 fails only an expiration in the past; this warns \(options.soonDays) days ahead.",
                            message:
                                "the pin set expires on \(text), in \(days) day\(days == 1 ? "" : "s"): devices running this "
                                + "build stop enforcing the pins then.",
                            fix: "ship a build whose pin set expires past its own release horizon before \(text)."))
                }
            }
            // Backups.
            var seen: [String: AuditedPin] = [:]
            var duplicate: (AuditedPin, AuditedPin)?
            for p in d.pins {
                if let first = seen[p.sha256] { duplicate = duplicate ?? (first, p) } else { seen[p.sha256] = p }
            }
            let countNote =
                "no MASTG test counts pins: MASTG-TEST-0022 (Android) and MASTG-TEST-0068 (iOS) cover pinning as a whole."
            if let (first, again) = duplicate {
                out.append(
                    finding(
                        AuditCheck.backupEqualsCurrent, .high, line: again.line ?? d.line,
                        keyPath: again.keyPath ?? d.keyPath,
                        mastg: nil, note: countNote,
                        message:
                            "the pin \(again.sha256) is listed twice (\(first.role ?? "first") and \(again.role ?? "again")): "
                            + "the backup is the current key, so a key change leaves no pin that matches.",
                        fix:
                            "replace the duplicate with the SPKI hash of a backup key held offline (or of the CA that issues your "
                            + "certificates): pinlab export pins-json shows a set with a backup."))
            } else if seen.count == 1 {
                out.append(
                    finding(
                        AuditCheck.singlePin, .high, mastg: nil, note: countNote,
                        message:
                            "one pin and no backup: when the server's key changes (renewal with a new key, a CA move) every "
                            + "installed build refuses the server until users update.",
                        fix: "add a backup pin: the SPKI hash of a spare key kept offline, or of the issuing CA "
                            + "(TrustKit refuses fewer than two pins for the same reason)."))
            }
            // Against a chain.
            if let chain = options.chainPins, !d.pins.contains(where: { chain.contains($0.sha256) }) {
                out.append(
                    finding(
                        AuditCheck.pinsMatchNothing, .high, mastg: nil,
                        note: "no static MASTG test; MASTG-TEST-0244 sees the resulting failure at run time.",
                        message: "none of the \(seen.count) pin\(seen.count == 1 ? "" : "s") matches a certificate of "
                            + "\(options.chainFile ?? "the chain") (\(chain.count) certificate\(chain.count == 1 ? "" : "s")): "
                            + "a client with this configuration refuses that server.",
                        fix:
                            "pin a key the chain carries (pinlab pki pins NAME, or openssl x509 -pubkey … | openssl dgst -sha256 "
                            + "-binary | base64 on each certificate), and keep the others as backups."))
            }
            // Key types: a TrustKit pin of a lab key TrustKit cannot hash never matches.
            if usesTrustKit(f, d) {
                let table = PinningLibraryKeyTypes.trustKit
                for p in d.pins {
                    guard let key = options.labKeys[p.sha256], let l = table.limitation(key.keyType) else { continue }
                    let shown =
                        key.identities.prefix(3).joined(separator: ", ") + (key.identities.count > 3 ? ", …" : "")
                    out.append(
                        finding(
                            AuditCheck.keyTypeUnhashable, l.everyRelease ? .high : .medium, line: p.line ?? d.line,
                            keyPath: p.keyPath ?? d.keyPath, mastg: nil,
                            note:
                                "no MASTG test checks a pinned key's type against the library; MASTG-TEST-0068 covers iOS pinning as a whole.",
                            message:
                                "the pin \(p.sha256) is the lab key \(key.keyName) (\(key.keyType.displayName); \(shown)), "
                                + "and \(l.text)\(f.kind == "react-native-ssl-public-key-pinning" ? " (on iOS this library pins through TrustKit)" : ""): "
                                + "a server presenting that key is refused \(l.everyRelease ? "by every TrustKit release" : "by those releases") "
                                + "unless a CA above it is pinned too "
                                + "(\(table.shortSource)).",
                            fix: l.everyRelease
                                ? "pin a key TrustKit hashes (RSA-2048/3072/4096, P-256, P-384) for this host, or verify "
                                    + "that key with a pinning check of your own (SecCertificateCopyKey and the certificate's "
                                    + "SPKI) instead of TrustKit."
                                : "require TrustKit 3.0.5 or later, or pin an RSA-2048/4096 or EC key."))
                }
            }
            // Scope: an apex pinned without its subdomains.
            if d.includeSubdomains == false, d.platform != .okhttp, isApex(d.host) {
                out.append(
                    finding(
                        AuditCheck.subdomainsUnpinned, .low, mastg: d.platform.scopeMASTG, note: d.platform.scopeNote,
                        message:
                            "\(d.host) is pinned without its subdomains: api.\(d.host), www.\(d.host) … fall back to the "
                            + "default trust (no pins).",
                        fix: d.platform.includeSubdomainsFix))
            }
        }
        return out
    }

    /// Whether the pins of `d` are checked by TrustKit: TrustKit's Info.plist keys or Swift literal, or a
    /// cross-platform library whose iOS side is TrustKit (react-native-ssl-public-key-pinning).
    static func usesTrustKit(_ f: AuditedFile, _ d: AuditedDomain) -> Bool {
        switch f.kind {
        case "trustkit-swift", "react-native-ssl-public-key-pinning": return true
        case "info-plist": return d.keyPath?.hasPrefix("TSKConfiguration") == true
        default: return false
        }
    }

    /// A registrable-looking name of two labels (example.com): its subdomains are where the traffic usually goes.
    static func isApex(_ host: String) -> Bool {
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count == 2 && labels.allSatisfy { !$0.isEmpty } && !host.allSatisfy { $0.isNumber || $0 == "." }
    }
}

// MARK: - What the readers produce

enum AuditPlatform: Sendable {
    case android, ios, okhttp, pinsJSON

    var expiredNote: String {
        switch self {
        case .android:
            return "MASTG-TEST-0243 (Expired Certificate Pins in the Network Security Configuration) fails it."
        case .ios:
            return
                "no MASTG test checks TrustKit's TSKExpirationDate; MASTG-TEST-0243 is the same check for Android's NSC."
        case .okhttp: return "OkHttp pins do not expire; no MASTG test applies."
        case .pinsJSON:
            return
                "pins.json is PinningLab's source; MASTG-TEST-0243 fails the network security config rendered from it."
        }
    }
    var scopeMASTG: String? {
        switch self {
        case .android: return "MASTG-TEST-0242"
        case .ios: return "MASTG-TEST-0068"
        case .okhttp: return "MASTG-TEST-0022"
        case .pinsJSON: return nil
        }
    }
    var scopeNote: String {
        switch self {
        case .android:
            return
                "MASTG-TEST-0242 (Missing Certificate Pinning in Network Security Configuration) fails a relevant domain without pins."
        case .ios:
            return
                "MASTG-TEST-0068 (iOS: Testing Custom Certificate Stores and Certificate Pinning) expects every relevant domain pinned."
        case .okhttp:
            return
                "MASTG-TEST-0022 (Android: Testing Custom Certificate Stores and Certificate Pinning) expects every relevant domain pinned."
        case .pinsJSON:
            return "pins.json is PinningLab's source; the MASTG test is the one of the platform it is rendered for."
        }
    }
    var includeSubdomainsFix: String {
        switch self {
        case .android: return "write <domain includeSubdomains=\"true\">, or pin each subdomain the app calls."
        case .ios:
            return "set TSKIncludeSubdomains / NSIncludesSubdomains to true, or pin each subdomain the app calls."
        case .okhttp: return "add the pattern **.HOST (OkHttp 4: any depth) next to HOST."
        case .pinsJSON: return "set \"includeSubdomains\": true, or list each subdomain the app calls."
        }
    }
}

struct AuditedPin: Sendable {
    var sha256: String
    /// `current` / `backup` where the format says (pins.json), else nil.
    var role: String?
    var line: Int?
    var keyPath: String?
}

struct AuditedDomain: Sendable {
    var host: String
    /// nil where the format has no such switch (OkHttp patterns say it themselves).
    var includeSubdomains: Bool?
    var pins: [AuditedPin]
    var expiration: Date?
    var expirationText: String?
    var expirationLine: Int?
    var expirationKeyPath: String?
    var line: Int?
    var keyPath: String?
    var platform: AuditPlatform
}

struct AuditedFile: Sendable {
    var file: String
    var kind: String
    var domains: [AuditedDomain] = []
    /// Findings only this format can have (overridePins, cleartext, enforcement off).
    var findings: [AuditFinding] = []
    /// The SDK levels a manifest or Gradle file declares.
    var minSdk: DeclaredSDK?
    var targetSdk: DeclaredSDK?
    /// `<certificateTransparency enabled="false">` outside `<debug-overrides>`: its line and the domains of its
    /// `<domain-config>` (`nil`: `<base-config>`).
    var ctDisabled: [(line: Int, domain: String?)] = []

    mutating func add(
        _ id: String, _ severity: AuditSeverity, line: Int?, keyPath: String? = nil, domain: String?, mastg: String?,
        note: String, message: String, fix: String
    ) {
        findings.append(
            AuditFinding(
                id: id, severity: severity, file: file, line: line, keyPath: keyPath, domain: domain, mastg: mastg,
                mastgNote: note, message: message, fix: fix))
    }
}

func parseAuditDay(_ text: String) -> Date? { PinsDocument.parseDay(text.trimmingCharacters(in: .whitespaces)) }
