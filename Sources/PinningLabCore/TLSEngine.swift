public import PinningLabTLSTypes

/// Whether an engine can serve a configuration exactly as written.
public struct EngineSupport: Hashable, Sendable, CustomStringConvertible {
    /// Why the engine cannot serve it; empty when it can.
    public var reasons: [String]
    public init(reasons: [String] = []) { self.reasons = reasons }
    public static let supported = EngineSupport()
    public static func unsupported(_ reason: String) -> EngineSupport { EngineSupport(reasons: [reason]) }
    public var isSupported: Bool { reasons.isEmpty }
    /// All reasons in one sentence, or `nil` when supported.
    public var reason: String? { reasons.isEmpty ? nil : reasons.joined(separator: "; ") }
    public var description: String { reason.map { "unsupported: \($0)" } ?? "supported" }
}

/// A TLS server implementation (OpenSSL, GnuTLS). Engines receive DER certificates and PKCS#8 DER keys only.
///
/// An engine that cannot do what a configuration asks says so in `supports(_:)`; `makeContext(_:)` then throws
/// rather than serving something else.
public protocol TLSEngine: Sendable {
    /// A stable short name: `openssl`, `gnutls`.
    var name: String { get }
    /// The TLS library and its version, e.g. `OpenSSL 3.0.19`.
    var libraryVersion: String { get }
    /// Whether this engine can serve `configuration` exactly; the reasons when it cannot.
    func supports(_ configuration: ServerTLSConfiguration) -> EngineSupport
    /// Builds an immutable server context (certificates parsed, keys loaded) shared by all connections.
    func makeContext(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext
}

extension TLSEngine {
    /// Whether this engine can serve `configuration` exactly, found by validating it and building a context.
    public func supports(_ configuration: ServerTLSConfiguration) -> EngineSupport {
        do {
            try configuration.validate()
            _ = try makeContext(configuration)
            return .supported
        } catch {
            return .unsupported(error.reason)
        }
    }
}

/// An engine's immutable, thread-safe server state for one configuration.
public protocol TLSServerContext: Sendable {
    /// Starts a server-side TLS session over a connected, non-blocking socket. The caller keeps ownership of
    /// the file descriptor and closes it after the session is released.
    func makeSession(socket: Int32) throws(TLSEngineError) -> any TLSServerSession
}

/// One server-side TLS session. Used by one thread at a time; never blocks (the socket is non-blocking).
public protocol TLSServerSession: AnyObject {
    /// Advances the handshake: `.done`, `.wantRead`, `.wantWrite` or `.closed`.
    func handshake() -> TLSStep
    /// Reads application data: `.bytes(n)` with `n > 0`, `.wantRead`, `.wantWrite` or `.closed`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSStep
    /// Writes application data: `.bytes(n)`, `.wantRead`, `.wantWrite` or `.closed`.
    func write(_ buffer: UnsafeRawBufferPointer) -> TLSStep
    /// Sends close_notify without waiting for the peer's.
    func shutdown()
    /// What was negotiated and seen so far.
    var details: TLSSessionDetails { get }
}

/// The result of one non-blocking TLS operation.
public enum TLSStep: Sendable, Hashable {
    case done
    case bytes(Int)
    case wantRead
    case wantWrite
    case closed(TLSTermination)
}

/// How the TLS layer saw a session end.
public struct TLSTermination: Sendable, Hashable, CustomStringConvertible {
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The peer sent a fatal alert (see `TLSSessionDetails.alertReceived`).
        public static let alertReceived = Kind(rawValue: "alert-received")
        /// The peer sent close_notify.
        public static let closeNotify = Kind(rawValue: "close-notify")
        /// TCP EOF without close_notify.
        public static let eof = Kind(rawValue: "eof")
        /// ECONNRESET / EPIPE.
        public static let reset = Kind(rawValue: "reset")
        /// The server failed the handshake (no shared cipher or version, bad client certificate, garbage…);
        /// the alert it sent, if any, is in `TLSSessionDetails.alertSent`.
        public static let protocolError = Kind(rawValue: "protocol-error")
        public var description: String { rawValue }
    }
    public var kind: Kind
    /// The library's own words, e.g. `SSL routines::sslv3 alert bad certificate` or `GNUTLS_E_FATAL_ALERT_RECEIVED`.
    public var detail: String
    public init(_ kind: Kind, _ detail: String = "") {
        self.kind = kind
        self.detail = detail
    }
    public var description: String { detail.isEmpty ? kind.rawValue : "\(kind.rawValue): \(detail)" }
}

/// What a session negotiated and saw.
public struct TLSSessionDetails: Sendable, Hashable {
    public var serverName: String?
    /// Index into the configuration's identities of the one served.
    public var identityIndex: Int?
    public var version: TLSVersion?
    /// IANA name, e.g. `TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`.
    public var cipherSuite: String?
    /// The key-exchange group the handshake negotiated, as the library names it (`X25519`, `secp256r1`,
    /// `X25519MLKEM768`); `nil` when none was (no handshake, a TLS 1.2 RSA key exchange, a resumption without one).
    public var negotiatedGroup: String?
    public var alpn: String?
    /// The first alert the peer sent, if any.
    public var alertReceived: TLSAlert?
    /// The first alert the server sent, if any.
    public var alertSent: TLSAlert?
    /// The certificates the client presented, as sent (DER), with subjects (RFC 4514).
    public var clientCertificates: [ObservedCertificate]
    /// Whether the client sent a Certificate message at all (it may be empty).
    public var clientCertificateMessageSeen: Bool
    /// The certificates the server put on the wire (DER), as captured from its own Certificate message.
    public var serverCertificatesSent: [[UInt8]]?
    /// How the client resumed an earlier session; `nil` for a full handshake.
    public var resumption: ResumptionMechanism?
    /// Bytes of application data the client sent as TLS 1.3 early data (0-RTT) and the engine accepted; the
    /// session hands them to `read(into:)` first, before what arrives after the handshake.
    public var earlyDataBytes = 0
    /// Whether the ClientHello carried `encrypted_client_hello` (``ClientHelloECH``); `nil` when the engine did not see it.
    public var echOffered: Bool?
    /// What the (first) ClientHello offered: groups, key shares, signature algorithms; `nil` when the engine did not
    /// see it.
    public var offered: ClientHelloOffers?
    /// Whether the server sent a HelloRetryRequest (a second ClientHello followed, or would have).
    public var helloRetryRequest = false

    public init(
        serverName: String? = nil, identityIndex: Int? = nil, version: TLSVersion? = nil, cipherSuite: String? = nil,
        alpn: String? = nil, alertReceived: TLSAlert? = nil, alertSent: TLSAlert? = nil,
        clientCertificates: [ObservedCertificate] = [], clientCertificateMessageSeen: Bool = false,
        serverCertificatesSent: [[UInt8]]? = nil
    ) {
        self.serverName = serverName
        self.identityIndex = identityIndex
        self.version = version
        self.cipherSuite = cipherSuite
        self.alpn = alpn
        self.alertReceived = alertReceived
        self.alertSent = alertSent
        self.clientCertificates = clientCertificates
        self.clientCertificateMessageSeen = clientCertificateMessageSeen
        self.serverCertificatesSent = serverCertificatesSent
    }
}

/// An error building or running an engine. Equality compares the code only, so tests can match errors.
public struct TLSEngineError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case unsupported, invalidConfiguration, library, io
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// The engine cannot serve this configuration exactly.
        public static let unsupported = Code(.unsupported)
        /// The configuration is malformed (empty chain, unparsable certificate or key…).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The TLS library failed.
        public static let library = Code(.library)
        /// A socket operation failed.
        public static let io = Code(.io)
        public var description: String { base.rawValue }
    }
    public var code: Code
    public var reason: String
    public var file: String
    public var line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
    public var description: String { "\(code): \(reason)" }
    public static func == (a: TLSEngineError, b: TLSEngineError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
