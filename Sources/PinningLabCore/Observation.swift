public import Foundation
import PinningLabBase
import PinningLabPKI
public import PinningLabTLSTypes

/// A certificate as seen on the wire.
public struct ObservedCertificate: Hashable, Sendable, Codable {
    public var der: [UInt8]
    /// RFC 4514 subject, e.g. `CN=client,O=PinningLab`, when the engine could parse it.
    public var subject: String?

    public init(der: [UInt8], subject: String? = nil) {
        self.der = der
        self.subject = subject
    }

    enum CodingKeys: String, CodingKey { case der, subject }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let b64 = try c.decode(String.self, forKey: .der)
        guard let data = Data(base64Encoded: b64) else {
            throw DecodingError.dataCorruptedError(forKey: .der, in: c, debugDescription: "not base64")
        }
        der = Array(data)
        subject = try c.decodeIfPresent(String.self, forKey: .subject)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Data(der).base64EncodedString(), forKey: .der)
        try c.encodeIfPresent(subject, forKey: .subject)
    }
}

/// What one connection to a fixture server did: the oracle of whether the client trusted the server.
///
/// A client *accepted* when it sent application data (`applicationDataReceived`, with its `requestLine`); it
/// *refused* when it closed or alerted before that.
public struct Observation: Hashable, Sendable, Codable, Identifiable {
    /// How a connection ended. A struct so that it can grow.
    public struct Closure: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The request was answered and the server closed: the normal end of an accepting client.
        public static let responseSent = Closure(rawValue: "response-sent")
        /// The client sent a fatal alert (see `alertReceived`).
        public static let alert = Closure(rawValue: "alert")
        /// TCP EOF before the handshake completed, without an alert.
        public static let eofBeforeHandshake = Closure(rawValue: "eof-before-handshake")
        /// The handshake completed, then the client closed (EOF or close_notify) without sending data: typical
        /// of a client that checks its pins after the handshake.
        public static let closedAfterHandshake = Closure(rawValue: "closed-after-handshake")
        /// The client sent part of a request, then closed.
        public static let closedDuringRequest = Closure(rawValue: "closed-during-request")
        /// ECONNRESET / EPIPE.
        public static let reset = Closure(rawValue: "reset")
        /// The server failed the handshake (see `alertSent` and `error`): garbage, no common version or
        /// cipher, a missing or bad client certificate.
        public static let handshakeFailed = Closure(rawValue: "handshake-failed")
        /// A TLS error after the handshake (e.g. a bad record).
        public static let protocolError = Closure(rawValue: "protocol-error")
        /// The handshake did not finish within the handshake timeout.
        public static let handshakeTimeout = Closure(rawValue: "handshake-timeout")
        /// The client went quiet after the handshake for longer than the idle timeout.
        public static let idleTimeout = Closure(rawValue: "idle-timeout")
        /// The server stopped while the connection was open.
        public static let serverStopped = Closure(rawValue: "server-stopped")
        public var description: String { rawValue }
    }

    /// 1, 2, 3… per server, in order of acceptance.
    public var id: Int
    /// The server's label (scenario id).
    public var label: String
    public var engine: String
    /// When the connection was accepted.
    public var startedAt: Date
    /// `127.0.0.1:53412`, `[::1]:53412`.
    public var peerAddress: String
    /// The SNI host name the client sent.
    public var serverName: String?
    /// The name of the identity served (chosen by SNI).
    public var identity: String?
    /// Rotation generation of the configuration that served this connection (0 before any rotation).
    public var generation: Int
    public var handshakeCompleted: Bool
    /// The first alert the client sent (close_notify included).
    public var alertReceived: TLSAlert?
    /// The first alert the server sent.
    public var alertSent: TLSAlert?
    public var closure: Closure
    /// The engine's or the server's words on a failure.
    public var error: String?
    public var tlsVersion: TLSVersion?
    public var cipherSuite: String?
    /// The key-exchange group negotiated (`X25519`, `X25519MLKEM768`), as the engine's library names it; `nil` when
    /// none was, or the engine could not say.
    public var negotiatedGroup: String?
    public var alpn: String?
    /// Whether the handshake resumed an earlier session (no certificate was sent, none was verified).
    public var resumed: Bool
    /// By which mechanism it resumed; `nil` for a full handshake.
    public var resumption: ResumptionMechanism?
    /// How many bytes of application data arrived as TLS 1.3 early data (0-RTT), before the handshake completed:
    /// counted by the server whether or not the handshake then completed. 0 when none arrived, or none was allowed.
    public var earlyDataBytes: Int = 0
    /// The client's certificate chain as it sent it; empty when it sent none.
    public var clientCertificates: [ObservedCertificate]
    /// The certificates the server sent, captured from its own Certificate message, when the engine can.
    public var serverCertificates: [ObservedCertificate]?
    /// Whether the client sent any application data: the oracle of "the client trusted this server".
    public var applicationDataReceived: Bool
    public var bytesReceived: Int
    /// The HTTP request line, e.g. `GET / HTTP/1.1`; over HTTP/2, the first stream's (`GET / HTTP/2`).
    public var requestLine: String?
    /// Over HTTP/2 (ALPN `h2`): every stream the client opened on this connection, in order, each with the
    /// `:authority` it asked for; `nil` over HTTP/1.1.
    public var http2Streams: [HTTP2Stream]?
    public var handshakeMilliseconds: Double?
    public var totalMilliseconds: Double
    /// Whether the ClientHello carried `encrypted_client_hello` (0xfe0d, RFC 9849): the client offered ECH (or sent
    /// a GREASE offer, which looks the same). No engine of the lab accepts ECH, so an offer is always rejected: the
    /// handshake ran on the outer ClientHello, whose SNI (`serverName`) is the configuration's public name. `nil`
    /// where the engine could not see the ClientHello.
    public var echOffered: Bool?
    /// What the client's ClientHello offered (the first one, when there were two): the groups of `supported_groups`,
    /// those it sent key shares for, and its `signature_algorithms`, as IANA code points with their names
    /// (`X25519MLKEM768 (0x11ec)`). `nil` where the engine did not see a ClientHello it could parse.
    public var offered: ClientHelloOffers?
    /// Whether the server answered the ClientHello with a HelloRetryRequest (TLS 1.3: no key share for a group the
    /// server accepts); `nil` where the engine could not see the ClientHello.
    public var helloRetryRequest: Bool?

    /// The SHA-256 of the certificate the server sent first (base64, as a `leaf-cert` pin and a report's chain
    /// write it): which certificate this client was served, when the engine captured it.
    public var servedCertificateSHA256: String? {
        guard let der = serverCertificates?.first?.der else { return nil }
        return (try? Pins(certificateDER: der))?.certificateBase64
    }

    public init(
        id: Int, label: String, engine: String, startedAt: Date, peerAddress: String, serverName: String? = nil,
        identity: String? = nil, generation: Int = 0, handshakeCompleted: Bool, alertReceived: TLSAlert? = nil,
        alertSent: TLSAlert? = nil, closure: Closure, error: String? = nil, tlsVersion: TLSVersion? = nil,
        cipherSuite: String? = nil, alpn: String? = nil, resumption: ResumptionMechanism? = nil,
        clientCertificates: [ObservedCertificate] = [],
        serverCertificates: [ObservedCertificate]? = nil, applicationDataReceived: Bool, bytesReceived: Int = 0,
        requestLine: String? = nil, http2Streams: [HTTP2Stream]? = nil, handshakeMilliseconds: Double? = nil,
        totalMilliseconds: Double, earlyDataBytes: Int = 0
    ) {
        self.earlyDataBytes = earlyDataBytes
        self.id = id
        self.label = label
        self.engine = engine
        self.startedAt = startedAt
        self.peerAddress = peerAddress
        self.serverName = serverName
        self.identity = identity
        self.generation = generation
        self.handshakeCompleted = handshakeCompleted
        self.alertReceived = alertReceived
        self.alertSent = alertSent
        self.closure = closure
        self.error = error
        self.tlsVersion = tlsVersion
        self.cipherSuite = cipherSuite
        self.alpn = alpn
        self.resumed = resumption != nil
        self.resumption = resumption
        self.clientCertificates = clientCertificates
        self.serverCertificates = serverCertificates
        self.applicationDataReceived = applicationDataReceived
        self.bytesReceived = bytesReceived
        self.requestLine = requestLine
        self.http2Streams = http2Streams
        self.handshakeMilliseconds = handshakeMilliseconds
        self.totalMilliseconds = totalMilliseconds
    }

    /// The client proceeded past certificate validation and sent its request.
    public var clientAccepted: Bool { applicationDataReceived }

    /// The subject of the client's own certificate, if it presented one.
    public var clientCertificateSubject: String? { clientCertificates.first?.subject }

    /// One line of JSON (for `--log`).
    public func jsonLine() -> String {
        (try? JSONOutput.line(self)) ?? "{}"
    }
}

/// Parses the body of a TLS Certificate handshake message (without or with its 4-byte header) into DER
/// certificates. Engines use it to record exactly what went over the wire.
public enum TLSCertificateMessage {
    /// - Parameters:
    ///   - message: the handshake message; a leading header (type 11 + 3-byte length) is skipped when present.
    ///   - tls13: TLS 1.3 layout (request context, per-certificate extensions).
    public static func parse(_ message: UnsafeRawBufferPointer, tls13: Bool) -> [[UInt8]]? {
        var bytes = Array(message)
        if bytes.count >= 4, bytes[0] == 11,
            Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3]) == bytes.count - 4
        {
            bytes.removeFirst(4)
        }
        return parse(body: bytes, tls13: tls13)
    }

    public static func parse(body: [UInt8], tls13: Bool) -> [[UInt8]]? {
        var i = 0
        func u(_ n: Int) -> Int? {
            guard i + n <= body.count else { return nil }
            var v = 0
            for k in 0..<n { v = v << 8 | Int(body[i + k]) }
            i += n
            return v
        }
        if tls13 {
            guard let ctx = u(1), i + ctx <= body.count else { return nil }
            i += ctx
        }
        guard let total = u(3), i + total <= body.count else { return nil }
        let end = i + total
        var certs: [[UInt8]] = []
        while i < end {
            guard let len = u(3), i + len <= end else { return nil }
            certs.append(Array(body[i..<(i + len)]))
            i += len
            if tls13 {
                guard let ext = u(2), i + ext <= end else { return nil }
                i += ext
            }
        }
        return certs
    }
}
