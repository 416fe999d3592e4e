public import Foundation
import PinningLabBase
public import PinningLabPKI

/// A configuration a pinning library or a device takes, written by `pinlab export FORMAT`. An open set: each format
/// is a static member declared in its renderer's file (with its file name and renderer) and listed once in
/// ``all``; adding one edits nothing else.
public struct ExportFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// The file the format's main text is usually saved as.
    public let fileName: String
    /// Whether the library refuses a configuration with fewer than two pins (TrustKit raises an exception:
    /// a single pin without a backup can brick an app).
    public let requiresTwoPins: Bool
    /// Whether the format carries pins at all (`mobileconfig` only installs trust anchors).
    public let carriesPins: Bool
    /// Whether the format can pin whole certificates (`leaf-cert`), not only SPKIs.
    public let pinsCertificates: Bool
    private let renderer: @Sendable (PinExport) -> [ExportFile]

    init(
        _ name: String, fileName: String, requiresTwoPins: Bool = false, carriesPins: Bool = true,
        pinsCertificates: Bool = false, render: @escaping @Sendable (PinExport) -> [ExportFile]
    ) {
        rawValue = name
        self.fileName = fileName
        self.requiresTwoPins = requiresTwoPins
        self.carriesPins = carriesPins
        self.pinsCertificates = pinsCertificates
        renderer = render
    }

    /// The format with this name, if there is one.
    public init?(rawValue: String) {
        guard let f = Self.all.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = f
    }

    public static func == (a: ExportFormat, b: ExportFormat) -> Bool { a.rawValue == b.rawValue }
    public func hash(into h: inout Hasher) { h.combine(rawValue) }

    /// Every format, in the order `pinlab export --help` lists them: the one registry.
    public static let all: [ExportFormat] = [
        .trustKitPlist, .trustKitSwift, .alamofire, .okHttpKotlin, .okHttpJava, .nsc, .curl, .mobileconfig,
        .nsPinnedDomains, .cronetJava, .ktorKotlin, .pinsJSON, .farm,
        .reactNative, .flutter, .ech,
    ]
    public var description: String { rawValue }

    /// The format named `name`, or an error that names the closest format.
    public static func named(_ name: String) throws(ExportError) -> ExportFormat {
        if let f = ExportFormat(rawValue: name.lowercased()) { return f }
        let names = all.map(\.rawValue)
        throw ExportError(
            .unknownFormat, argument: "FORMAT", problem: "'\(name)' is not an export format.",
            fix: "use one of \(names.joined(separator: ", ")). \(didYouMean(name, names))")
    }

    /// Writes the export. The main file comes first; the others (certificates, trust files, README) are the
    /// material it refers to, written next to it when the caller writes to a folder.
    public func render(_ export: PinExport) throws(ExportError) -> [ExportFile] {
        renderer(try export.prepared(for: self))
    }
}

/// One file of an export: a name (no folders) and its bytes.
public struct ExportFile: Sendable, Hashable {
    public var name: String
    public var bytes: [UInt8]
    /// Whether the file holds a private key or its password: written readable by its owner only (0600).
    public var isSecret: Bool
    public init(name: String, bytes: [UInt8], isSecret: Bool = false) {
        self.name = name
        self.bytes = bytes
        self.isSecret = isSecret
    }
    public init(name: String, text: String, isSecret: Bool = false) {
        self.init(name: name, bytes: Array(text.utf8), isSecret: isSecret)
    }
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// One pinned key (or, for certificate pins, one pinned certificate) and why it is there.
public struct ExportPin: Sendable, Hashable {
    /// Why this pin is in the set.
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Pinned by the profile or named on the command line.
        public static let pinned = Reason(rawValue: "pinned")
        /// The published backup key of the profile `leaf-spki+backup`.
        public static let backup = Reason(rawValue: "backup")
        /// Added because the format refuses a single pin (TrustKit); not part of the profile.
        public static let addedBackup = Reason(rawValue: "added-backup")
        public var description: String { rawValue }
    }

    /// The lab identity the pin was taken from; `nil` for a pin read from a `pins.json` document (a hash only).
    public var identity: Identity?
    public var reason: Reason
    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo.
    public var spkiBase64: String
    /// What the pin stands for, for comments: the identity and key, or the name a `pins.json` gives it.
    public var name: String
    /// What the pinned key certifies: `leaf`, `intermediate` or `root` (NSPinnedDomains files leaf and CA
    /// identities under different keys).
    public var certificateRole: Role
    public init(identity: Identity, reason: Reason) {
        self.identity = identity
        self.reason = reason
        self.spkiBase64 = identity.pins.spkiBase64
        self.certificateRole = identity.role
        self.name = "\(identity.name) (key \(identity.keyName), \(identity.keyType.displayName))"
    }
    /// A pin known by its hash only (read from `pins.json`): formats that need the certificate (Alamofire) refuse it.
    public init(spkiBase64: String, name: String, certificateRole: Role, reason: Reason) {
        self.identity = nil
        self.reason = reason
        self.spkiBase64 = spkiBase64
        self.name = name
        self.certificateRole = certificateRole
    }
    /// A one-line label for comments: `leaf-v1 (key K1, P-256)`, `leaf-v3-rekey (key K2, P-256), backup`.
    public var label: String {
        switch reason {
        case .backup: return name + ", backup key"
        case .addedBackup: return name + ", backup key added because the library requires two pins"
        default: return name
        }
    }
}

/// What an export is made from: the host, the pins, the trust anchors. Pure data; `ExportFormat.render` turns it
/// into files. Build one with `PinExport(scenario:profile:in:)` or `PinExport(identities:in:)`, or by hand.
public struct PinExport: Sendable, Hashable {
    /// The host name the pins apply to (servers are reached as `localhost`).
    public var host: String
    public var includeSubdomains: Bool
    /// The pins, primary first. Empty for the profile `none`.
    public var pins: [ExportPin]
    /// Whether the pins are whole certificates (`leaf-cert`) rather than SPKIs.
    public var pinsCertificates: Bool
    /// The key added when a format demands two pins and `pins` holds one (`leaf-v3-rekey`, K2, by default).
    public var backup: Identity?
    /// The roots the app trusts (written as `.cer`/`.pem` files, Android raw resources, profile payloads).
    public var trustAnchors: [Identity]
    /// Roots the user installs on the device besides the app's anchors: `proxy-root` for the interception lessons.
    /// Only the `mobileconfig` and `farm` exports install them.
    public var deviceRoots: [Identity] = []
    /// The client identity a device presents in the mutual-TLS scenarios, as a PKCS#12 file: only the `farm`
    /// export writes it (`pinlab export farm` fills it from the lab's `client-valid`).
    public var deviceClientIdentity: DeviceClientIdentity?
    /// The lab's Encrypted Client Hello configuration: only the `ech` export writes it (`pinlab export ech` fills it
    /// from the PKI folder's `ech/`).
    public var echConfiguration: ECHConfiguration?
    /// The Android `<pin-set expiration>` date. On and after it Android stops enforcing the pins, so it follows
    /// the app's release horizon (the last day a build may still be in use), not a certificate's notAfter; `nil`:
    /// ``pinHorizonDays`` after ``exportDate``.
    public var expiration: Date?
    /// Android's `<certificateTransparency enabled=…>` in the domain's config (network-security-config, Android 16
    /// and later); `nil` leaves the element out, so the platform default applies.
    public var certificateTransparency: Bool? = nil
    /// Days from ``exportDate`` to the pin-set expiration when ``expiration`` is not given.
    public var pinHorizonDays: Int = PinExport.defaultPinHorizonDays
    /// The day the export is made: the start of ``pinHorizonDays``.
    public var exportDate: Date = Date()
    /// One year: an app release's usual horizon, the default of ``pinHorizonDays``.
    public static let defaultPinHorizonDays = 365
    /// An expiration closer than this many days is warned about: pinning would switch itself off on devices soon
    /// after a release.
    public static let shortestSensiblePinHorizonDays = 90
    /// Where the pins came from, for the header comment: "scenario baseline, profile leaf-spki+backup".
    public var origin: String
    /// The trust file a command-line client should use (`curl --cacert`); `nil` means `trust.pem` next to the export.
    public var trustFilePath: String?
    /// A note for the header comment (e.g. why a pin was added).
    public var notes: [String] = []

    public init(
        host: String = "localhost", includeSubdomains: Bool = false, pins: [ExportPin], pinsCertificates: Bool = false,
        backup: Identity? = nil, trustAnchors: [Identity], expiration: Date? = nil, origin: String,
        trustFilePath: String? = nil
    ) {
        self.host = host
        self.includeSubdomains = includeSubdomains
        self.pins = pins
        self.pinsCertificates = pinsCertificates
        self.backup = backup
        self.trustAnchors = trustAnchors
        self.expiration = expiration
        self.origin = origin
        self.trustFilePath = trustFilePath
    }

    /// The pin-set expiration: the given date, else ``pinHorizonDays`` after ``exportDate``.
    public var effectiveExpiration: Date? {
        expiration ?? exportDate.addingTimeInterval(TimeInterval(pinHorizonDays) * 86_400)
    }

    /// Days from ``exportDate`` to ``effectiveExpiration`` (negative when it is past).
    public var expirationDays: Int {
        guard let e = effectiveExpiration else { return Int.max }
        return Int((e.timeIntervalSince(exportDate) / 86_400).rounded(.down))
    }

    /// Why the Android pin-set expiration is a problem (past, or fewer than
    /// ``shortestSensiblePinHorizonDays`` away), or nil.
    public var expirationWarning: String? {
        guard !pins.isEmpty, let e = effectiveExpiration else { return nil }
        let day = NSCExport.day(e)
        let fix =
            "pass --pin-horizon DAYS or --expiration YYYY-MM-DD past the last day this build will be in use "
            + "(default: \(Self.defaultPinHorizonDays) days)."
        if expirationDays < 0 {
            return "the pin-set expiration \(day) is in the past: Android does not enforce these pins at all; \(fix)"
        }
        guard expirationDays < Self.shortestSensiblePinHorizonDays else { return nil }
        return "the pin-set expires on \(day), \(expirationDays) days from now: on and after that day Android stops "
            + "enforcing these pins on every device running this build; \(fix)"
    }

    /// The export as `format` writes it: checked, with the backup key added where the format demands two pins.
    func prepared(for format: ExportFormat) throws(ExportError) -> PinExport {
        var e = self
        guard HostName.isValidHost(host) else {
            throw ExportError(
                .badHost, argument: "--host", problem: "'\(YAMLReader.excerpt(host))' is not a host name.",
                fix:
                    "give a DNS name such as localhost or api.pinning.test (labels of 1 to 63 letters, digits and hyphens) or an IP address."
            )
        }
        if (format == .mobileconfig || format == .farm) && roots.isEmpty {
            throw ExportError(
                .badArguments, argument: "--from",
                problem:
                    "a configuration profile installs root certificates, and this pin set carries none (pins.json holds hashes only).",
                fix: "export \(format.rawValue) from the lab PKI (drop --from).")
        }
        if format == .ech && echConfiguration == nil {
            throw ExportError(
                .badArguments, argument: "--from",
                problem: "the ECHConfigList is kept in the lab PKI's folder (ech/), and this export carries none.",
                fix: "export ech from the lab PKI (drop --from).")
        }
        guard format.carriesPins else { return e }
        if format == .alamofire, let p = pins.first(where: { $0.identity == nil }) {
            throw ExportError(
                .certificatePinsUnsupported, argument: "--from",
                problem:
                    "Alamofire's evaluators compare keys taken from certificates, and the pin \(p.spkiBase64) is a hash only.",
                fix:
                    "export alamofire from the lab PKI (drop --from), or use nspinneddomains or trustkit-plist, which take hashes."
            )
        }
        if format == .flutter, let p = pins.first(where: { $0.identity == nil }) {
            throw ExportError(
                .certificatePinsUnsupported, argument: "--from",
                problem:
                    "http_certificate_pinning compares certificate fingerprints, and the pin \(p.spkiBase64) is an SPKI hash only.",
                fix: "export flutter from the lab PKI (drop --from).")
        }
        if format == .nsPinnedDomains && Set(spkiPins.map(\.certificateRole.isCA)).count > 1 {
            throw ExportError(
                .badArguments, argument: "NAMES",
                problem:
                    "the pins mix leaf keys and CA keys; NSPinnedDomains files them under NSPinnedLeafIdentities and NSPinnedCAIdentities, and when both are present App Transport Security requires a match in each, so a chain would have to match both.",
                fix:
                    "pin leaf keys only (e.g. leaf-v1 leaf-v3-rekey) or CA keys only (e.g. lab-intermediate-a lab-root)."
            )
        }
        if pins.isEmpty && format != .nsc && format != .curl {
            throw ExportError(
                .noPins, argument: "--profile",
                problem: "the selection has no pins (profile none), and \(format) is a pinning configuration.",
                fix: "choose a pinning profile (--profile leaf-spki+backup), or name identities.")
        }
        if pinsCertificates && !format.pinsCertificates {
            throw ExportError(
                .certificatePinsUnsupported, argument: "--profile",
                problem: "leaf-cert pins the whole certificate; \(format) takes SPKI (public key) pins only.",
                fix:
                    "use --profile leaf-spki or leaf-spki+backup, or the alamofire export (PinnedCertificatesTrustEvaluator)."
            )
        }
        if format.requiresTwoPins {
            if includeSubdomains && !host.contains(".") {
                throw ExportError(
                    .badHost, argument: "--include-subdomains",
                    problem: "TrustKit refuses includeSubdomains for '\(host)', a name without a registrable domain.",
                    fix: "drop --include-subdomains, or pin a domain such as pinning.test.")
            }
            if Set(e.pins.map(\.spkiBase64)).count < 2 {
                guard let b = backup, !e.pins.contains(where: { $0.spkiBase64 == b.pins.spkiBase64 }) else {
                    throw ExportError(
                        .tooFewPins, argument: "NAMES",
                        problem:
                            "TrustKit refuses a domain with fewer than two distinct pins, and there is no other backup key to add.",
                        fix:
                            "name two identities with different keys, e.g. leaf-v1 leaf-v3-rekey (in pins.json: add a pin with role backup)."
                    )
                }
                e.pins.append(ExportPin(identity: b, reason: .addedBackup))
                e.notes.append(
                    "TrustKit refuses a single pin, so the backup key \(b.keyName) (\(b.name)) was added: "
                        + "this configuration also accepts a server that moved to \(b.keyName).")
            }
        }
        return e
    }

    /// Every root the export hands to an app or a device, once each: the trust anchors, then the device roots.
    public var roots: [Identity] {
        var out: [Identity] = []
        for r in trustAnchors + deviceRoots where !out.contains(r) { out.append(r) }
        return out
    }

    /// What each root can vouch for, read from its certificate (``CAReach``): one line per root.
    public var rootReachLines: [String] {
        roots.map { r in "Trust anchor \(r.name): \((try? r.reach().summary) ?? "its certificate cannot be read")." }
    }

    /// The warnings this export carries, read from the roots' certificates: every root that is not
    /// name-constrained (proxy-root), and every root installed on the device besides the app's anchors (a proxy
    /// root, even a scoped one, which the JDK treats as unconstrained). `pinlab export` prints them to standard
    /// error; the exported text carries them too.
    public var rootWarnings: [String] {
        roots.compactMap { r in
            guard let reach = try? r.reach(), !reach.isConstrained || deviceRoots.contains(r) else { return nil }
            return reach.warning(name: r.name).map { "WARNING: " + $0 }
        }
    }

    /// The distinct SPKI pins, in order.
    var spkiPins: [ExportPin] {
        var seen = Set<String>()
        return pins.filter { seen.insert($0.spkiBase64).inserted }
    }

    /// The comment lines every export starts with.
    func headerLines(_ format: ExportFormat) -> [String] {
        var lines = ["Generated by `pinlab export \(format)` (\(origin)), host \(host)."]
        if pins.isEmpty {
            lines.append("No pins: the profile pins nothing; only the trust anchors are configured.")
        } else {
            lines.append(
                pinsCertificates
                    ? "Pinned certificates (SHA-256 of the DER certificate):"
                    : "Pins (SHA-256 of the DER SubjectPublicKeyInfo, base64):")
            for p in spkiPins {
                lines.append(
                    "  " + (pinsCertificates ? p.identity?.pins.certificateBase64 ?? p.spkiBase64 : p.spkiBase64) + "  "
                        + p.label)
            }
        }
        lines += notes
        lines += rootReachLines
        lines += rootWarnings
        lines.append(
            "Check a pin: openssl x509 -in CERT.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
        )
        return lines
    }
}

/// An export that cannot be written: the argument at fault, what was wrong and what to do. Equality on the code.
public struct ExportError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let unknownFormat = Code(rawValue: "unknown-format")
        public static let unknownScenario = Code(rawValue: "unknown-scenario")
        public static let unknownProfile = Code(rawValue: "unknown-profile")
        public static let unknownIdentity = Code(rawValue: "unknown-identity")
        public static let noPins = Code(rawValue: "no-pins")
        public static let tooFewPins = Code(rawValue: "too-few-pins")
        public static let certificatePinsUnsupported = Code(rawValue: "certificate-pins-unsupported")
        public static let badHost = Code(rawValue: "bad-host")
        public static let badArguments = Code(rawValue: "bad-arguments")
        public var description: String { rawValue }
    }

    public var code: Code
    /// The command-line argument at fault (`FORMAT`, `--scenario`, `--profile`, `NAMES`, `--host`).
    public var argument: String
    public var problem: String
    public var fix: String

    public init(_ code: Code, argument: String, problem: String, fix: String) {
        self.code = code
        self.argument = argument
        self.problem = problem
        self.fix = fix
    }

    public var description: String { "\(argument): \(problem) Fix: \(fix)" }
    public static func == (a: ExportError, b: ExportError) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
}
