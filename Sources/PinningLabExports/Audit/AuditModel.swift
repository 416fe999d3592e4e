public import Foundation
public import PinningLabPKI

/// How much a finding of `pinlab audit` matters; ordered, so that `--fail-on` compares.
public struct AuditSeverity: RawRepresentable, Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let info = AuditSeverity(rawValue: "info")
    public static let low = AuditSeverity(rawValue: "low")
    public static let medium = AuditSeverity(rawValue: "medium")
    public static let high = AuditSeverity(rawValue: "high")
    public static let all: [AuditSeverity] = [.info, .low, .medium, .high]
    var rank: Int { Self.all.firstIndex(of: self) ?? 0 }
    public static func < (a: AuditSeverity, b: AuditSeverity) -> Bool { a.rank < b.rank }
    public var description: String { rawValue }
}

/// One problem `pinlab audit` found: what, where, how bad, the OWASP MASTG test it answers to (or why none does)
/// and the fix.
public struct AuditFinding: Codable, Sendable, Hashable {
    /// Stable identifier of the check: `expired-pin-set`, `single-pin`, … (``AuditCheck``).
    public var id: String
    public var severity: AuditSeverity
    public var file: String
    /// 1-based line, where the reader knows it (XML, Swift, Kotlin, Java; pins.json best effort).
    public var line: Int?
    /// The key path in a property list or JSON document.
    public var keyPath: String?
    /// The host (or host pattern) the finding is about.
    public var domain: String?
    /// The OWASP MASTG test id whose failure this finding is, e.g. `MASTG-TEST-0243`; `nil` where none applies.
    public var mastg: String?
    /// Which MASTG test applies and how, or why none does.
    public var mastgNote: String
    public var message: String
    public var fix: String

    /// `FILE:LINE` or `FILE (KEYPATH)`.
    public var location: String {
        var s = file
        if let line { s += ":\(line)" }
        if let keyPath { s += " (\(keyPath))" }
        return s
    }
}

/// The checks `pinlab audit` runs: each finding id with its severity and its MASTG mapping.
public enum AuditCheck {
    public static let expiredPinSet = "expired-pin-set"
    public static let pinSetExpiresSoon = "pin-set-expires-soon"
    public static let singlePin = "single-pin"
    public static let backupEqualsCurrent = "backup-equals-current"
    public static let pinsMatchNothing = "pins-match-nothing"
    public static let overridePins = "override-pins"
    public static let userCATrusted = "user-ca-trusted"
    public static let debugOverridePins = "debug-override-pins"
    public static let pinningNotEnforced = "pinning-not-enforced"
    public static let cleartextPermitted = "cleartext-permitted"
    public static let subdomainsUnpinned = "subdomains-unpinned"
    /// minSdk below 24 (AndroidManifest.xml, build.gradle): MASTG-TEST-0285.
    public static let minSdkTrustsUserCAs = "min-sdk-trusts-user-cas"
    /// `<certificateTransparency enabled="false">` in an app targeting Android 17 (API 37).
    public static let ctDisabled = "ct-disabled"
    /// A TrustKit pin of a lab key whose type TrustKit cannot hash (``PinningLibraryKeyTypes``): it never matches.
    public static let keyTypeUnhashable = "key-type-unhashable"
    public static let all = [
        expiredPinSet, pinSetExpiresSoon, singlePin, backupEqualsCurrent, pinsMatchNothing, overridePins, userCATrusted,
        debugOverridePins, pinningNotEnforced, cleartextPermitted, subdomainsUnpinned, minSdkTrustsUserCAs, ctDisabled,
        keyTypeUnhashable,
    ]
}

/// What `pinlab audit` is asked: the files, the "soon" window, the chain to match pins against, today.
public struct AuditOptions: Sendable {
    /// A pin set expiring within this many days is reported (`--soon`, default 30).
    public var soonDays: Int = 30
    /// SPKI SHA-256 (base64) of every certificate of the `--against` chain; `nil`: no chain given.
    public var chainPins: [String]?
    /// The chain file's name, for messages.
    public var chainFile: String?
    public var now: Date = Date()
    /// The keys of a lab PKI by their SPKI pin (base64 SHA-256): a pin that is one of them has a known key type, so
    /// a library that cannot hash that type is reported (``AuditCheck/keyTypeUnhashable``). Empty: no lab PKI.
    public var labKeys: [String: AuditLabKey] = [:]
    public init() {}
}

/// A key of the lab PKI as `pinlab audit` recognizes it in a configuration: its pin, name, type and identities.
public struct AuditLabKey: Sendable, Hashable {
    public var keyName: String
    public var keyType: KeyType
    /// The identities that carry it, in the PKI's order.
    public var identities: [String]
    public init(keyName: String, keyType: KeyType, identities: [String]) {
        self.keyName = keyName
        self.keyType = keyType
        self.identities = identities
    }

    /// Every key of `identities` by its SPKI pin.
    public static func table(_ identities: [Identity]) -> [String: AuditLabKey] {
        var out: [String: AuditLabKey] = [:]
        for id in identities {
            out[id.pins.spkiBase64, default: AuditLabKey(keyName: id.keyName, keyType: id.keyType, identities: [])]
                .identities.append(id.name)
        }
        return out
    }
}

/// The result of auditing some files.
public struct AuditReport: Codable, Sendable {
    public struct FileSummary: Codable, Sendable {
        public var file: String
        /// What the file was read as: `network-security-config`, `info-plist`, `trustkit-swift`, `okhttp`, `pins-json`.
        public var kind: String
        /// The pinned domains (host or pattern) found in it.
        public var domains: [String]
    }
    public var files: [FileSummary]
    public var findings: [AuditFinding]

    /// Whether any finding is at or above `severity`.
    public func fails(at severity: AuditSeverity) -> Bool { findings.contains { $0.severity >= severity } }

    /// One block per finding, then a count.
    public var text: String {
        var s = ""
        for f in findings {
            s += "\(f.location): \(f.severity) \(f.id)" + (f.domain.map { " [\($0)]" } ?? "") + "\n"
            s += "    \(f.message)\n"
            // The note names its test first ("MASTG-TEST-0235 (…) fails it."): the id is not said twice.
            let id = f.mastg.flatMap { f.mastgNote.hasPrefix($0) ? nil : "\($0) — " } ?? ""
            s += "    MASTG: " + id + f.mastgNote + "\n"
            s += "    fix: \(f.fix)\n"
        }
        let counts = AuditSeverity.all.reversed().compactMap { sev -> String? in
            let n = findings.filter { $0.severity == sev }.count
            return n == 0 ? nil : "\(n) \(sev)"
        }
        let domainCount = files.reduce(0) { $0 + $1.domains.count }
        s += "\(findings.count) finding\(findings.count == 1 ? "" : "s")"
        s += counts.isEmpty ? "" : " (\(counts.joined(separator: ", ")))"
        s +=
            " in \(files.count) file\(files.count == 1 ? "" : "s"), \(domainCount) pinned domain\(domainCount == 1 ? "" : "s").\n"
        return s
    }
}
