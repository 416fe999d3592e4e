// One blocking reference-client connection: a non-blocking socket driven with poll(2) against a deadline, and an
// SSL object over memory BIOs (so writes use MSG_NOSIGNAL and a closed peer never raises SIGPIPE).
internal import CPinningLabOpenSSL
internal import Foundation
internal import PinningLabCore
internal import PinningLabModel
internal import PinningLabOpenSSL  // the handle owners (Handles.swift)

/// The instant after which a run gives up.
struct ClientDeadline {
    let instant: ContinuousClock.Instant

    init(after duration: Duration) {
        instant = ContinuousClock.now.advanced(by: duration)
    }

    /// Milliseconds left for poll(2), at least 0.
    var remainingMilliseconds: Int32 {
        let left = ContinuousClock.now.duration(to: instant)
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1
        return Int32(clamping: milliseconds)
    }

    var hasPassed: Bool { ContinuousClock.now >= instant }
}

/// The one owner of a connected TCP socket (non-blocking).
final class ClientSocket {
    let descriptor: Int32

    init(ip: String, port: Int, deadline: ClientDeadline) throws(ClientFailure) {
        let started: (fd: Int32, inProgress: Bool)
        do {
            started = try Sockets.startConnect(host: ip, port: port, numericHost: true)
        } catch {
            switch error.step {
            case .resolve:
                throw ClientFailure(
                    category: .other, detail: "target.ip \"\(ip)\" is not a numeric address: \(error.reason)")
            case .socket: throw ClientFailure(category: .other, detail: "socket: \(error.reason)")
            case .configure: throw ClientFailure(category: .other, detail: "fcntl(O_NONBLOCK): \(error.reason)")
            case .connect: throw ClientFailure(category: .other, detail: "connect to \(ip):\(port): \(error.reason)")
            }
        }
        let fd = started.fd
        descriptor = fd  // from here on deinit closes it
        if started.inProgress {
            guard try Self.waitFor(fd, events: Int16(POLLOUT), deadline: deadline) else {
                throw ClientFailure(category: .timeout, detail: "timed out connecting to \(ip):\(port)")
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
                throw ClientFailure(
                    category: .other, detail: "connect to \(ip):\(port): \(String(cString: strerror(error)))")
            }
        }
    }

    deinit { close(descriptor) }

    /// Waits until `events` are ready; `false` when the deadline passed first.
    static func waitFor(_ fd: Int32, events: Int16, deadline: ClientDeadline) throws(ClientFailure) -> Bool {
        while true {
            let timeout = deadline.remainingMilliseconds
            if timeout == 0 { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, timeout)
            if ready > 0 { return true }
            if ready == 0 { continue }  // re-check the deadline
            if errno == EINTR { continue }
            throw ClientFailure(category: .other, detail: "poll: \(String(cString: strerror(errno)))")
        }
    }

    /// Sends all of `bytes` before the deadline.
    func sendAll(_ bytes: [UInt8], deadline: ClientDeadline) throws(ClientFailure) {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
                let flags: Int32 = 0
            #else
                let flags = Int32(MSG_NOSIGNAL)
            #endif
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, flags) }
            if sent > 0 {
                offset += sent
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard try Self.waitFor(descriptor, events: Int16(POLLOUT), deadline: deadline) else {
                    throw ClientFailure(category: .timeout, detail: "timed out sending to the server")
                }
            } else {
                throw ClientFailure(category: .protocolError, detail: "send: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Receives what is available (waiting until the deadline); empty at end of stream.
    func receive(deadline: ClientDeadline) throws(ClientFailure) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        let count = try receive(into: buffer, deadline: deadline)
        return Array(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// Receives what is available into `buffer` (waiting until the deadline) and returns how many bytes; 0 at end of
    /// stream.
    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: ClientDeadline) throws(ClientFailure) -> Int {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard try Self.waitFor(descriptor, events: Int16(POLLIN), deadline: deadline) else {
                    throw ClientFailure(category: .timeout, detail: "timed out waiting for the server")
                }
                continue
            }
            if errno == ECONNRESET { return 0 }
            throw ClientFailure(category: .protocolError, detail: "recv: \(String(cString: strerror(errno)))")
        }
    }
}

/// How a TLS operation ended when it did not succeed.
enum ClientTLSStop: Error {
    /// OpenSSL failed; `errors` is the drained error queue.
    case failed(code: Int32, errors: String)
    /// The peer closed the TLS connection cleanly (close_notify).
    case closed
    /// The transport failed, or the deadline passed.
    case transport(ClientFailure)
}

/// The one owner of a connection's `SSL*` (which owns its two memory BIOs), pumped over a `ClientSocket`.
final class ClientSession {
    let ssl: OpaquePointer
    private let readBIO: OpaquePointer  // owned by `ssl`
    private let writeBIO: OpaquePointer  // owned by `ssl`
    private let socket: ClientSocket
    /// Where received bytes land on their way into the read BIO: one buffer per connection, not one per read.
    private let inbox = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
    /// The current run's deadline (an HTTP/2 connection kept for a later step gets that step's).
    var deadline: ClientDeadline

    init(
        context: ClientContext, socket: ClientSocket, host: String, state: ClientVerifyState, deadline: ClientDeadline,
        offerHTTP2: Bool = false, openSSLCT: OpenSSLCTValidation? = nil
    ) throws(ClientFailure) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            inbox.deallocate()
            throw ClientFailure(category: .other, detail: "SSL_new: \(openSSLErrorQueue())")
        }
        guard let readBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            inbox.deallocate()
            throw ClientFailure(category: .other, detail: "BIO_new: \(openSSLErrorQueue())")
        }
        guard let writeBIO = BIO_new(BIO_s_mem()) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            inbox.deallocate()
            throw ClientFailure(category: .other, detail: "BIO_new: \(openSSLErrorQueue())")
        }
        _ = cpl_client_bio_set_mem_eof_return(readBIO, -1)  // empty means "retry" until the socket reports EOF
        SSL_set_bio(ssl, readBIO, writeBIO)  // ssl owns both BIOs now
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.socket = socket
        self.deadline = deadline

        guard SSL_set_ex_data(ssl, ClientVerifyState.exDataIndex, Unmanaged.passUnretained(state).toOpaque()) == 1
        else {
            throw ClientFailure(category: .other, detail: "SSL_set_ex_data: \(openSSLErrorQueue())")
        }
        guard cpl_client_set_tlsext_host_name(ssl, host) == 1 else {
            throw ClientFailure(category: .other, detail: "SNI \"\(host)\": \(openSSLErrorQueue())")
        }
        if state.policy.revocation != .none {
            guard cpl_client_request_ocsp_staple(ssl) == 1 else {
                throw ClientFailure(category: .other, detail: "status_request: \(openSSLErrorQueue())")
            }
        }
        if state.policy.certificateTransparency != nil {
            // OpenSSL asks for the SCT extension, collects SCTs from the certificate, the extension and a stapled
            // OCSP response, and calls back with them once the chain is verified (the verified chain our verify
            // callback left in the store context supplies the issuer); without a log store it judges none itself.
            guard cpl_client_request_ocsp_staple(ssl) == 1,
                SSL_set_ct_validation_callback(ssl, clientCTCallback, Unmanaged.passUnretained(state).toOpaque()) == 1
            else {
                throw ClientFailure(category: .other, detail: "SSL_set_ct_validation_callback: \(openSSLErrorQueue())")
            }
        }
        if let openSSLCT {
            // OpenSSL's own CT policy over the context's log store (ClientContext.withCTLogs): it asks for SCTs and a
            // staple and judges them itself once the chain verified.
            guard SSL_enable_ct(ssl, openSSLCT.mode) == 1 else {
                throw ClientFailure(category: .other, detail: "SSL_enable_ct: \(openSSLErrorQueue())")
            }
        }
        if offerHTTP2 {
            let protocols: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
            guard SSL_set_alpn_protos(ssl, protocols, UInt32(protocols.count)) == 0 else {
                throw ClientFailure(category: .other, detail: "SSL_set_alpn_protos: \(openSSLErrorQueue())")
            }
        }
        if state.policy.checksHostname {
            guard SSL_set1_host(ssl, host) == 1 else {
                throw ClientFailure(category: .other, detail: "host check \"\(host)\": \(openSSLErrorQueue())")
            }
        }
    }

    deinit {
        SSL_free(ssl)
        inbox.deallocate()
    }

    /// Runs `operation` until it succeeds, moving bytes between the memory BIOs and the socket.
    func drive(_ operation: (OpaquePointer) -> Int32) throws(ClientTLSStop) -> Int32 {
        while true {
            ERR_clear_error()
            let result = operation(ssl)
            let code = SSL_get_error(ssl, result)
            let errors = result > 0 ? "" : openSSLErrorQueue()  // drained right where it failed
            do {
                try flush()
            } catch {
                if result > 0 || code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE {
                    throw .transport(error)
                }
            }
            if result > 0 { return result }
            switch code {
            case SSL_ERROR_WANT_READ:
                do {
                    try fill()
                } catch {
                    throw .transport(error)
                }
            case SSL_ERROR_WANT_WRITE:
                continue
            case SSL_ERROR_ZERO_RETURN:
                throw .closed
            default:
                throw .failed(code: code, errors: errors)
            }
        }
    }

    /// Sends whatever OpenSSL has written into the write BIO (records and alerts). Called after every step of
    /// `drive`, so it allocates nothing when nothing is pending.
    func flush() throws(ClientFailure) {
        while case let pending = Int(BIO_ctrl_pending(writeBIO)), pending > 0 {
            let chunk = [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
                count = max(0, Int(BIO_read(writeBIO, buffer.baseAddress, Int32(buffer.count))))
            }
            guard !chunk.isEmpty else { break }
            try socket.sendAll(chunk, deadline: deadline)
        }
    }

    /// Moves received bytes into the read BIO; at end of stream, lets OpenSSL see EOF.
    private func fill() throws(ClientFailure) {
        let count = try socket.receive(into: inbox, deadline: deadline)
        if count == 0 {
            _ = cpl_client_bio_set_mem_eof_return(readBIO, 0)
            return
        }
        let written = BIO_write(readBIO, inbox.baseAddress, Int32(count))
        if written != Int32(count) {
            throw ClientFailure(category: .other, detail: "BIO_write: \(openSSLErrorQueue())")
        }
    }

    /// The protocol the server selected by ALPN, if any.
    var negotiatedALPN: String? {
        var proto: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &proto, &length)
        guard let proto, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: proto, count: Int(length)), as: UTF8.self)
    }

    var negotiated: String {
        let version = SSL_get_version(ssl).map { String(cString: $0) } ?? "?"
        let cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "?"
        return "\(version) \(cipher)"
    }
}

/// One run of a reference client against a target.
enum ClientConnection {
    static let maximumResponseBytes = 1 << 20

    static func run(
        target: ClientTarget, mistake: ReferenceClient.Mistake, revocation: ClientChecks.Revocation = .none,
        ct: ClientChecks.CT = .none
    ) -> ClientOutcome {
        let deadline = ClientDeadline(after: target.timeout)
        // Pins declared for other hosts do not apply here (unless the mistake is to ignore their scope, or to
        // compare the host with the scope byte for byte).
        let pinsApply: Bool
        switch mistake.traits.scope {
        case .everyHost: pinsApply = true
        case .byteForByte:
            pinsApply =
                target.pinScope.map {
                    target.host == $0.domain || ($0.includeSubdomains && target.host.hasSuffix("." + $0.domain))
                } ?? true
        case .declared: pinsApply = target.pinsApply
        }
        let pins = pinsApply ? target.pins : .empty
        let state = ClientVerifyState(
            policy: ClientPolicy(
                mistake: mistake, pins: pins, revocation: revocation,
                certificateTransparency: ct == .required ? target.certificateTransparency : nil))
        state.revocationResponder = target.revocationResponder
        state.fetchDeadline = deadline
        do {
            return try withExtendedLifetime(state) { () throws(ClientFailure) -> ClientOutcome in
                try connect(target: target, mistake: mistake, state: state, deadline: deadline)
            }
        } catch {
            return .refused(error.category, error.detail)
        }
    }

    private static func connect(
        target: ClientTarget, mistake: ReferenceClient.Mistake, state: ClientVerifyState, deadline: ClientDeadline
    )
        throws(ClientFailure) -> ClientOutcome
    {
        // Over HTTP/2 a connection kept from an earlier step may carry this request (ClientHTTP2.swift).
        if target.http2, let reused = try reuseHTTP2(target: target, mistake: mistake, state: state, deadline: deadline)
        {
            return reused
        }
        let context = try ClientContext.shared(for: target)
        context.prepare(state)
        let socket: ClientSocket
        if let proxy = target.proxy {
            socket = try tunnel(through: proxy, to: target, deadline: deadline)
        } else {
            socket = try ClientSocket(ip: target.ip, port: target.port, deadline: deadline)
        }
        // The name in SNI and in the certificate check is the host's normal form: one trailing dot (the fully
        // qualified spelling) is not part of it (RFC 6066 section 3, RFC 6125 section 6.2.1), and case never is.
        let name = PinScope.normalizedHost(target.host)
        let session = try ClientSession(
            context: context, socket: socket, host: name, state: state, deadline: deadline,
            offerHTTP2: target.http2 && HTTP2.availability.isAvailable)
        // Across the steps of a cell, sessions are kept per address (IP and port), as a client that reuses sessions
        // per peer does: two host names served from one address (an interceptor) share them.
        let cacheKey = "\(target.ip):\(target.port)"
        // A session is offered only for a host its certificate covers (as Go's session cache does), unless the
        // client checks no host names at all.
        // `shares-sessions-across-hosts` offers whatever it holds for the address.
        let sharesAcrossHosts = mistake.traits.sharesSessionsAcrossHosts
        let offered = (target.sessionCache?.value(forKey: cacheKey) as? ClientSessionEntry).flatMap {
            sharesAcrossHosts || !state.policy.checksHostname || $0.covers(name) ? $0 : nil
        }
        if let offered { _ = SSL_set_session(session.ssl, offered.session.pointer) }

        let request = "GET / HTTP/1.1\r\nHost: \(target.host)\r\nConnection: close\r\n\r\n"
        let requestBytes = Array(request.utf8)
        // 0-RTT, where the app uses it and the session allows it: the request leaves with the ClientHello, before
        // the server has said anything, so the decision the session carries must be taken again first, under the
        // pins now in force (`sends-early-data-on-resumption` skips that and decides only after the handshake).
        var sentEarly = false
        if target.earlyData, let offered,
            SSL_SESSION_get_max_early_data(offered.session.pointer) >= UInt32(requestBytes.count),
            mistake.traits.sendsEarlyDataBeforeCheck || state.recheckResumed(offered, host: name) == nil
        {
            do {
                _ = try session.drive { ssl in
                    var written = 0
                    return requestBytes.withUnsafeBytes {
                        SSL_write_early_data(ssl, $0.baseAddress, $0.count, &written)
                    }
                }
                sentEarly = true
            } catch {
                throw classifyHandshakeFailure(error, session: session, state: state)
            }
        }

        do {
            _ = try session.drive { SSL_connect($0) }
        } catch {
            throw classifyHandshakeFailure(error, session: session, state: state)
        }
        let earlyAccepted = sentEarly && SSL_get_early_data_status(session.ssl) == SSL_EARLY_DATA_ACCEPTED
        let resumed = SSL_session_reused(session.ssl) == 1
        if resumed, let offered {
            // OpenSSL verifies nothing on an abbreviated handshake: the decision is taken again here, before any
            // application data leaves — except by `shares-sessions-across-hosts`, which trusts a session made for
            // another host name as that host's decision left it (neither name nor pins are checked again).
            if sharesAcrossHosts && offered.host != name {
                state.pinMatch =
                    "resumed a session made for \(offered.host): trusted as it was decided there (not checked again for \(name))"
            } else if let failure = state.recheckResumed(offered, host: name) {
                _ = SSL_shutdown(session.ssl)
                try? session.flush()
                throw failure
            }
        } else if !state.verifyCallbackRan {
            // Never send without a decision.
            throw ClientFailure(
                category: .protocolError, detail: "handshake completed without certificate verification")
        }

        // Trusted: only now may application data leave (unless it left as early data the server accepted).
        if session.negotiatedALPN == HTTP2.alpn {
            return try startHTTP2(
                session: session, target: target, host: name, state: state, resumed: resumed, offered: offered)
        }
        if !earlyAccepted {
            do {
                _ = try session.drive { ssl in
                    requestBytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
                }
            } catch {
                throw classifyLateFailure(error, state: state, during: "sending the request")
            }
        }

        var response: [UInt8] = []
        var ending = "server closed the connection"
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)  // one buffer for every read of the response
        reading: while response.count < maximumResponseBytes {
            do {
                let count = try session.drive { ssl in
                    chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                }
                response += chunk.prefix(Int(count))
            } catch .closed {
                break reading
            } catch {
                if response.isEmpty { throw classifyLateFailure(error, state: state, during: "reading the response") }
                if case .transport(let failure) = error, failure.category == .timeout {
                    ending = "response incomplete at the deadline"
                } else if case .failed(_, let errors) = error, !errors.isEmpty {
                    ending = "response ended without close_notify (\(errors))"
                }
                break reading
            }
        }
        if let cache = target.sessionCache, let made = SSL_get1_session(session.ssl) {
            // TLS 1.3 tickets arrive after the handshake, with the response: the session is taken only now.
            let handle = SSLSessionHandle(adopting: made)
            let entry =
                resumed && offered != nil
                ? offered!.resumed(as: handle)
                : ClientSessionEntry(
                    session: handle, presentedChain: state.presentedChain, verifiedChain: state.verifiedChain,
                    issuerPath: state.issuerPath, host: name)
            cache.store(entry, forKey: cacheKey)
        }
        _ = SSL_shutdown(session.ssl)
        try? session.flush()

        let text = String(decoding: response, as: UTF8.self)
        let statusLine = text.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let how =
            earlyAccepted
            ? " as 0-RTT early data" : (sentEarly ? " (its early data was rejected, so again after the handshake)" : "")
        var detail =
            "sent GET /\(how) over \(session.negotiated)\(resumed ? " (resumed session)" : ""); response: \(statusLine.isEmpty ? "(none)" : statusLine)"
        detail += " (\(response.count) bytes, \(ending))"
        if let pinMatch = state.pinMatch { detail += "; \(pinMatch)" }
        return .accepted(detail)
    }

    /// Connects to `target`, runs the handshake as far as the server's certificates, and returns the chain the
    /// server sent (whether or not it would be trusted), or why there is none.
    static func presentedChain(target: ClientTarget) -> Result<[[UInt8]], ClientFailure> {
        let deadline = ClientDeadline(after: target.timeout)
        let state = ClientVerifyState(policy: ClientPolicy(mistake: .none, pins: .empty))
        return withExtendedLifetime(state) { () -> Result<[[UInt8]], ClientFailure> in
            do throws(ClientFailure) {
                let context = try ClientContext.shared(for: target)
                context.prepare(state)
                let socket = try ClientSocket(ip: target.ip, port: target.port, deadline: deadline)
                let session = try ClientSession(
                    context: context, socket: socket, host: target.host, state: state, deadline: deadline)
                _ = try? session.drive { SSL_connect($0) }
            } catch {
                return .failure(error)
            }
            if state.presentedChain.isEmpty {
                return .failure(ClientFailure(category: .protocolError, detail: "the server sent no certificate"))
            }
            return .success(state.presentedChainDER)
        }
    }

    /// Connects to an HTTP proxy and asks it (CONNECT) for a tunnel to `target.host:target.port`.
    private static func tunnel(through proxy: String, to target: ClientTarget, deadline: ClientDeadline)
        throws(ClientFailure) -> ClientSocket
    {
        guard let colon = proxy.lastIndex(of: ":"), let port = Int(proxy[proxy.index(after: colon)...]) else {
            throw ClientFailure(
                category: .other, detail: "target.proxy \"\(proxy)\" is not IP:PORT (e.g. 127.0.0.1:8080)")
        }
        let ip = proxy[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let socket = try ClientSocket(ip: ip, port: port, deadline: deadline)
        let authority = target.host.contains(":") ? "[\(target.host)]:\(target.port)" : "\(target.host):\(target.port)"
        try socket.sendAll(
            Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8), deadline: deadline)
        var reply: [UInt8] = []
        // Read byte-wise up to the end of the reply's header: nothing of the tunnel may be consumed here.
        while !reply.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard reply.count < 16 * 1024 else {
                throw ClientFailure(category: .protocolError, detail: "the proxy's reply to CONNECT is over 16 KiB")
            }
            var byte: UInt8 = 0
            let n = recv(socket.descriptor, &byte, 1, 0)
            if n == 1 {
                reply.append(byte)
            } else if n == 0 {
                throw ClientFailure(
                    category: .protocolError, detail: "the proxy closed the connection before answering CONNECT")
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                guard try ClientSocket.waitFor(socket.descriptor, events: Int16(POLLIN), deadline: deadline) else {
                    throw ClientFailure(
                        category: .timeout, detail: "timed out waiting for the proxy's reply to CONNECT")
                }
            } else {
                throw ClientFailure(
                    category: .protocolError, detail: "recv from the proxy: \(String(cString: strerror(errno)))")
            }
        }
        let status = String(decoding: reply, as: UTF8.self).split(separator: "\r\n").first.map(String.init) ?? ""
        guard status.split(separator: " ").dropFirst().first == "200" else {
            throw ClientFailure(category: .other, detail: "the proxy refused CONNECT \(authority): \(status)")
        }
        return socket
    }

    /// A handshake that did not complete: our own decision (pins, chain, hostname), the server's alert, the
    /// deadline, or a protocol failure — in that order of precedence.
    private static func classifyHandshakeFailure(
        _ stop: ClientTLSStop, session: ClientSession, state: ClientVerifyState
    ) -> ClientFailure {
        if let pinFailure = state.pinFailure {
            return ClientFailure(category: .pinMismatch, detail: pinFailure)
        }
        if let revocationFailure = state.revocationFailure {
            return ClientFailure(category: .chainInvalid, detail: revocationFailure)
        }
        if let ctFailure = state.ctFailure {
            return ClientFailure(category: .chainInvalid, detail: ctFailure)
        }
        let verifyResult = SSL_get_verify_result(session.ssl)
        if state.verifyCallbackRan && verifyResult != X509_V_OK {
            let reason =
                X509_verify_cert_error_string(verifyResult).map { String(cString: $0) } ?? "error \(verifyResult)"
            if verifyResult == X509_V_ERR_HOSTNAME_MISMATCH {
                return ClientFailure(category: .hostname, detail: "certificate verify failed: \(reason)")
            }
            return ClientFailure(category: .chainInvalid, detail: "certificate verify failed: \(reason)")
        }
        return classifyLateFailure(stop, state: state, during: "the handshake")
    }

    /// A failure where no local trust decision was involved: an alert from the server, EOF, timeout, protocol.
    private static func classifyLateFailure(_ stop: ClientTLSStop, state: ClientVerifyState, during: String)
        -> ClientFailure
    {
        if let alert = state.alertReceived {
            let clientAuthAlerts: Set<Int32> = [42, 43, 44, 45, 46, 48, 49, 116]  // + handshake_failure (40) below
            let isClientAuth =
                alert.code == 116
                || (state.certificateRequested && (clientAuthAlerts.contains(alert.code) || alert.code == 40))
            return ClientFailure(
                category: isClientAuth ? .clientAuth : .protocolError,
                detail: "server sent alert \(alert.text) (\(alert.code)) during \(during)"
                    + (state.certificateRequested ? " after requesting a client certificate" : "")
                    + (during == "the handshake"
                        ? ""
                        : " (in TLS 1.3 the server judges the client certificate after our Finished, so the request"
                            + " had left but the server discarded it)"))
        }
        switch stop {
        case .transport(let failure):
            return ClientFailure(category: failure.category, detail: "\(failure.detail) during \(during)")
        case .closed:
            return ClientFailure(category: .protocolError, detail: "server closed the TLS connection during \(during)")
        case .failed(let code, let errors):
            return ClientFailure(
                category: .protocolError,
                detail:
                    "TLS failure during \(during) (SSL_get_error \(code)): \(errors.isEmpty ? "connection closed" : errors)"
            )
        }
    }
}
