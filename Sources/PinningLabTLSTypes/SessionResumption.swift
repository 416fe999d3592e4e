/// How a fixture server lets clients resume sessions (RFC 5246 session IDs, RFC 5077 / RFC 8446 tickets).
///
/// TLS 1.3 has no session IDs: its resumption is always by a ticket (a PSK identity), so `.sessionIDs` alone
/// resumes TLS 1.2 only and issues no TLS 1.3 ticket, on both engines.
public struct SessionResumption: Hashable, Sendable, CustomStringConvertible {
    /// Which mechanisms the server offers.
    public struct Mode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// No session cache, no tickets: every connection is a full handshake (the default).
        public static let off = Mode(rawValue: "off")
        /// A server-side session cache keyed by session ID (TLS 1.2).
        public static let sessionIDs = Mode(rawValue: "ids")
        /// Session tickets (TLS 1.2 RFC 5077 tickets, TLS 1.3 NewSessionTicket).
        public static let tickets = Mode(rawValue: "tickets")
        /// Both.
        public static let both = Mode(rawValue: "both")
        public static let all: [Mode] = [.off, .sessionIDs, .tickets, .both]
        public var description: String { rawValue }
        public var sessionIDs: Bool { self == .sessionIDs || self == .both }
        public var tickets: Bool { self == .tickets || self == .both }
    }

    public var mode: Mode
    /// The ticket key shared by every server configured with the same key: the servers that stand for one party
    /// (an interceptor answering two host names) accept each other's tickets. `nil`: a key of this server's own,
    /// made afresh with each context (so a rotated server cannot decrypt the tickets it issued before).
    public var ticketKey: SessionTicketKey?
    /// TLS 1.3 0-RTT: how many bytes of early data a client resuming one of this server's tickets may send (the
    /// limit goes into the tickets). 0, the default, allows none: the server rejects early data and a client must
    /// send its request after the handshake. Needs tickets.
    public var maxEarlyData: UInt32

    public init(_ mode: Mode, ticketKey: SessionTicketKey? = nil, maxEarlyData: UInt32 = 0) {
        self.mode = mode
        self.ticketKey = ticketKey
        self.maxEarlyData = maxEarlyData
    }

    /// Whether resumed clients may send early data.
    public var allowsEarlyData: Bool { maxEarlyData > 0 && mode.tickets }

    public static let off = SessionResumption(.off)
    public var isEnabled: Bool { mode != .off }
    public var description: String {
        var text = ticketKey.map { "\(mode) (ticket key '\($0.name)')" } ?? mode.rawValue
        if allowsEarlyData { text += ", early data up to \(maxEarlyData) bytes" }
        return text
    }
}

/// A session-ticket key a set of servers shares. Its bytes are random, made when the value is made (once per run),
/// never derived from a seed, never printed; two keys are equal only when they are the same key (same bytes), so
/// two parties that happen to use the same name still reject each other's tickets.
public struct SessionTicketKey: Hashable, Sendable, CustomStringConvertible {
    /// A name for logs and reports, e.g. `interceptor`.
    public let name: String
    /// 80 random bytes: OpenSSL's ticket key layout (16 name, 32 HMAC, 32 AES); GnuTLS takes the first 64.
    package let bytes: [UInt8]

    public init(name: String) {
        self.name = name
        var generator = SystemRandomNumberGenerator()
        bytes = (0..<80).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    public var description: String { "ticket key '\(name)'" }
}
