/// A TLS alert: its code and RFC name.
public struct TLSAlert: Hashable, Sendable, Codable, CustomStringConvertible {
    public var code: UInt8
    /// RFC 8446 / 5246 name, e.g. `bad_certificate`.
    public var name: String
    /// `fatal` or `warning` (TLS 1.3 alerts are all fatal except close_notify and user_canceled).
    public var level: String?

    public init(code: UInt8, level: UInt8? = nil) {
        self.code = code
        self.name = TLSAlert.names[code] ?? "alert_\(code)"
        self.level = level.map { $0 == 1 ? "warning" : ($0 == 2 ? "fatal" : "level_\($0)") }
    }

    public var description: String { "\(name) (\(code))" }
    public var isCloseNotify: Bool { code == 0 }

    public static let closeNotify: UInt8 = 0
    public static let unexpectedMessage: UInt8 = 10
    public static let handshakeFailure: UInt8 = 40
    public static let badCertificate: UInt8 = 42
    public static let unsupportedCertificate: UInt8 = 43
    public static let certificateExpired: UInt8 = 45
    public static let certificateRevoked: UInt8 = 44
    public static let certificateUnknown: UInt8 = 46
    public static let illegalParameter: UInt8 = 47
    public static let unknownCA: UInt8 = 48
    public static let decodeError: UInt8 = 50
    public static let decryptError: UInt8 = 51
    public static let protocolVersion: UInt8 = 70
    public static let insufficientSecurity: UInt8 = 71
    public static let certificateRequired: UInt8 = 116

    /// Names of the alerts of RFC 5246, 8446 and their extensions.
    public static let names: [UInt8: String] = [
        0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 21: "decryption_failed",
        22: "record_overflow", 30: "decompression_failure", 40: "handshake_failure", 41: "no_certificate",
        42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked", 45: "certificate_expired",
        46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied",
        50: "decode_error", 51: "decrypt_error", 60: "export_restriction", 70: "protocol_version",
        71: "insufficient_security", 80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled",
        100: "no_renegotiation", 109: "missing_extension", 110: "unsupported_extension",
        111: "certificate_unobtainable", 112: "unrecognized_name", 113: "bad_certificate_status_response",
        114: "bad_certificate_hash_value", 115: "unknown_psk_identity", 116: "certificate_required",
        120: "no_application_protocol", 121: "ech_required",
    ]
}

/// How a connection resumed an earlier session, as far as the engine can tell.
public struct ResumptionMechanism: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A session ticket: RFC 5077 in TLS 1.2, a NewSessionTicket PSK in TLS 1.3 (where every resumption is one).
    public static let ticket = ResumptionMechanism(rawValue: "ticket")
    /// The server's session cache, by session ID (TLS 1.2).
    public static let sessionID = ResumptionMechanism(rawValue: "session-id")
    public var description: String { rawValue }
}
