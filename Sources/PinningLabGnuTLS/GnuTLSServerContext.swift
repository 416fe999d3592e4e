internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
import PinningLabBase
internal import PinningLabCore
internal import PinningLabPKI  // Locked
import PinningLabTLSTypes

// immutable after init; GnuTLS credentials and priority caches may be shared by sessions on several threads
final class GnuTLSServerContext: TLSServerContext, @unchecked Sendable {
    let configuration: ServerTLSConfiguration
    let identities: [GnuTLSIdentity]
    let credentials: GnuTLSCredentials
    let priority: GnuTLSPriority
    let priorityString: String
    /// ALPN protocol names as datums, pointing into `alpnStorage`.
    let alpn: UnsafeMutablePointer<gnutls_datum_t>
    let alpnStorage: UnsafeMutableRawBufferPointer
    /// The 64-byte ticket master key (the configuration's shared key, or one of this context's own), for
    /// `gnutls_session_ticket_enable_server`, which copies it into each session.
    let ticketKey: [UInt8]
    /// The session cache of TLS 1.2 session IDs, shared by the sessions of this context.
    let sessionCache = Locked<[[UInt8]: [UInt8]]>([:])
    /// At most this many cached sessions; the cache starts afresh when full.
    static let sessionCacheCapacity = 4096
    /// Anti-replay for early data (GnuTLS accepts 0-RTT only with it): the ClientHellos seen within the window,
    /// shared by the sessions of this context; `nil` when the configuration allows no early data.
    private(set) var antiReplay: gnutls_anti_replay_t? = nil
    let seenClientHellos = Locked<Set<[UInt8]>>([])

    init(_ c: ServerTLSConfiguration) throws(TLSEngineError) {
        configuration = c
        ticketKey = Array((c.resumption.ticketKey?.bytes ?? SessionTicketKey(name: "own").bytes).prefix(64))
        if let ech = c.encryptedClientHello {
            throw TLSEngineError(
                .unsupported, ech.unsupportedReason(library: "GnuTLS \(String(cString: gnutls_check_version(nil)))"))
        }
        if c.ciphers.restrictsOpenSSL && !c.ciphers.restrictsGnuTLS {
            throw TLSEngineError(
                .unsupported, "the cipher restriction is given only for OpenSSL; add a gnuTLSPriority string")
        }
        var built: [GnuTLSIdentity] = []
        for identity in c.identities { built.append(try GnuTLSIdentity(identity)) }
        identities = built

        let versions = c.versions.map { v -> String in
            switch v {
            case .tls10: return "+VERS-TLS1.0"
            case .tls11: return "+VERS-TLS1.1"
            case .tls12: return "+VERS-TLS1.2"
            default: return "+VERS-TLS1.3"
            }
        }
        var ps = (c.ciphers.gnuTLSPriority ?? "NORMAL") + ":-VERS-ALL:" + versions.joined(separator: ":")
        if c.minimumVersion.isLegacy {
            // TLS 1.0/1.1 sign with SHA-1; GnuTLS refuses that unless told to allow it.
            ps += ":%VERIFY_ALLOW_SIGN_WITH_SHA1:+SIGN-ALL"
        }
        if let groups = c.groups { ps += try Self.groupPriority(groups) }
        priorityString = ps
        do {
            priority = try GnuTLSPriority(ps)
        } catch {
            throw TLSEngineError(
                c.ciphers.gnuTLSPriority == nil ? .unsupported : .invalidConfiguration,
                "GnuTLS rejects the priority string '\(ps)' at '\(error.at)': \(gnutlsErrorText(error.code))")
        }
        credentials = try GnuTLSCredentials()
        gnutls_certificate_set_retrieve_function2(credentials.pointer) { session, _, _, _, _, pcert, length, key in
            guard let s = GnuTLSServerSession.from(session) else { return -1 }
            return s.retrieve(pcert, length, key)
        }
        if c.ocspStaple != nil {
            // The credentials' status callback: GnuTLS calls it for the certificate the retrieve callback chose,
            // only when the client sent status_request, and staples what it returns.
            gnutls_certificate_set_ocsp_status_request_function(
                credentials.pointer,
                { session, _, response in
                    guard let s = GnuTLSServerSession.from(session), let staple = s.context.configuration.ocspStaple,
                        let response
                    else { return GNUTLS_E_NO_CERTIFICATE_STATUS }
                    return staple.withUnsafeBufferPointer {
                        cpl_gnutls_set_ocsp_response(response, $0.baseAddress, UInt32($0.count))
                    }
                }, nil)
        }

        var storage: [UInt8] = []
        for p in c.alpnProtocols { storage.append(contentsOf: p.utf8) }
        alpnStorage = .allocate(byteCount: max(storage.count, 1), alignment: 1)
        alpnStorage.copyBytes(from: storage)
        alpn = .allocate(capacity: max(c.alpnProtocols.count, 1))
        var offset = 0
        for (i, p) in c.alpnProtocols.enumerated() {
            let n = p.utf8.count
            alpn[i] = gnutls_datum_t(
                data: alpnStorage.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self), size: UInt32(n)
            )
            offset += n
        }

        // From here on deinit frees everything.
        if c.clientAuthentication != .none {
            for (i, der) in c.clientTrustRootsDER.enumerated() {
                let rc = der.withUnsafeBufferPointer { buf -> Int32 in
                    var datum = gnutls_datum_t(
                        data: UnsafeMutablePointer(mutating: buf.baseAddress), size: UInt32(buf.count))
                    return gnutls_certificate_set_x509_trust_mem(credentials.pointer, &datum, GNUTLS_X509_FMT_DER)
                }
                guard rc >= 0 else {
                    throw TLSEngineError(
                        .invalidConfiguration, "clientTrustRootsDER[\(i)] is not DER: \(gnutlsErrorText(rc))")
                }
            }
        }
        if c.resumption.allowsEarlyData {
            var ar: gnutls_anti_replay_t? = nil
            let rc = gnutls_anti_replay_init(&ar)
            guard rc >= 0, let ar else {
                throw TLSEngineError(.library, "gnutls_anti_replay_init: \(gnutlsErrorText(rc))")
            }
            antiReplay = ar
            // Sessions hold the context, so the pointer outlives every session that calls back.
            gnutls_anti_replay_set_ptr(ar, Unmanaged.passUnretained(self).toOpaque())
            gnutls_anti_replay_set_add_function(ar) { ptr, _, key, _ in
                guard let ptr, let key, let data = key.pointee.data else { return GNUTLS_E_DB_ERROR }
                let context = Unmanaged<GnuTLSServerContext>.fromOpaque(ptr).takeUnretainedValue()
                let k = Array(UnsafeBufferPointer(start: data, count: Int(key.pointee.size)))
                return context.seenClientHellos.withLock { seen in
                    if seen.count >= GnuTLSServerContext.sessionCacheCapacity { seen.removeAll() }
                    return seen.insert(k).inserted ? 0 : GNUTLS_E_DB_ENTRY_EXISTS
                }
            }
        }
    }

    deinit {
        if let antiReplay { gnutls_anti_replay_deinit(antiReplay) }
        alpn.deallocate()
        alpnStorage.deallocate()
    }

    func makeSession(socket: Int32) throws(TLSEngineError) -> any TLSServerSession {
        try GnuTLSServerSession(context: self, socket: socket)
    }
}
