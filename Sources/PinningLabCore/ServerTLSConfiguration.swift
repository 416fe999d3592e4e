public import PinningLabPKI
public import PinningLabTLSTypes

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
    /// The key-exchange groups the server accepts, in its order of preference (`SSL_CTX_set1_groups_list`, GnuTLS
    /// `-GROUP-ALL:+GROUP-…`); nil: the library's default. A client that offers one of them without a key share is
    /// answered with a HelloRetryRequest. A group the linked library does not know makes the server `unsupported`.
    public var groups: [TLSCodePoint]? = nil
    /// Whether identities that answer the same host names are alternatives chosen by the client's
    /// `signature_algorithms` (a host holding an ECDSA and an RSA certificate): the first, in the configuration's
    /// order, whose key can sign with a scheme the client offered; the first of them when none can. False: the
    /// first identity that matches the SNI, whatever the client offered.
    public var choosesBySignatureAlgorithms = false
    /// What the server does with an Encrypted Client Hello it holds the key for; nil: it holds none and rejects every
    /// offer without retry configs (serving the certificate for the outer name). No engine of this build has ECH
    /// server support, so a configuration that sets it is `unsupported`, with the library's version.
    public var encryptedClientHello: EncryptedClientHelloService? = nil

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
    public static func makeServerConfiguration(_ identity: Identity, chain: [[UInt8]]? = nil) -> ServerTLSConfiguration
    {
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

    /// The identity chosen for a ClientHello: by SNI, then, when ``choosesBySignatureAlgorithms``, among the
    /// identities with the same host names as that one, the first whose key can sign with a scheme in `offered`.
    public func identityIndex(forServerName serverName: String?, offered: ClientHelloOffers?) -> Int {
        let first = identityIndex(forServerName: serverName)
        guard choosesBySignatureAlgorithms, let offered, !offered.signatureAlgorithms.isEmpty else { return first }
        let names = identities[first].serverNames
        let schemes = Set(offered.signatureAlgorithms.map(\.value))
        return identities.indices.first { i in
            let signs = TLSCodePoint.signatureSchemes(forPKCS8: identities[i].privateKeyPKCS8DER)
            return identities[i].serverNames == names && signs.contains(where: schemes.contains)
        } ?? first
    }

    /// Checks what no engine could serve. Engines add their own limits in `TLSEngine.supports(_:)`.
    public func validate() throws(TLSEngineError) {
        if identities.isEmpty {
            throw TLSEngineError(
                .invalidConfiguration, "the configuration has no identity: give at least one chain and key")
        }
        for (i, identity) in identities.enumerated() {
            let label = identity.name.isEmpty ? "identity \(i)" : "identity '\(identity.name)'"
            if identity.chainDER.isEmpty {
                throw TLSEngineError(
                    .invalidConfiguration, "\(label) has an empty chain: give at least one certificate")
            }
            if identity.chainDER.contains(where: \.isEmpty) {
                throw TLSEngineError(.invalidConfiguration, "\(label) has an empty certificate in its chain")
            }
            if identity.privateKeyPKCS8DER.isEmpty {
                throw TLSEngineError(.invalidConfiguration, "\(label) has no private key")
            }
        }
        if let staple = ocspStaple, staple.isEmpty {
            throw TLSEngineError(
                .invalidConfiguration, "the OCSP staple is empty: give a DER OCSPResponse, or nil for none")
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
