public import Foundation
import PinningLabBase
import PinningLabPKI

/// `pins.json`: PinningLab's own pin-set source, one JSON document from which `pinlab export --from pins.json FORMAT`
/// renders every format that takes hashes, and which `pinlab audit` reads.
///
/// ```json
/// {"format": "pinninglab-pins", "version": 1,
///  "domains": [{"host": "api.example.com", "includeSubdomains": true, "expiration": "2027-11-25",
///               "pins": [{"sha256": "BASE64…=", "role": "current", "certificate": "leaf", "name": "leaf-v1"},
///                        {"sha256": "BASE64…=", "role": "backup", "certificate": "leaf"}]}]}
/// ```
/// `sha256`: base64 SHA-256 of the DER SubjectPublicKeyInfo. `role`: `current` (a key the server uses now) or
/// `backup` (a key held in reserve). `certificate`: `leaf`, `intermediate` or `root` — what the key certifies
/// (NSPinnedDomains files CA keys apart). `expiration`: `YYYY-MM-DD`, the day the pins stop being enforced
/// (Android, Cronet); optional.
public struct PinsDocument: Codable, Sendable, Hashable {
    public static let formatName = "pinninglab-pins"
    public static let currentVersion = 1

    public struct Pin: Codable, Sendable, Hashable {
        public var sha256: String
        public var role: String
        public var certificate: String
        public var name: String?
        public init(sha256: String, role: String, certificate: String, name: String? = nil) {
            self.sha256 = sha256
            self.role = role
            self.certificate = certificate
            self.name = name
        }
    }

    public struct Domain: Codable, Sendable, Hashable {
        public var host: String
        public var includeSubdomains: Bool
        public var expiration: String?
        public var pins: [Pin]
        public init(host: String, includeSubdomains: Bool, expiration: String?, pins: [Pin]) {
            self.host = host
            self.includeSubdomains = includeSubdomains
            self.expiration = expiration
            self.pins = pins
        }
    }

    public var format: String
    public var version: Int
    public var domains: [Domain]

    public init(domains: [Domain]) {
        format = Self.formatName
        version = Self.currentVersion
        self.domains = domains
    }

    static let roles = ["current", "backup"]
    static let certificates = ["leaf", "intermediate", "root"]

    /// The document in `data`, checked: every problem names the file and the key path.
    public static func parse(_ data: Data, file: String) throws(PinConfigError) -> PinsDocument {
        let doc: PinsDocument
        do {
            doc = try JSONDecoder().decode(PinsDocument.self, from: data)
        } catch let DecodingError.keyNotFound(key, ctx) {
            throw PinConfigError(
                file: file, keyPath: path(ctx.codingPath + [key]), problem: "the key '\(key.stringValue)' is missing.",
                fix: "every domain has host, includeSubdomains and pins; every pin has sha256, role and certificate.")
        } catch let DecodingError.typeMismatch(_, ctx) {
            throw PinConfigError(
                file: file, keyPath: path(ctx.codingPath),
                problem: "the value has the wrong type (\(ctx.debugDescription)).",
                fix: "see the pins.json format in the Exports article.")
        } catch let DecodingError.valueNotFound(_, ctx) {
            throw PinConfigError(
                file: file, keyPath: path(ctx.codingPath), problem: "the value is null.", fix: "give a value.")
        } catch {
            let (detail, line) = jsonSyntaxError(data) ?? (jsonErrorDetail(error), nil)
            throw PinConfigError(
                file: file, line: line, problem: "not a JSON document (\(detail)).",
                fix: "check the syntax: python3 -m json.tool \(file)")
        }
        guard doc.format == formatName else {
            throw PinConfigError(
                file: file, keyPath: "format", problem: "'\(doc.format)' is not \(formatName).",
                fix: "set \"format\": \"\(formatName)\".")
        }
        guard doc.version == currentVersion else {
            throw PinConfigError(
                file: file, keyPath: "version", problem: "version \(doc.version) is not known to this pinlab.",
                fix: "write version \(currentVersion).")
        }
        for (i, d) in doc.domains.enumerated() {
            let at = "domains[\(i)]"
            if !HostName.isValidHost(d.host) {
                throw PinConfigError(
                    file: file, keyPath: at + ".host", problem: "'\(YAMLReader.excerpt(d.host))' is not a host name.",
                    fix:
                        "write a DNS name such as api.example.com (no scheme, port or wildcard; use includeSubdomains)."
                )
            }
            if let e = d.expiration, parseDay(e) == nil {
                throw PinConfigError(
                    file: file, keyPath: at + ".expiration", problem: "'\(e)' is not a date.", fix: "write YYYY-MM-DD.")
            }
            for (j, p) in d.pins.enumerated() {
                let pa = "\(at).pins[\(j)]"
                _ = try checkedSPKIPin(p.sha256, file: file, line: nil, keyPath: pa + ".sha256")
                guard roles.contains(p.role) else {
                    throw PinConfigError(
                        file: file, keyPath: pa + ".role", problem: "'\(p.role)' is not a role.",
                        fix: "write current or backup.")
                }
                guard certificates.contains(p.certificate) else {
                    throw PinConfigError(
                        file: file, keyPath: pa + ".certificate",
                        problem: "'\(p.certificate)' is not a certificate kind.",
                        fix: "write leaf, intermediate or root: what the pinned key certifies.")
                }
            }
        }
        return doc
    }

    static func path(_ keys: [any CodingKey]) -> String {
        var s = ""
        for k in keys {
            if let i = k.intValue { s += "[\(i)]" } else { s += (s.isEmpty ? "" : ".") + k.stringValue }
        }
        return s.isEmpty ? "(top level)" : s
    }

    /// What Foundation's JSON parser says went wrong ("Unexpected character 'x' around line 4, column 20."), found
    /// under a `DecodingError`.
    static func jsonErrorDetail(_ error: any Error) -> String {
        var e: (any Error)? = error
        if case DecodingError.dataCorrupted(let ctx)? = error as? DecodingError { e = ctx.underlyingError ?? error }
        let ns = (e ?? error) as NSError
        return (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? ns.localizedDescription
    }

    /// JSONSerialization's message for a syntax error and the line it is on (it names a character offset:
    /// "Invalid value around character 79."); nil when the data parses.
    static func jsonSyntaxError(_ data: Data) -> (String, Int?)? {
        do {
            _ = try JSONSerialization.jsonObject(with: data)
            return nil
        } catch {
            let detail = jsonErrorDetail(error)
            guard let r = detail.range(of: "character "),
                let offset = Int(detail[r.upperBound...].prefix { $0.isNumber })
            else { return (detail, nil) }
            return (detail, data.prefix(offset).reduce(1) { $0 + ($1 == 10 ? 1 : 0) })
        }
    }

    static func parseDay(_ text: String) -> Date? {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        guard text.count == 10 else { return nil }
        return f.date(from: text)
    }

    /// The export of one domain: its pins (current ones first), no trust anchors (the system's are used).
    public func export(host: String?, file: String) throws(PinConfigError) -> PinExport {
        let domain: Domain
        if let host {
            guard let d = domains.first(where: { $0.host == host }) else {
                throw PinConfigError(
                    file: file, keyPath: "domains", problem: "no domain is '\(host)'.",
                    fix: "use one of \(domains.map(\.host).joined(separator: ", ")).")
            }
            domain = d
        } else {
            guard domains.count == 1 else {
                throw PinConfigError(
                    file: file, keyPath: "domains",
                    problem: domains.isEmpty
                        ? "there are no domains." : "\(domains.count) domains; an export is for one host.",
                    fix: domains.isEmpty
                        ? "add a domain with its pins."
                        : "choose one with --host (\(domains.map(\.host).joined(separator: ", "))).")
            }
            domain = domains[0]
        }
        let ordered = domain.pins.filter { $0.role == "current" } + domain.pins.filter { $0.role != "current" }
        let pins = ordered.map { p in
            ExportPin(
                spkiBase64: p.sha256, name: p.name ?? "\(p.certificate) key",
                certificateRole: Role(rawValue: p.certificate),
                reason: p.role == "backup" ? .backup : .pinned)
        }
        var e = PinExport(
            host: domain.host, includeSubdomains: domain.includeSubdomains, pins: pins, trustAnchors: [],
            expiration: domain.expiration.flatMap(Self.parseDay), origin: "\(file), domain \(domain.host)")
        e.notes.append("Trust anchors: the system's (pins.json carries pins, not certificates).")
        return e
    }
}

/// Writes a `PinExport` as a `pins.json` document of one domain.
enum PinsJSONExport {
    static func render(_ e: PinExport) -> [ExportFile] {
        let pins = e.spkiPins.map { p in
            PinsDocument.Pin(
                sha256: p.spkiBase64, role: p.reason == .pinned ? "current" : "backup",
                certificate: p.certificateRole.isCA ? p.certificateRole.rawValue : "leaf", name: p.name)
        }
        let doc = PinsDocument(domains: [
            PinsDocument.Domain(
                host: e.host, includeSubdomains: e.includeSubdomains,
                expiration: e.effectiveExpiration.map(NSCExport.day), pins: pins)
        ])
        let text = ((try? JSONOutput.string(doc)) ?? "{}") + "\n"
        return [ExportFile(name: ExportFormat.pinsJSON.fileName, text: text)]
    }
}

extension ExportFormat {
    /// `pins.json`: PinningLab's pin-set source (``PinsDocument``), from which `pinlab export --from` renders the rest.
    public static let pinsJSON = ExportFormat(
        "pins-json", fileName: "pins.json", render: PinsJSONExport.render)
}
