internal import CPinningLabOpenSSL
internal import Foundation
import PinningLabBase
public import PinningLabCore
internal import PinningLabPKI  // Locked
import PinningLabTLSTypes

/// The OpenSSL (libssl 3) fixture engine.
///
/// Serves exactly the configured chain: `SSL_CTX_use_certificate` for the first certificate and
/// `SSL_CTX_add0_chain_cert` for the rest, with `SSL_MODE_NO_AUTO_CHAIN` so nothing is added from a store.
/// A message callback records the alerts and Certificate messages that cross the wire. One `SSL_CTX` per SNI
/// identity, switched in the servername callback. TLS 1.0/1.1 run at security level 0.
public struct OpenSSLEngine: TLSEngine {
    public init() {}
    public var name: String { "openssl" }
    public var libraryVersion: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }

    public func makeContext(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext {
        try OpenSSLServerContext(configuration)
    }
}

/// One `SSL_CTX` per identity, configured identically but for the certificate.
// immutable after init; SSL_new on a shared SSL_CTX is thread-safe
final class OpenSSLServerContext: TLSServerContext, @unchecked Sendable {
    let contexts: [SSLContextHandle]
    let configuration: ServerTLSConfiguration
    /// ALPN protocols in wire format (length-prefixed), kept for the select callback's output pointer.
    let alpnWire: UnsafeMutableBufferPointer<UInt8>
    /// The ticket key of every context: the configuration's shared key, or one of this context's own.
    let ticketKey: [UInt8]

    init(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) {
        self.configuration = configuration
        ticketKey = configuration.resumption.ticketKey?.bytes ?? SessionTicketKey(name: "own").bytes
        if let ech = configuration.encryptedClientHello {
            throw TLSEngineError(
                .unsupported, ech.unsupportedReason(library: String(cString: OpenSSL_version(OPENSSL_VERSION))))
        }
        if configuration.ciphers.restrictsGnuTLS && !configuration.ciphers.restrictsOpenSSL {
            throw TLSEngineError(
                .unsupported,
                "the cipher restriction is given only as a GnuTLS priority string; add openSSLCipherList/openSSLCipherSuites"
            )
        }
        var wire: [UInt8] = []
        for p in configuration.alpnProtocols {
            wire.append(UInt8(p.utf8.count))
            wire.append(contentsOf: p.utf8)
        }
        alpnWire = .allocate(capacity: max(wire.count, 1))
        _ = alpnWire.initialize(from: wire)
        var built: [SSLContextHandle] = []
        do {
            for identity in configuration.identities {
                built.append(try Self.makeContext(configuration, identity))
            }
        } catch {
            alpnWire.deallocate()
            throw error
        }
        contexts = built
        let resumption = configuration.resumption.mode
        for ctx in contexts.map(\.pointer) where resumption != .off {
            // Every context gets the same ID context and key: the servername callback switches contexts, and OpenSSL
            // keeps the cache and ticket keys of the first.
            let ok = ticketKey.withUnsafeBufferPointer {
                cpl_srv_ctx_resumption(
                    ctx, resumption.sessionIDs ? 1 : 0, resumption.tickets ? 1 : 0, $0.baseAddress,
                    openSSLTicketCallback)
            }
            guard ok == 1 else {
                alpnWire.deallocate()
                throw TLSEngineError(.library, "session resumption (\(resumption)): \(drainOpenSSLErrors())")
            }
            if configuration.resumption.allowsEarlyData,
                cpl_srv_ctx_early_data(ctx, configuration.resumption.maxEarlyData) != 1
            {
                alpnWire.deallocate()
                throw TLSEngineError(.library, "early data: \(drainOpenSSLErrors())")
            }
        }
        for ctx in contexts.map(\.pointer) {
            SSL_CTX_set_msg_callback(ctx, openSSLMessageCallback)
            cpl_srv_ctx_set_servername_callback(ctx, openSSLServerNameCallback)
            if !configuration.alpnProtocols.isEmpty {
                SSL_CTX_set_alpn_select_cb(ctx, openSSLALPNCallback, nil)
            }
            if configuration.ocspStaple != nil {
                cpl_srv_ctx_set_status_callback(ctx, openSSLStatusCallback)
            }
        }
    }

    deinit { alpnWire.deallocate() }

    static func version(_ v: TLSVersion) -> Int32 {
        switch v {
        case .tls10: return TLS1_VERSION
        case .tls11: return TLS1_1_VERSION
        case .tls12: return TLS1_2_VERSION
        default: return TLS1_3_VERSION
        }
    }

    private static func makeContext(_ c: ServerTLSConfiguration, _ identity: ServerIdentity) throws(TLSEngineError)
        -> SSLContextHandle
    {
        ERR_clear_error()
        guard let handle = SSLContextHandle(server: true) else {
            throw TLSEngineError(.library, "SSL_CTX_new: \(drainOpenSSLErrors())")
        }
        let ctx = handle.pointer  // the handle frees it, whatever fails below
        let label = identity.name.isEmpty ? "the identity" : "identity '\(identity.name)'"
        cpl_srv_ctx_defaults(ctx)
        // Security level 0: a fixture serves weak keys, SHA-1 signatures and TLS 1.0/1.1 on purpose (OpenSSL 3
        // refuses to even load an RSA-1024 or SHA-1 certificate above level 0). What is acceptable is for the client
        // under test to decide.
        SSL_CTX_set_security_level(ctx, 0)
        guard cpl_srv_ctx_set_min_proto_version(ctx, version(c.minimumVersion)) == 1,
            cpl_srv_ctx_set_max_proto_version(ctx, version(c.maximumVersion)) == 1
        else {
            throw TLSEngineError(
                .unsupported,
                "this OpenSSL cannot offer \(c.minimumVersion)–\(c.maximumVersion): \(drainOpenSSLErrors())")
        }
        if let groups = c.groups {
            try OpenSSLServerSession.setGroups(groups, ctx)
        }
        let cipherList = c.ciphers.openSSLCipherList ?? (c.minimumVersion.isLegacy ? "DEFAULT:@SECLEVEL=0" : nil)
        if let list = cipherList, SSL_CTX_set_cipher_list(ctx, list) != 1 {
            throw TLSEngineError(
                .invalidConfiguration, "openSSLCipherList '\(list)' selects no cipher: \(drainOpenSSLErrors())")
        }
        if let suites = c.ciphers.openSSLCipherSuites, SSL_CTX_set_ciphersuites(ctx, suites) != 1 {
            throw TLSEngineError(
                .invalidConfiguration, "openSSLCipherSuites '\(suites)' is not valid: \(drainOpenSSLErrors())")
        }
        // The chain, exactly: first certificate, then the rest in order.
        guard let first = DecodedObjects.shared.certificate(identity.chainDER[0]) else {
            throw TLSEngineError(.invalidConfiguration, "\(label): certificate 1 is not DER: \(drainOpenSSLErrors())")
        }
        guard let key = DecodedObjects.shared.key(identity.privateKeyPKCS8DER) else {
            if let unsupported = OpenSSLServerSession.unsupportedKey(identity, label: label) { throw unsupported }
            throw TLSEngineError(
                .invalidConfiguration, "\(label): the private key is not PKCS#8 DER: \(drainOpenSSLErrors())")
        }
        guard X509_check_private_key(first.pointer, key.pointer) == 1 else {
            ERR_clear_error()
            throw TLSEngineError(
                .unsupported,
                "\(label): the private key does not belong to the first certificate of the chain; OpenSSL signs the handshake with the key of the certificate it sends first"
            )
        }
        guard SSL_CTX_use_certificate(ctx, first.pointer) == 1, SSL_CTX_use_PrivateKey(ctx, key.pointer) == 1 else {
            throw TLSEngineError(
                .unsupported, "\(label): OpenSSL refused the certificate or key: \(drainOpenSSLErrors())")
        }
        for (i, der) in identity.chainDER.dropFirst().enumerated() {
            guard let x = DecodedObjects.shared.certificate(der) else {
                throw TLSEngineError(
                    .invalidConfiguration, "\(label): certificate \(i + 2) is not DER: \(drainOpenSSLErrors())")
            }
            guard cpl_srv_ctx_add1_chain_cert(ctx, x.pointer) == 1 else {
                throw TLSEngineError(.library, "\(label): SSL_CTX_add0_chain_cert: \(drainOpenSSLErrors())")
            }
        }
        // Signed certificate timestamps in the TLS extension: serverinfo version 2 (a 4-byte context, the type,
        // a 2-byte length, the data), offered in the TLS 1.2 ServerHello and the TLS 1.3 leaf's certificate entry
        // when the ClientHello asks for type 18. OpenSSL lets serverinfo carry this one built-in type.
        if let scts = identity.signedCertificateTimestampList {
            let context = UInt32(SSL_EXT_CLIENT_HELLO | SSL_EXT_TLS1_2_SERVER_HELLO | SSL_EXT_TLS1_3_CERTIFICATE)
            guard scts.count <= 0xffff else {
                throw TLSEngineError(
                    .invalidConfiguration,
                    "\(label): the SCT list is \(scts.count) bytes, more than a TLS extension holds")
            }
            var info: [UInt8] = [24, 16, 8, 0].map { UInt8((context >> $0) & 0xff) }
            info += [0, 18, UInt8(scts.count >> 8), UInt8(scts.count & 0xff)] + scts
            guard SSL_CTX_use_serverinfo_ex(ctx, UInt32(SSL_SERVERINFOV2), info, info.count) == 1 else {
                throw TLSEngineError(.library, "\(label): SSL_CTX_use_serverinfo_ex: \(drainOpenSSLErrors())")
            }
        }
        // Client authentication.
        if c.clientAuthentication != .none {
            let store = SSL_CTX_get_cert_store(ctx)
            for (i, der) in c.clientTrustRootsDER.enumerated() {
                guard let x = DecodedObjects.shared.certificate(der) else {
                    throw TLSEngineError(
                        .invalidConfiguration, "clientTrustRootsDER[\(i)] is not DER: \(drainOpenSSLErrors())")
                }
                guard X509_STORE_add_cert(store, x.pointer) == 1 else {
                    throw TLSEngineError(
                        .library, "clientTrustRootsDER[\(i)]: X509_STORE_add_cert: \(drainOpenSSLErrors())")
                }
                guard SSL_CTX_add_client_CA(ctx, x.pointer) == 1 else {
                    throw TLSEngineError(
                        .library, "clientTrustRootsDER[\(i)]: SSL_CTX_add_client_CA: \(drainOpenSSLErrors())")
                }
            }
            SSL_CTX_set_verify(ctx, cpl_srv_verify_peer(c.clientAuthentication == .required ? 1 : 0), nil)
        }
        ERR_clear_error()
        return handle
    }

    func makeSession(socket: Int32) throws(TLSEngineError) -> any TLSServerSession {
        try OpenSSLServerSession(context: self, socket: socket)
    }
}

/// One `SSL` over a non-blocking socket.
final class OpenSSLServerSession: TLSServerSession {
    let ssl: OpaquePointer
    let context: OpenSSLServerContext
    var details = TLSSessionDetails()
    /// The client offered a ticket this server could decrypt.
    fileprivate var ticketDecrypted = false
    /// Early data read before the handshake completed, handed to `read(into:)` first; `nil` once none can come.
    private var earlyData: EarlyDataBuffer? = nil
    /// The client ended its early data, sent none, or is not resuming in TLS 1.3.
    private var earlyDataFinished = false

    init(context: OpenSSLServerContext, socket: Int32) throws(TLSEngineError) {
        self.context = context
        ERR_clear_error()
        guard let ssl = SSL_new(context.contexts[0].pointer) else {
            throw TLSEngineError(.library, "SSL_new: \(drainOpenSSLErrors())")
        }
        self.ssl = ssl  // from here on deinit frees it
        details.identityIndex = 0
        if context.configuration.resumption.allowsEarlyData { earlyData = EarlyDataBuffer() }
        SSL_set_accept_state(ssl)
        guard SSL_set_fd(ssl, socket) == 1 else {
            throw TLSEngineError(.library, "SSL_set_fd: \(drainOpenSSLErrors())")
        }
        // An ex_data slot of its own points back at this session for the C callbacks; the session owns the SSL.
        guard SSL_set_ex_data(ssl, Self.exDataIndex, Unmanaged.passUnretained(self).toOpaque()) == 1 else {
            throw TLSEngineError(.library, "SSL_set_ex_data: \(drainOpenSSLErrors())")
        }
    }

    /// This engine's ex_data index, obtained once from OpenSSL (never the shared slot 0).
    static let exDataIndex: Int32 = cpl_ssl_ex_new_index()

    deinit { SSL_free(ssl) }

    static func from(_ ssl: OpaquePointer?) -> OpenSSLServerSession? {
        guard let ssl, let p = SSL_get_ex_data(ssl, exDataIndex) else { return nil }
        return Unmanaged<OpenSSLServerSession>.fromOpaque(p).takeUnretainedValue()
    }

    func handshake() -> TLSStep {
        if let step = readEarlyData() { return step }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            recordNegotiated()
            return .done
        }
        return failure(rc)
    }

    /// Reads early data until the client ends it (or sent none): `nil` when the handshake may go on, else the step
    /// to return. Runs only while a server that allows early data has not finished reading it.
    private func readEarlyData() -> TLSStep? {
        guard earlyData != nil, !earlyDataFinished else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            ERR_clear_error()
            var n = 0
            let rc = chunk.withUnsafeMutableBytes { SSL_read_early_data(ssl, $0.baseAddress, $0.count, &n) }
            switch rc {
            case SSL_READ_EARLY_DATA_SUCCESS:
                earlyData!.append(chunk.prefix(n))
                details.earlyDataBytes = earlyData!.bytes.count
            case SSL_READ_EARLY_DATA_FINISH:
                earlyDataFinished = true
                return nil
            default:
                return failure(rc)
            }
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSStep {
        if let n = earlyData?.read(into: buffer) { return .bytes(n) }
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        return rc > 0 ? .bytes(Int(rc)) : failure(rc)
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> TLSStep {
        ERR_clear_error()
        let rc = SSL_write(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        return rc > 0 ? .bytes(Int(rc)) : failure(rc)
    }

    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func failure(_ rc: Int32) -> TLSStep {
        let savedErrno = errno
        let code = SSL_get_error(ssl, rc)
        // A handshake the client abandons after the ServerHello (a pin or key-exchange check that refuses) still
        // negotiated its group: a client that requires a hybrid is judged by it. Only with a session: OpenSSL 3.0's
        // SSL_get_negotiated_group reads the session's group for a resumed TLS 1.3 handshake without checking that
        // one is left (a failed resumption has none: that read crashed).
        if code != SSL_ERROR_WANT_READ, code != SSL_ERROR_WANT_WRITE, details.negotiatedGroup == nil,
            SSL_get_session(ssl) != nil
        {
            recordNegotiatedGroup()
        }
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .closed(TLSTermination(.closeNotify))
        case SSL_ERROR_SYSCALL:
            let detail = openSSLErrorQueue()
            if savedErrno == ECONNRESET || savedErrno == EPIPE {
                return .closed(TLSTermination(.reset, String(cString: strerror(savedErrno))))
            }
            return .closed(TLSTermination(.eof, detail))
        default:
            let first = ERR_peek_error()
            let detail = drainOpenSSLErrors()
            if let alert = details.alertReceived, alert.code != 0 {
                return .closed(TLSTermination(.alertReceived, detail))
            }
            if first != 0, cpl_srv_err_reason(first) == cpl_srv_reason_unexpected_eof() {
                // The client hung up first. OpenSSL 3's record layer answers that end of file with a decode_error
                // alert (SSLfatal); it refused nothing, and recorded as sent it made the client's own refusal read as
                // the server's. GnuTLS sends nothing there.
                if details.alertSent?.code == TLSAlert.decodeError { details.alertSent = nil }
                return .closed(TLSTermination(.eof, detail))
            }
            if first != 0, cpl_srv_err_is_sys(first) == 1 {
                return .closed(TLSTermination(.reset, detail))
            }
            return .closed(TLSTermination(.protocolError, detail))
        }
    }

    private func recordNegotiated() {
        let v = SSL_version(ssl)
        details.version = TLSVersion.all.first { Int32($0.wireValue ?? 0) == v }
        if let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_standard_name(cipher) {
            details.cipherSuite = String(cString: name)
        }
        recordNegotiatedGroup()
        var proto: UnsafePointer<UInt8>? = nil
        var len: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &proto, &len)
        if let proto, len > 0 {
            details.alpn = String(decoding: UnsafeBufferPointer(start: proto, count: Int(len)), as: UTF8.self)
        }
        if details.serverName == nil {
            details.serverName = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        }
        if SSL_session_reused(ssl) == 1 {
            // TLS 1.3 resumes by a PSK from a ticket only; TLS 1.2 by a ticket when one was decrypted, else by ID.
            details.resumption = details.version == .tls13 || ticketDecrypted ? .ticket : .sessionID
        }
    }

    /// Subject in RFC 4514 form.
    static func subject(_ der: [UInt8]) -> String? {
        var out = [CChar](repeating: 0, count: 1024)
        let n = der.withUnsafeBufferPointer {
            cpl_srv_subject_rfc2253($0.baseAddress, $0.count, &out, Int32(out.count))
        }
        return n < 0 ? nil : String(decoding: out.prefix(Int(n)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    fileprivate func message(written: Bool, contentType: Int32, bytes: UnsafeRawBufferPointer) {
        if contentType == SSL3_RT_ALERT, bytes.count >= 2 {
            let alert = TLSAlert(code: bytes[1], level: bytes[0])
            if written {
                if details.alertSent == nil { details.alertSent = alert }
            } else if details.alertReceived == nil {
                details.alertReceived = alert
            }
        } else if contentType == SSL3_RT_HANDSHAKE, !written, bytes.count >= 4, bytes[0] == 1 {
            recordECH(clientHello: bytes)
            recordOffers(clientHello: bytes)
        } else if contentType == SSL3_RT_HANDSHAKE, written, bytes.count >= 4, bytes[0] == 2 {
            if ClientHelloOffers.isHelloRetryRequest(serverHello: bytes) { details.helloRetryRequest = true }
        } else if contentType == SSL3_RT_HANDSHAKE, bytes.count >= 4, bytes[0] == 11 {
            let tls13 = SSL_version(ssl) == TLS1_3_VERSION
            guard let certs = TLSCertificateMessage.parse(bytes, tls13: tls13) else { return }
            if written {
                details.serverCertificatesSent = certs
            } else {
                details.clientCertificateMessageSeen = true
                details.clientCertificates = certs.map { ObservedCertificate(der: $0, subject: Self.subject($0)) }
            }
        }
    }

    /// Whether the ClientHello offered ECH (OpenSSL before 4.0 knows no ECH: the extension is read from the raw
    /// message). A second ClientHello (after a HelloRetryRequest) keeps an offer seen in the first.
    private func recordECH(clientHello bytes: UnsafeRawBufferPointer) {
        guard let hello = ClientHelloECH.parse(bytes) else { return }
        details.echOffered = (details.echOffered ?? false) || hello.offered
    }

    fileprivate func selectIdentity() {
        let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        details.serverName = name
        let index = context.configuration.identityIndex(forServerName: name, offered: details.offered)
        details.identityIndex = index
        if index != 0 {
            SSL_set_SSL_CTX(ssl, context.contexts[index].pointer)
        }
    }
}

private let openSSLMessageCallback:
    @convention(c) (Int32, Int32, Int32, UnsafeRawPointer?, Int, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = {
        writeP, _, contentType, buf, len, ssl, _ in
        guard let buf, let session = OpenSSLServerSession.from(ssl) else { return }
        session.message(
            written: writeP != 0, contentType: contentType, bytes: UnsafeRawBufferPointer(start: buf, count: len))
    }

private let openSSLServerNameCallback:
    @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
        ssl, _, _ in
        OpenSSLServerSession.from(ssl)?.selectIdentity()
        return SSL_TLSEXT_ERR_OK
    }

/// Staples the configured OCSP response for a client that sent status_request (the callback runs only then).
private let openSSLStatusCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
    guard let session = OpenSSLServerSession.from(ssl), let staple = session.context.configuration.ocspStaple else {
        return SSL_TLSEXT_ERR_NOACK
    }
    let ok = staple.withUnsafeBufferPointer { cpl_srv_set_ocsp_response(ssl, $0.baseAddress, $0.count) }
    return ok == 1 ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_ALERT_FATAL
}

private let openSSLTicketCallback:
    @convention(c) (
        OpaquePointer?, OpaquePointer?, UnsafePointer<UInt8>?, Int, SSL_TICKET_STATUS, UnsafeMutableRawPointer?
    )
        -> SSL_TICKET_RETURN = { ssl, _, _, _, status, _ in
            if cpl_srv_ticket_decrypted(status) == 1 { OpenSSLServerSession.from(ssl)?.ticketDecrypted = true }
            return cpl_srv_ticket_default(status)
        }

private let openSSLALPNCallback:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?,
        UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { ssl, out, outlen, input, inlen, _ in
        guard let session = OpenSSLServerSession.from(ssl), let out, let outlen else { return SSL_TLSEXT_ERR_NOACK }
        let wire = session.context.alpnWire
        var selected: UnsafeMutablePointer<UInt8>? = nil
        var selectedLen: UInt8 = 0
        let rc = SSL_select_next_proto(&selected, &selectedLen, wire.baseAddress, UInt32(wire.count), input, inlen)
        guard rc == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_NOACK }
        out.pointee = UnsafePointer(selected)
        outlen.pointee = selectedLen
        return SSL_TLSEXT_ERR_OK
    }

/// Decoded certificates and keys, shared between contexts: decoding a PKCS#8 key in OpenSSL 3 costs most of a
/// millisecond, and most scenarios share keys and intermediates. The cache holds handles; a context that uses one
/// takes OpenSSL's own reference (`SSL_CTX_use_certificate` and friends up-ref), so evicting is always safe.
final class DecodedObjects: Sendable {
    static let shared = DecodedObjects()
    private struct Tables {
        var certificates: [[UInt8]: X509Handle] = [:]
        var keys: [[UInt8]: PrivateKeyHandle] = [:]
    }
    private let tables = Locked(Tables())
    private let capacity = 256

    /// The certificate, or nil when `der` is not one (the reason is on the error queue).
    func certificate(_ der: [UInt8]) -> X509Handle? { cached(der, in: \.certificates, X509Handle.init(der:)) }

    /// The key, or nil when `der` is not a PKCS#8 key.
    func key(_ der: [UInt8]) -> PrivateKeyHandle? { cached(der, in: \.keys, PrivateKeyHandle.init(der:)) }

    /// The handle decoded from `der` before, or decoded now and kept (the table starts afresh when full).
    private func cached<Handle>(
        _ der: [UInt8], in table: WritableKeyPath<Tables, [[UInt8]: Handle]>, _ decode: ([UInt8]) -> Handle?
    ) -> Handle? {
        tables.withLock { t in
            if let h = t[keyPath: table][der] { return h }
            guard let h = decode(der) else { return nil }
            if t[keyPath: table].count >= capacity { t[keyPath: table].removeAll() }
            t[keyPath: table][der] = h
            return h
        }
    }
}
