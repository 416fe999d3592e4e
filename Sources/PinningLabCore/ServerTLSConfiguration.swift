public import PinningLabPKI

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

/// Engine-specific cipher restrictions. `nil` leaves that engine's default. A restriction given for one engine
/// only makes the other engine report the configuration unsupported, so a scenario never silently runs with
/// different ciphers on different engines.
public struct CipherPreferences: Hashable, Sendable, Codable {
    /// OpenSSL cipher list for TLS 1.2 and older (`SSL_CTX_set_cipher_list`), e.g. `ECDHE-ECDSA-AES128-GCM-SHA256`.
    public var openSSLCipherList: String?
    /// OpenSSL TLS 1.3 cipher suites (`SSL_CTX_set_ciphersuites`), e.g. `TLS_AES_128_GCM_SHA256`.
    public var openSSLCipherSuites: String?
    /// A GnuTLS priority string (`gnutls_priority_init`), e.g. `NORMAL:-CIPHER-ALL:+AES-128-GCM`. The engine
    /// appends the version restriction of the configuration.
    public var gnuTLSPriority: String?

    public init(openSSLCipherList: String? = nil, openSSLCipherSuites: String? = nil, gnuTLSPriority: String? = nil) {
        self.openSSLCipherList = openSSLCipherList
        self.openSSLCipherSuites = openSSLCipherSuites
        self.gnuTLSPriority = gnuTLSPriority
    }

    public var restrictsOpenSSL: Bool { openSSLCipherList != nil || openSSLCipherSuites != nil }
    public var restrictsGnuTLS: Bool { gnuTLSPriority != nil }
    public var isDefault: Bool { !restrictsOpenSSL && !restrictsGnuTLS }
}

/// One certificate chain and key the server can present, chosen by SNI.
public struct ServerIdentity: Hashable, Sendable {
    /// A name for logs and observations, e.g. `leaf-v1`.
    public var name: String
    /// The certificates to send, exactly in this order (DER). Normally the leaf first and its issuers after it;
    /// incomplete, reversed and stuffed chains are served as given.
    public var chainDER: [[UInt8]]
    /// The PKCS#8 DER private key the server signs with (the key of `chainDER[0]` in every sane chain).
    public var privateKeyPKCS8DER: [UInt8]
    /// SNI host names this identity answers (exact, or `*.example.test`). The first identity of a configuration
    /// is also the default for unknown or absent names.
    public var serverNames: [String]
    /// A TLS-encoded `SignedCertificateTimestampList` to send in the `signed_certificate_timestamp` extension
    /// (type 18, RFC 6962 §3.3) to a client that asks for it: in the ServerHello up to TLS 1.2, in the first
    /// certificate's entry in TLS 1.3. An engine that cannot send it refuses the configuration as unsupported.
    public var signedCertificateTimestampList: [UInt8]?

    public init(
        name: String = "", chainDER: [[UInt8]], privateKeyPKCS8DER: [UInt8], serverNames: [String] = [],
        signedCertificateTimestampList: [UInt8]? = nil
    ) {
        self.name = name
        self.chainDER = chainDER
        self.privateKeyPKCS8DER = privateKeyPKCS8DER
        self.serverNames = serverNames
        self.signedCertificateTimestampList = signedCertificateTimestampList
    }

    /// The identity of a PKI entity: its certificate then its issuers without the root, unless `chain` says
    /// otherwise.
    /// The SCT list of the PKI entity (`tlsSCTs:` in the spec) goes with it when its certificate is served first.
    public init(_ identity: Identity, chain: [[UInt8]]? = nil, serverNames: [String]? = nil) {
        let chainDER = chain ?? identity.servedChainDER
        self.init(
            name: identity.name, chainDER: chainDER,
            privateKeyPKCS8DER: identity.privateKeyPKCS8DER, serverNames: serverNames ?? identity.hosts,
            signedCertificateTimestampList: chainDER.first == identity.certificateDER
                ? identity.signedCertificateTimestampList : nil)
    }

    /// Whether this identity answers `serverName` (case-insensitive; `*.x` matches one label).
    public func matches(serverName: String) -> Bool {
        let name = serverName.lowercased()
        for pattern in serverNames.map({ $0.lowercased() }) {
            if pattern == name { return true }
            if pattern.hasPrefix("*.") {
                let suffix = pattern.dropFirst(1)
                if name.hasSuffix(suffix), !name.dropLast(suffix.count).contains("."),
                    name.count > suffix.count
                {
                    return true
                }
            }
        }
        return false
    }
}

/// What a fixture server presents and negotiates. A plain mutable struct: start from a `make…` factory and set
/// what the scenario needs.
public struct ServerTLSConfiguration: Hashable, Sendable {
    /// At least one; the first is the default when the client sends no SNI or an unknown one.
    public var identities: [ServerIdentity]
    public var minimumVersion: TLSVersion
    public var maximumVersion: TLSVersion
    public var ciphers: CipherPreferences
    public var clientAuthentication: ClientAuthentication
    /// Roots the server trusts for client certificates (DER); also announced in the CertificateRequest.
    public var clientTrustRootsDER: [[UInt8]]
    /// ALPN protocols the server selects from, in its order of preference; empty disables ALPN.
    public var alpnProtocols: [String]
    /// Whether (and how) a client may resume a session: off by default, so that every connection is a full
    /// handshake and the client verifies the chain every time.
    public var resumption: SessionResumption
    /// An OCSP response (DER `OCSPResponse`) stapled for every client that sends status_request; nil: none.
    /// Served as given, whatever it says: a scenario may staple a revoked, expired or badly signed response.
    public var ocspStaple: [UInt8]? = nil

    public init(
        identities: [ServerIdentity], minimumVersion: TLSVersion = .tls12, maximumVersion: TLSVersion = .tls13,
        ciphers: CipherPreferences = .init(), clientAuthentication: ClientAuthentication = .none,
        clientTrustRootsDER: [[UInt8]] = [], alpnProtocols: [String] = ["http/1.1"],
        resumption: SessionResumption = .off
    ) {
        self.resumption = resumption
        self.identities = identities
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.ciphers = ciphers
        self.clientAuthentication = clientAuthentication
        self.clientTrustRootsDER = clientTrustRootsDER
        self.alpnProtocols = alpnProtocols
    }

    /// A server presenting `chainDER` exactly, signing with `privateKeyPKCS8DER`, TLS 1.2–1.3, no client auth,
    /// ALPN `http/1.1`.
    public static func makeServerConfiguration(
        chainDER: [[UInt8]], privateKeyPKCS8DER: [UInt8], name: String = "", serverNames: [String] = []
    ) -> ServerTLSConfiguration {
        ServerTLSConfiguration(identities: [
            ServerIdentity(
                name: name, chainDER: chainDER, privateKeyPKCS8DER: privateKeyPKCS8DER, serverNames: serverNames)
        ])
    }

    /// A server presenting a PKI identity (its served chain unless `chain` is given).
    public static func makeServerConfiguration(_ identity: Identity, chain: [[UInt8]]? = nil) -> ServerTLSConfiguration {
        ServerTLSConfiguration(identities: [ServerIdentity(identity, chain: chain)])
    }

    /// The versions in `minimumVersion...maximumVersion` that the lab knows, oldest first.
    public var versions: [TLSVersion] { TLSVersion.all.filter { $0 >= minimumVersion && $0 <= maximumVersion } }

    /// Restricts the server to exactly one version.
    public mutating func setVersion(_ version: TLSVersion) {
        minimumVersion = version
        maximumVersion = version
    }

    /// The identity chosen for a ClientHello's SNI (`nil`: none sent): the first that matches, else the first.
    public func identityIndex(forServerName serverName: String?) -> Int {
        guard let serverName, !serverName.isEmpty else { return 0 }
        return identities.firstIndex { $0.matches(serverName: serverName) } ?? 0
    }

    /// Checks what no engine could serve. Engines add their own limits in `TLSEngine.supports(_:)`.
    public func validate() throws(TLSEngineError) {
        if identities.isEmpty {
            throw TLSEngineError(.invalidConfiguration, "the configuration has no identity: give at least one chain and key")
        }
        for (i, identity) in identities.enumerated() {
            let label = identity.name.isEmpty ? "identity \(i)" : "identity '\(identity.name)'"
            if identity.chainDER.isEmpty {
                throw TLSEngineError(.invalidConfiguration, "\(label) has an empty chain: give at least one certificate")
            }
            if identity.chainDER.contains(where: \.isEmpty) {
                throw TLSEngineError(.invalidConfiguration, "\(label) has an empty certificate in its chain")
            }
            if identity.privateKeyPKCS8DER.isEmpty {
                throw TLSEngineError(.invalidConfiguration, "\(label) has no private key")
            }
        }
        if let staple = ocspStaple, staple.isEmpty {
            throw TLSEngineError(.invalidConfiguration, "the OCSP staple is empty: give a DER OCSPResponse, or nil for none")
        }
        if minimumVersion > maximumVersion {
            throw TLSEngineError(
                .invalidConfiguration,
                "minimum version \(minimumVersion) is above maximum version \(maximumVersion)")
        }
        if minimumVersion.wireValue == nil || maximumVersion.wireValue == nil {
            throw TLSEngineError(
                .invalidConfiguration,
                "unknown TLS version '\(minimumVersion.wireValue == nil ? minimumVersion : maximumVersion)': use one of \(TLSVersion.all.map(\.rawValue).joined(separator: ", "))"
            )
        }
        for proto in alpnProtocols where proto.isEmpty || proto.utf8.count > 255 {
            throw TLSEngineError(.invalidConfiguration, "ALPN protocol '\(proto)' must be 1 to 255 bytes")
        }
        // HTTP/2 is offered only when it can be spoken: never a negotiated h2 that nothing answers.
        if alpnProtocols.contains(HTTP2.alpn), let why = HTTP2.availability.unavailableReason {
            throw TLSEngineError(.unsupported, why)
        }
    }
}

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
