internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
internal import PinningLabCore
internal import PinningLabPKI  // Locked
import PinningLabTLSTypes

final class GnuTLSServerSession: TLSServerSession {
    let session: gnutls_session_t
    let context: GnuTLSServerContext
    var details = TLSSessionDetails()
    /// The alert chosen by the client-certificate check, sent when the handshake fails because of it.
    var verifyAlert: UInt8?
    private var alertSentOnce = false

    init(context: GnuTLSServerContext, socket: Int32) throws(TLSEngineError) {
        self.context = context
        self.fd = socket
        var s: gnutls_session_t? = nil
        let resumption = context.configuration.resumption.mode
        var flags = UInt32(GNUTLS_SERVER) | UInt32(GNUTLS_NONBLOCK) | UInt32(GNUTLS_NO_SIGNAL)
        if !resumption.tickets { flags |= UInt32(GNUTLS_NO_TICKETS) }
        let early = context.configuration.resumption.allowsEarlyData
        if early { flags |= GNUTLS_ENABLE_EARLY_DATA.rawValue }
        let rc = gnutls_init(&s, flags)
        guard rc >= 0, let s else { throw TLSEngineError(.library, "gnutls_init: \(gnutlsErrorText(rc))") }
        session = s
        details.identityIndex = 0
        if early {
            // The limit goes into the tickets this session issues. GnuTLS accepts early data only with anti-replay
            // on: the context's, which refuses only a ClientHello it has seen (a replay), never a fresh attempt.
            earlyData = EarlyDataBuffer()
            if let ar = context.antiReplay { gnutls_anti_replay_enable(s, ar) }
            let erc = gnutls_record_set_max_early_data_size(s, Int(context.configuration.resumption.maxEarlyData))
            guard erc >= 0 else {
                throw TLSEngineError(.library, "gnutls_record_set_max_early_data_size: \(gnutlsErrorText(erc))")
            }
        }
        // From here on deinit frees the session.
        gnutls_session_set_ptr(s, Unmanaged.passUnretained(self).toOpaque())
        try watchForECH(s)
        if resumption.tickets {
            let trc = context.ticketKey.withUnsafeBufferPointer { buf -> Int32 in
                var datum = gnutls_datum_t(
                    data: UnsafeMutablePointer(mutating: buf.baseAddress), size: UInt32(buf.count))
                return gnutls_session_ticket_enable_server(s, &datum)
            }
            guard trc >= 0 else {
                throw TLSEngineError(.library, "gnutls_session_ticket_enable_server: \(gnutlsErrorText(trc))")
            }
        }
        if resumption.sessionIDs {
            gnutls_db_set_ptr(s, Unmanaged.passUnretained(self).toOpaque())
            gnutls_db_set_store_function(s) { ptr, key, data in
                guard let ptr else { return -1 }
                return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().storeSession(key, data)
            }
            gnutls_db_set_retrieve_function(s) { ptr, key in
                guard let ptr else { return gnutls_datum_t() }
                return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().retrieveSession(key)
            }
            gnutls_db_set_remove_function(s) { ptr, key in
                guard let ptr else { return -1 }
                return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().removeSession(key)
            }
        }
        let prc = gnutls_priority_set(s, context.priority.pointer)
        guard prc >= 0 else { throw TLSEngineError(.library, "gnutls_priority_set: \(gnutlsErrorText(prc))") }
        let crc = gnutls_credentials_set(
            s, GNUTLS_CRD_CERTIFICATE, UnsafeMutableRawPointer(context.credentials.pointer))
        guard crc >= 0 else { throw TLSEngineError(.library, "gnutls_credentials_set: \(gnutlsErrorText(crc))") }
        switch context.configuration.clientAuthentication {
        case .required:
            gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE)
            gnutls_session_set_verify_function(s) {
                GnuTLSServerSession.from($0)?.verifyClient() ?? GNUTLS_E_CERTIFICATE_ERROR
            }
        case .optional:
            gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST)
            gnutls_session_set_verify_function(s) {
                GnuTLSServerSession.from($0)?.verifyClient() ?? GNUTLS_E_CERTIFICATE_ERROR
            }
        default:
            gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE)
        }
        if !context.configuration.alpnProtocols.isEmpty {
            let arc = gnutls_alpn_set_protocols(
                s, context.alpn, UInt32(context.configuration.alpnProtocols.count),
                UInt32(GNUTLS_ALPN_SERVER_PRECEDENCE.rawValue))
            guard arc >= 0 else { throw TLSEngineError(.library, "gnutls_alpn_set_protocols: \(gnutlsErrorText(arc))") }
        }
        // One hook for every message (GnuTLS keeps one per session): the Certificate messages once processed, the
        // ClientHello before (its offers are recorded even when the handshake then fails on them) and the
        // HelloRetryRequest as it is sent. UInt32.max and -1 are GNUTLS_HANDSHAKE_ANY and GNUTLS_HOOK_BOTH, macros
        // with casts that Swift does not import.
        gnutls_handshake_set_hook_function(s, UInt32.max, -1) { session, htype, when, incoming, message in
            guard let s = GnuTLSServerSession.from(session) else { return 0 }
            let pre = when == UInt32(GNUTLS_HOOK_PRE)
            switch htype {
            case GNUTLS_HANDSHAKE_CERTIFICATE_PKT.rawValue where when == UInt32(GNUTLS_HOOK_POST):
                s.hook(incoming: incoming != 0, message: message)
            case GNUTLS_HANDSHAKE_CLIENT_HELLO.rawValue where pre && incoming != 0:
                s.recordOffers(clientHello: message)
            case GNUTLS_HANDSHAKE_HELLO_RETRY_REQUEST.rawValue where pre && incoming == 0:
                s.details.helloRetryRequest = true
            default: break
            }
            return 0
        }
        // Own transport functions: sends never raise SIGPIPE, and the record headers the client sends during the
        // handshake are tracked, so that a plaintext alert sent after the server switched to handshake keys (an
        // OpenSSL TLS 1.3 client rejecting the server's certificate does this) is still recognised.
        gnutls_transport_set_ptr(s, Unmanaged.passUnretained(self).toOpaque())
        gnutls_transport_set_pull_function(s) { ptr, buffer, count in
            guard let ptr, let buffer else { return -1 }
            return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().pull(buffer, count)
        }
        gnutls_transport_set_push_function(s) { ptr, buffer, count in
            guard let ptr else { return -1 }
            return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().push(buffer, count)
        }
        // A flight (ServerHello … Finished) goes out in one sendmsg, as GnuTLS flushes it, not a send per record: a
        // client that refuses the certificate closes as soon as it has read it, and a Finished record sent after
        // that met a closed socket (EPIPE), so the client's alert was lost and recorded as a reset.
        gnutls_transport_set_vec_push_function(s) { ptr, iov, count in
            guard let ptr, let iov else { return -1 }
            return Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue().push(iov, Int(count))
        }
        gnutls_transport_set_pull_timeout_function(s) { ptr, _ in
            guard let ptr else { return -1 }
            let me = Unmanaged<GnuTLSServerSession>.fromOpaque(ptr).takeUnretainedValue()
            // Never wait here: the session is non-blocking and the worker's poll loop does the waiting (with the
            // handshake and idle deadlines). A blocking wait (GnuTLS passes UINT_MAX for "indefinitely") would stall
            // every connection of the worker.
            var p = pollfd(fd: me.fd, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0)
        }
    }

    let fd: Int32
    /// The session cache answered a session ID.
    private var foundInCache = false

    private static func bytes(_ d: gnutls_datum_t) -> [UInt8] {
        guard let data = d.data else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(d.size)))
    }

    func storeSession(_ key: gnutls_datum_t, _ data: gnutls_datum_t) -> Int32 {
        let k = Self.bytes(key)
        let v = Self.bytes(data)
        context.sessionCache.withLock { cache in
            if cache.count >= GnuTLSServerContext.sessionCacheCapacity { cache.removeAll() }
            cache[k] = v
        }
        return 0
    }

    func retrieveSession(_ key: gnutls_datum_t) -> gnutls_datum_t {
        guard let v = context.sessionCache.withLock({ $0[Self.bytes(key)] }) else { return gnutls_datum_t() }
        foundInCache = true
        return v.withUnsafeBufferPointer { cpl_gnutls_datum_copy($0.baseAddress, UInt32($0.count)) }
    }

    func removeSession(_ key: gnutls_datum_t) -> Int32 {
        let k = Self.bytes(key)
        return context.sessionCache.withLock { $0.removeValue(forKey: k) } == nil ? -1 : 0
    }

    private var tracking = true
    private var header: (count: Int, type: UInt8, length: Int, left: Int) = (0, 0, 0, 0)
    private var headerBytes: [UInt8] = [0, 0, 0, 0, 0]
    private var alertBytes: [UInt8] = []
    /// A plaintext alert record (type 21, length 2) the client sent during the handshake.
    private var plaintextAlert: TLSAlert?

    func pull(_ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        let n = recv(fd, buffer, count, 0)
        if n < 0 {
            gnutls_transport_set_errno(session, errno)
        } else if n > 0 && tracking {
            track(UnsafeRawBufferPointer(start: buffer, count: n))
        }
        return n
    }

    func push(_ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            let n = send(fd, buffer, count, 0)
        #else
            let n = send(fd, buffer, count, Int32(MSG_NOSIGNAL))
        #endif
        if n < 0 { gnutls_transport_set_errno(session, errno) }
        return n
    }

    func push(_ iov: UnsafePointer<iovec>, _ count: Int) -> Int {
        var message = msghdr()
        message.msg_iov = UnsafeMutablePointer(mutating: iov)
        message.msg_iovlen = numericCast(count)
        #if canImport(Darwin)
            let n = sendmsg(fd, &message, 0)
        #else
            let n = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
        #endif
        if n < 0 { gnutls_transport_set_errno(session, errno) }
        return n
    }

    private func track(_ bytes: UnsafeRawBufferPointer) {
        var i = 0
        while i < bytes.count {
            if header.left == 0 {
                headerBytes[header.count] = bytes[i]
                header.count += 1
                i += 1
                if header.count == 5 {
                    header = (0, headerBytes[0], Int(headerBytes[3]) << 8 | Int(headerBytes[4]), 0)
                    header.left = header.length
                    alertBytes.removeAll()
                }
                continue
            }
            let take = min(header.left, bytes.count - i)
            if header.type == 21 && header.length == 2 {
                alertBytes.append(contentsOf: bytes[i..<(i + take)])
                if alertBytes.count == 2, plaintextAlert == nil {
                    plaintextAlert = TLSAlert(code: alertBytes[1], level: alertBytes[0])
                }
            }
            header.left -= take
            i += take
        }
    }

    deinit { gnutls_deinit(session) }

    static func from(_ s: gnutls_session_t?) -> GnuTLSServerSession? {
        guard let s, let p = gnutls_session_get_ptr(s) else { return nil }
        return Unmanaged<GnuTLSServerSession>.fromOpaque(p).takeUnretainedValue()
    }

    var isTLS13: Bool { gnutls_protocol_get_version(session) == GNUTLS_TLS1_3 }

    /// Early data GnuTLS accepted, handed to `read(into:)` first; `nil` when the server allows none.
    private var earlyData: EarlyDataBuffer? = nil

    /// Moves the early data GnuTLS buffered during the handshake into `earlyData` (also when the handshake then
    /// failed: the bytes reached the server all the same).
    private func collectEarlyData() {
        guard earlyData != nil else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { gnutls_record_recv_early_data(session, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            earlyData!.append(chunk.prefix(n))
        }
        details.earlyDataBytes = earlyData!.bytes.count
    }

    func handshake() -> TLSStep {
        let step = handshakeStep()
        if step != .wantRead && step != .wantWrite { collectEarlyData() }
        return step
    }

    private func handshakeStep() -> TLSStep {
        while true {
            let rc = gnutls_handshake(session)
            if rc == GNUTLS_E_SUCCESS {
                tracking = false
                recordNegotiated()
                return .done
            }
            if rc == GNUTLS_E_WARNING_ALERT_RECEIVED {
                let alert = gnutls_alert_get(session)
                if details.alertReceived == nil {
                    details.alertReceived = TLSAlert(code: UInt8(alert.rawValue), level: 1)
                }
                if alert == GNUTLS_A_CLOSE_NOTIFY { return .closed(TLSTermination(.closeNotify)) }
                continue
            }
            return failure(rc, inHandshake: true)
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSStep {
        if let n = earlyData?.read(into: buffer) { return .bytes(n) }
        let n = gnutls_record_recv(session, buffer.baseAddress, buffer.count)
        if n > 0 { return .bytes(n) }
        if n == 0 {
            if details.alertReceived == nil { details.alertReceived = TLSAlert(code: 0, level: 1) }
            return .closed(TLSTermination(.closeNotify))
        }
        return failure(Int32(n), inHandshake: false)
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> TLSStep {
        let n = gnutls_record_send(session, buffer.baseAddress, buffer.count)
        return n > 0 ? .bytes(n) : failure(Int32(n), inHandshake: false)
    }

    func shutdown() {
        _ = gnutls_bye(session, GNUTLS_SHUT_WR)
    }

    private func failure(_ rc: Int32, inHandshake: Bool) -> TLSStep {
        let savedErrno = errno
        // A handshake the client abandons after the ServerHello (a pin or key-exchange check that refuses) still
        // negotiated its group: a client that requires a hybrid is judged by it.
        if inHandshake, rc != GNUTLS_E_AGAIN, rc != GNUTLS_E_INTERRUPTED, details.negotiatedGroup == nil {
            recordNegotiatedGroup()
        }
        switch rc {
        case GNUTLS_E_AGAIN, GNUTLS_E_INTERRUPTED:
            return gnutls_record_get_direction(session) == 1 ? .wantWrite : .wantRead
        case GNUTLS_E_FATAL_ALERT_RECEIVED, GNUTLS_E_WARNING_ALERT_RECEIVED:
            let alert = gnutls_alert_get(session)
            if details.alertReceived == nil {
                details.alertReceived = TLSAlert(
                    code: UInt8(alert.rawValue), level: rc == GNUTLS_E_FATAL_ALERT_RECEIVED ? 2 : 1)
            }
            return .closed(TLSTermination(.alertReceived, gnutlsErrorText(rc)))
        case GNUTLS_E_PREMATURE_TERMINATION, GNUTLS_E_UNEXPECTED_PACKET_LENGTH:
            return .closed(TLSTermination(.eof, gnutlsErrorText(rc)))
        case GNUTLS_E_PULL_ERROR, GNUTLS_E_PUSH_ERROR:
            let why = savedErrno != 0 ? String(cString: strerror(savedErrno)) : gnutlsErrorText(rc)
            if savedErrno == 0 { return .closed(TLSTermination(.eof, why)) }
            return .closed(TLSTermination(.reset, why))
        default:
            if inHandshake, let alert = plaintextAlert {
                if details.alertReceived == nil { details.alertReceived = alert }
                return .closed(
                    TLSTermination(
                        .alertReceived, "plaintext alert \(alert) during the handshake (\(gnutlsErrorText(rc)))"))
            }
            if inHandshake { sendAlert(for: rc) }
            return .closed(TLSTermination(.protocolError, gnutlsErrorText(rc)))
        }
    }

    /// GnuTLS sends no alert by itself when a handshake fails; a server does.
    private func sendAlert(for rc: Int32) {
        guard !alertSentOnce else { return }
        alertSentOnce = true
        var code: UInt8
        if let v = verifyAlert {
            code = v
        } else if rc == GNUTLS_E_NO_CERTIFICATE_FOUND || rc == GNUTLS_E_CERTIFICATE_REQUIRED {
            code = isTLS13 ? TLSAlert.certificateRequired : TLSAlert.handshakeFailure
        } else {
            var level: Int32 = 0
            let a = gnutls_error_to_alert(rc, &level)
            guard a >= 0 else { return }
            code = UInt8(a)
        }
        let sent = gnutls_alert_send(session, GNUTLS_AL_FATAL, gnutls_alert_description_t(UInt32(code)))
        if sent >= 0 || sent == GNUTLS_E_AGAIN {
            details.alertSent = TLSAlert(code: code, level: 2)
        }
    }

    private func recordNegotiated() {
        switch gnutls_protocol_get_version(session) {
        case GNUTLS_TLS1_0: details.version = .tls10
        case GNUTLS_TLS1_1: details.version = .tls11
        case GNUTLS_TLS1_2: details.version = .tls12
        case GNUTLS_TLS1_3: details.version = .tls13
        default: details.version = nil
        }
        if let name = gnutls_ciphersuite_get(session) { details.cipherSuite = String(cString: name) }
        recordNegotiatedGroup()
        var datum = gnutls_datum_t()
        if gnutls_alpn_get_selected_protocol(session, &datum) == 0, let data = datum.data {
            details.alpn = String(decoding: UnsafeBufferPointer(start: data, count: Int(datum.size)), as: UTF8.self)
        }
        if details.clientCertificates.isEmpty { details.clientCertificates = peerCertificates() }
        if details.serverName == nil { details.serverName = sentServerName() }
        if details.echOffered == nil { details.echOffered = false }  // the ClientHello was read without the extension
        if gnutls_session_is_resumed(session) != 0 {
            // TLS 1.3 resumes by a PSK from a ticket only; TLS 1.2 by ID when the cache answered, else by a ticket.
            details.resumption = details.version == .tls13 || !foundInCache ? .ticket : .sessionID
        }
    }

    /// Registers `encrypted_client_hello` (0xfe0d) with this session so that GnuTLS, which knows no ECH, hands
    /// over the extension when a ClientHello carries it (``TLSSessionDetails/echOffered``); the server never sends
    /// it back (the offer is rejected: the handshake runs on the outer ClientHello).
    private func watchForECH(_ s: gnutls_session_t) throws(TLSEngineError) {
        let rc = gnutls_session_ext_register(
            s, "encrypted_client_hello", Int32(ClientHelloECH.extensionType), GNUTLS_EXT_TLS,
            { session, _, _ in
                GnuTLSServerSession.from(session)?.details.echOffered = true
                return 0
            },
            { _, _ in 0 }, nil, nil, nil,
            UInt32(GNUTLS_EXT_FLAG_CLIENT_HELLO.rawValue | GNUTLS_EXT_FLAG_TLS.rawValue))
        guard rc >= 0 else { throw TLSEngineError(.library, "gnutls_session_ext_register: \(gnutlsErrorText(rc))") }
    }

    /// The SNI host name the client sent, if any.
    func sentServerName() -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        var size = buffer.count
        var type: UInt32 = 0
        guard gnutls_server_name_get(session, &buffer, &size, &type, 0) == 0, type == GNUTLS_NAME_DNS.rawValue else {
            return nil
        }
        return String(decoding: buffer.prefix(size).prefix { $0 != 0 }, as: UTF8.self)
    }

    func peerCertificates() -> [ObservedCertificate] {
        var n: UInt32 = 0
        guard let list = gnutls_certificate_get_peers(session, &n), n > 0 else { return [] }
        return (0..<Int(n)).map { i in
            let d = list[i]
            let der = d.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(d.size))) } ?? []
            return ObservedCertificate(der: der, subject: Self.subject(der))
        }
    }

    static func subject(_ der: [UInt8]) -> String? {
        var out = [CChar](repeating: 0, count: 1024)
        let n = der.withUnsafeBufferPointer {
            cpl_gnutls_subject_rfc4514($0.baseAddress, UInt32($0.count), &out, UInt32(out.count))
        }
        return n < 0 ? nil : String(decoding: out.prefix(Int(n)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Chooses the identity by SNI and hands GnuTLS its pcert list and key.
    func retrieve(
        _ pcert: UnsafeMutablePointer<UnsafeMutablePointer<gnutls_pcert_st>?>?, _ length: UnsafeMutablePointer<UInt32>?,
        _ key: UnsafeMutablePointer<gnutls_privkey_t?>?
    ) -> Int32 {
        let name = sentServerName()
        details.serverName = name
        if details.echOffered == nil { details.echOffered = false }  // extensions are parsed before this callback
        let index = context.configuration.identityIndex(forServerName: name, offered: details.offered)
        details.identityIndex = index
        let identity = context.identities[index]
        pcert?.pointee = identity.pcerts
        length?.pointee = UInt32(identity.count)
        key?.pointee = identity.key
        return 0
    }

    func hook(incoming: Bool, message: UnsafePointer<gnutls_datum_t>?) {
        guard let message, let data = message.pointee.data else { return }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(message.pointee.size))
        guard let certs = TLSCertificateMessage.parse(bytes, tls13: isTLS13) else { return }
        if incoming {
            details.clientCertificateMessageSeen = true
            details.clientCertificates = certs.map { ObservedCertificate(der: $0, subject: Self.subject($0)) }
        } else {
            details.serverCertificatesSent = certs
        }
    }

    /// Verifies the client's chain (trust list + client EKU); an empty chain passes here (GnuTLS itself fails a
    /// required request without a certificate).
    func verifyClient() -> Int32 {
        var n: UInt32 = 0
        if gnutls_certificate_get_peers(session, &n) == nil || n == 0 { return 0 }
        if details.clientCertificates.isEmpty { details.clientCertificates = peerCertificates() }
        var status: UInt32 = 0
        let rc = cpl_gnutls_verify_client_peer(session, &status)
        if rc < 0 {
            verifyAlert = TLSAlert.badCertificate
            return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR
        }
        if status == 0 { return 0 }
        let has = { (flag: gnutls_certificate_status_t) in status & flag.rawValue != 0 }
        if has(GNUTLS_CERT_EXPIRED) || has(GNUTLS_CERT_NOT_ACTIVATED) {
            verifyAlert = TLSAlert.certificateExpired
        } else if has(GNUTLS_CERT_PURPOSE_MISMATCH) {
            verifyAlert = TLSAlert.unsupportedCertificate
        } else if has(GNUTLS_CERT_SIGNER_NOT_FOUND) || has(GNUTLS_CERT_SIGNER_NOT_CA) {
            verifyAlert = TLSAlert.unknownCA
        } else {
            verifyAlert = TLSAlert.badCertificate
        }
        return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR
    }
}
