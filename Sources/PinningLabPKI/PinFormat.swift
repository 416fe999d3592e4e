import Foundation
import PinningLabBase

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

    /// One SPKI pin (base64 SHA-256) as OkHttp's `CertificatePinner` takes it: `sha256/BASE64`.
    public static func okhttpPin(_ spkiBase64: String) -> String { "sha256/" + spkiBase64 }

    /// One SPKI pin (base64 SHA-256) as curl's `--pinnedpubkey` takes it: `sha256//BASE64`.
    public static func curlPin(_ spkiBase64: String) -> String { "sha256//" + spkiBase64 }

    /// Several SPKI pins in one `--pinnedpubkey` argument: `sha256//A;sha256//B`.
    public static func curlPins(_ spkiBase64: [String]) -> String { spkiBase64.map(curlPin).joined(separator: ";") }

    /// Renders the pins of `identities` (duplicates removed, order kept).
    public func render(_ identities: [Identity], host: String = "localhost") -> String {
        var seen = Set<String>()
        let pins = identities.map(\.pins.spkiBase64).filter { seen.insert($0).inserted }
        switch self {
        case .okhttp: return pins.map(Self.okhttpPin).joined(separator: "\n") + "\n"
        case .curl: return Self.curlPins(pins) + "\n"
        case .trustkit:
            return "[" + pins.map { "\"\($0)\"" }.joined(separator: ", ") + "]\n"
        case .nsc:
            let exp = ISO8601DateFormatter.string(
                from: Date().addingTimeInterval(365 * 86400), timeZone: TimeZone(identifier: "UTC")!,
                formatOptions: [.withFullDate])
            var s =
                "<network-security-config>\n  <domain-config>\n    <domain includeSubdomains=\"true\">\(host)</domain>\n"
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
        // Only strings: encoding cannot fail.
        ((try? JSONOutput.string(identities.map(IdentityPins.init))) ?? "[]") + "\n"
    }
}

/// One identity's pins as `PinFormat.json` writes them.
private struct IdentityPins: Encodable {
    struct Hash: Encodable {
        var base64: String
        var hex: String
        var note: String?
    }

    var name: String
    var role: String
    var key: String
    var keyType: String
    var spkiSHA256: Hash
    var certificateSHA256: Hash
    var rawKeySHA256: Hash
    var okhttp: String
    var curl: String

    init(_ id: Identity) {
        name = id.name
        role = id.role.rawValue
        key = id.keyName
        keyType = id.keyType.rawValue
        spkiSHA256 = Hash(base64: id.pins.spkiBase64, hex: id.pins.spkiHex)
        certificateSHA256 = Hash(base64: id.pins.certificateBase64, hex: id.pins.certificateHex)
        rawKeySHA256 = Hash(
            base64: id.pins.rawKeyBase64, hex: id.pins.rawKeyHex,
            note: "SHA-256 of the bare key bytes (SecKeyCopyExternalRepresentation); not a standard pin")
        okhttp = PinFormat.okhttpPin(id.pins.spkiBase64)
        curl = PinFormat.curlPin(id.pins.spkiBase64)
    }
}
