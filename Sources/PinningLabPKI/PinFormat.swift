import Foundation

/// How pins are written for the tools that take them. Every format uses SPKI SHA-256 pins, except `json`,
/// which carries every pin of every identity.
public struct PinFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// OkHttp `CertificatePinner`: `sha256/BASE64`, one per line.
    public static let okhttp = PinFormat(rawValue: "okhttp")
    /// curl `--pinnedpubkey`: `sha256//A;sha256//B`.
    public static let curl = PinFormat(rawValue: "curl")
    /// TrustKit `kTSKPublicKeyHashes`: a JSON list of base64 strings.
    public static let trustkit = PinFormat(rawValue: "trustkit")
    /// Android network-security-config `<pin-set>`.
    public static let nsc = PinFormat(rawValue: "nsc")
    /// The (retired) HTTP Public-Key-Pins header.
    public static let hpkp = PinFormat(rawValue: "hpkp")
    /// Every pin (SPKI, certificate, bare key) in base64 and hex, per identity.
    public static let json = PinFormat(rawValue: "json")
    public static let all: [PinFormat] = [.okhttp, .curl, .trustkit, .nsc, .hpkp, .json]
    public var description: String { rawValue }

    /// Renders the pins of `identities` (duplicates removed, order kept).
    public func render(_ identities: [Identity], host: String = "localhost") -> String {
        var seen = Set<String>()
        let pins = identities.map(\.pins.spkiBase64).filter { seen.insert($0).inserted }
        switch self {
        case .okhttp: return pins.map { "sha256/\($0)" }.joined(separator: "\n") + "\n"
        case .curl: return pins.map { "sha256//\($0)" }.joined(separator: ";") + "\n"
        case .trustkit:
            return "[" + pins.map { "\"\($0)\"" }.joined(separator: ", ") + "]\n"
        case .nsc:
            let exp = ISO8601DateFormatter.string(
                from: Date().addingTimeInterval(365 * 86400), timeZone: TimeZone(identifier: "UTC")!,
                formatOptions: [.withFullDate])
            var s = "<network-security-config>\n  <domain-config>\n    <domain includeSubdomains=\"true\">\(host)</domain>\n"
            s += "    <pin-set expiration=\"\(exp)\">\n"
            for p in pins { s += "      <pin digest=\"SHA-256\">\(p)</pin>\n" }
            return s + "    </pin-set>\n  </domain-config>\n</network-security-config>\n"
        case .hpkp:
            return "Public-Key-Pins: " + pins.map { "pin-sha256=\"\($0)\"" }.joined(separator: "; ")
                + "; max-age=5184000\n"
        default:
            return Self.json(identities)
        }
    }

    /// Every pin of `identities` as a JSON array, one object per identity.
    public static func json(_ identities: [Identity]) -> String {
        func q(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        var out = "[\n"
        for (i, id) in identities.enumerated() {
            out += "  {\n"
            out += "    \"name\": \(q(id.name)),\n    \"role\": \(q(id.role.rawValue)),\n    \"key\": \(q(id.keyName)),\n"
            out += "    \"keyType\": \(q(id.keyType.rawValue)),\n"
            out += "    \"spkiSHA256\": {\"base64\": \(q(id.pins.spkiBase64)), \"hex\": \(q(id.pins.spkiHex))},\n"
            out += "    \"certificateSHA256\": {\"base64\": \(q(id.pins.certificateBase64)), \"hex\": \(q(id.pins.certificateHex))},\n"
            out += "    \"rawKeySHA256\": {\"base64\": \(q(id.pins.rawKeyBase64)), \"hex\": \(q(id.pins.rawKeyHex)), \"note\": \"SHA-256 of the bare key bytes (SecKeyCopyExternalRepresentation); not a standard pin\"},\n"
            out += "    \"okhttp\": \(q("sha256/" + id.pins.spkiBase64)),\n    \"curl\": \(q("sha256//" + id.pins.spkiBase64))\n"
            out += "  }" + (i == identities.count - 1 ? "\n" : ",\n")
        }
        return out + "]\n"
    }
}
