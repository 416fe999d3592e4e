/// A TLS protocol version. A struct rather than an enum so that it can grow.
public struct TLSVersion: RawRepresentable, Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    /// The OpenSSL-style name: `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`.
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let tls10 = TLSVersion(rawValue: "TLSv1")
    public static let tls11 = TLSVersion(rawValue: "TLSv1.1")
    public static let tls12 = TLSVersion(rawValue: "TLSv1.2")
    public static let tls13 = TLSVersion(rawValue: "TLSv1.3")
    /// All known versions, oldest first.
    public static let all: [TLSVersion] = [.tls10, .tls11, .tls12, .tls13]

    /// Parses `1.2`, `tls1.2`, `TLSv1.2`, `TLS1.2` (case-insensitive); `1.0`/`tls1.0`/`TLSv1` for TLS 1.0.
    public init?(parsing text: String) {
        var t = text.lowercased()
        for prefix in ["tlsv", "tls"] where t.hasPrefix(prefix) {
            t.removeFirst(prefix.count)
            break
        }
        switch t {
        case "1", "1.0", "10": self = .tls10
        case "1.1", "11": self = .tls11
        case "1.2", "12": self = .tls12
        case "1.3", "13": self = .tls13
        default: return nil
        }
    }

    /// Wire value: 0x0301 … 0x0304.
    public var wireValue: UInt16? {
        switch self {
        case .tls10: return 0x0301
        case .tls11: return 0x0302
        case .tls12: return 0x0303
        case .tls13: return 0x0304
        default: return nil
        }
    }

    /// `1.0`, `1.1`, `1.2`, `1.3`.
    public var shortName: String {
        switch self {
        case .tls10: return "1.0"
        case .tls11: return "1.1"
        case .tls12: return "1.2"
        case .tls13: return "1.3"
        default: return rawValue
        }
    }

    /// How scenario files and the scenario JSON write it: `tls1.0`, `tls1.1`, `tls1.2`, `tls1.3`.
    public var scenarioName: String { "tls" + shortName }

    /// The version a scenario file names (`tls1.2`), exactly in that spelling; `nil` for anything else.
    public init?(scenarioName: String) {
        guard let v = TLSVersion.all.first(where: { $0.scenarioName == scenarioName }) else { return nil }
        self = v
    }

    public var isLegacy: Bool { self < .tls12 }
    public var description: String { rawValue }
    public static func < (a: TLSVersion, b: TLSVersion) -> Bool {
        (a.wireValue ?? .max, a.rawValue) < (b.wireValue ?? .max, b.rawValue)
    }
}

/// Whether the server asks the client for a certificate.
public struct ClientAuthentication: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// No CertificateRequest.
    public static let none = ClientAuthentication(rawValue: "none")
    /// CertificateRequest; a missing certificate is accepted, a presented one must verify (MockWebServer's
    /// `requestClientAuth()`).
    public static let optional = ClientAuthentication(rawValue: "optional")
    /// CertificateRequest; a missing or invalid certificate fails the handshake (MockWebServer's
    /// `requireClientAuth()`): never an HTTP 400.
    public static let required = ClientAuthentication(rawValue: "required")
    public static let all: [ClientAuthentication] = [.none, .optional, .required]
    public var description: String { rawValue }
}
