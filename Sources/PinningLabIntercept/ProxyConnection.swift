import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabPKI
import PinningLabReports

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One client connection: the CONNECT request, then an intercepted TLS session or a TCP tunnel.
final class ProxyConnection {
    enum Phase {
        case connectRequest, connectReply, hello, fetching, handshake, request, response, resolving, dialing, tunnel,
            finished
    }

    let fd: Int32
    private(set) var upstreamFD: Int32 = -1
    private let core: ProxyCore
    private let started = Date()
    private let startNanos = Sockets.now()
    private(set) var phase = Phase.connectRequest
    private(set) var clientEvents = Int16(POLLIN)
    private(set) var upstreamEvents: Int16 = 0
    private(set) var deadline: UInt64
    private(set) var retryAt = UInt64.max
    private var inbound: [UInt8] = []
    /// Where the head in `inbound` ends (the CONNECT request's, then the intercepted request's): scanned once
    /// however it is split into reads.
    private var headScanner = HeadScanner(.crlf)
    private var outbound: [UInt8] = []
    private var written = 0
    private var afterReply = Phase.hello
    private var session: (any TLSServerSession)?
    private var observation: InterceptObservation
    private var authorityHost = ""
    private var authorityPort = 0
    /// Where the tunnel goes, the vetted addresses not tried yet, and whether the `CONNECT` is still unanswered
    /// (a refusal is then a `403`/`502` reply; after the `200`, the connection is closed with the reason).
    private var target: UpstreamTarget?
    private var dialAddresses: [String] = []
    private var replyPending = false
    private var lookup: PendingLookup?
    private let wake: WakePipe
    // Tunnel buffers: client → upstream and upstream → client, with their read offsets.
    private var toUpstream: [UInt8] = []
    private var toUpstreamOffset = 0
    private var toClient: [UInt8] = []
    private var toClientOffset = 0
    private var clientEOF = false
    private var upstreamEOF = false

    static let maxHeader = 16 * 1024
    static let bufferSize = 64 * 1024

    var isFinished: Bool { phase == .finished }
    /// A name look-up finished: serve the connection now.
    var lookupDone: Bool { lookup?.isReady ?? false }

    init(core: ProxyCore, fd: Int32, peer: String, id: Int, wake: WakePipe) {
        self.core = core
        self.fd = fd
        self.wake = wake
        deadline = startNanos &+ core.listener.handshakeTimeout
        observation = InterceptObservation(
            id: id, startedAt: started, peer: peer, authority: nil, host: nil, serverName: nil, policy: nil,
            upstream: nil, handshakeCompleted: false, applicationDataReceived: false, bytesFromClient: 0,
            bytesFromUpstream: 0, requestLine: nil, alertReceived: nil, tlsVersion: nil, closure: "", error: nil,
            genuineChain: nil, totalMilliseconds: 0)
    }

    func timedOut() {
        switch phase {
        case .connectRequest, .connectReply, .hello, .handshake: finish("handshake-timeout", error: nil)
        case .fetching: finish("upstream-timeout", error: "the upstream's chain was not fetched in time")
        case .resolving:
            lookup?.cancel()
            lookup = nil
            let name = target?.host ?? authorityHost
            refuse(
                "502 Bad Gateway", "upstream-unreachable",
                "cannot resolve \(name) within \(core.configuration.lookupTimeout.secondsText)")
            advance()
        case .dialing: finish("upstream-timeout", error: "no connection to \(observation.upstream ?? "the upstream")")
        case .request, .response, .tunnel: finish("idle-timeout", error: nil)
        case .finished: return
        }
    }

    func advance() {
        retryAt = .max
        while true {
            switch phase {
            case .connectRequest:
                guard readConnect() else { return }
            case .connectReply:
                guard writeOutbound() else { return }
                if afterReply == .finished {
                    finish(observation.closure, error: observation.error)
                    return
                }
                phase = afterReply
                if phase == .dialing { dial() }
            case .resolving:
                guard let result = lookup?.take() else { return }
                lookup = nil
                resolved(result)
            case .hello:
                guard peekHello() else { return }
            case .fetching:
                guard let host = observation.host,
                    core.genuineReady(host: host, authorityHost: authorityHost, authorityPort: authorityPort)
                else {
                    retryAt = Sockets.now() &+ 5_000_000
                    return
                }
                guard openSession(host: host, policy: .stuff) else { return }
            case .handshake:
                guard let session else { return }
                switch session.handshake() {
                case .done, .bytes:
                    observation.handshakeCompleted = true
                    observation.tlsVersion = session.details.version?.rawValue
                    phase = .request
                    deadline = Sockets.now() &+ core.listener.idleTimeout
                case .wantRead:
                    Sockets.acknowledgeNow(fd)  // a client with Nagle on may be waiting for our ACK
                    clientEvents = Int16(POLLIN)
                    return
                case .wantWrite:
                    clientEvents = Int16(POLLOUT)
                    return
                case .closed(let t):
                    finish(
                        t.kind == .alertReceived || t.kind == .closeNotify ? "alert" : "handshake-failed:\(t.kind)",
                        error: t.detail)
                    return
                }
            case .request:
                guard let session else { return }
                var chunk = [UInt8](repeating: 0, count: 16 * 1024)
                let step = chunk.withUnsafeMutableBytes { session.read(into: $0) }
                switch step {
                case .bytes(let n):
                    observation.applicationDataReceived = true
                    observation.bytesFromClient += n
                    if inbound.count < Self.maxHeader { inbound += chunk.prefix(n) }
                    if let end = headScanner.scan(inbound) ?? (inbound.count >= Self.maxHeader ? inbound.count : nil) {
                        prepareResponse(headerBytes: end)
                    }
                case .done: continue
                case .wantRead:
                    Sockets.acknowledgeNow(fd)
                    clientEvents = Int16(POLLIN)
                    return
                case .wantWrite:
                    clientEvents = Int16(POLLOUT)
                    return
                case .closed(let t):
                    finish(
                        observation.applicationDataReceived ? "closed-during-request" : "closed-after-handshake",
                        error: t.detail)
                    return
                }
            case .response:
                guard let session else { return }
                if written >= outbound.count {
                    session.shutdown()
                    finish("response-sent", error: nil)
                    return
                }
                let step = outbound.withUnsafeBytes { session.write(UnsafeRawBufferPointer(rebasing: $0[written...])) }
                switch step {
                case .bytes(let n): written += n
                case .done: continue
                case .wantRead:
                    clientEvents = Int16(POLLIN)
                    return
                case .wantWrite:
                    clientEvents = Int16(POLLOUT)
                    return
                case .closed(let t):
                    finish("closed-during-response", error: t.detail)
                    return
                }
            case .dialing:
                guard finishDial() else { return }
            case .tunnel:
                relay()
                return
            case .finished:
                return
            }
        }
    }

    // MARK: CONNECT

    /// Reads the CONNECT request; `true` when the phase moved on.
    private func readConnect() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &chunk, chunk.count)
        if n == 0 {
            finish(inbound.isEmpty ? "closed-before-connect" : "closed-during-connect", error: nil)
            return false
        }
        if n < 0 {
            if Self.wouldBlock {
                clientEvents = Int16(POLLIN)
                return false
            }
            finish("reset", error: Sockets.errnoText())
            return false
        }
        inbound += chunk.prefix(n)
        guard let end = headScanner.scan(inbound) else {
            if inbound.count >= Self.maxHeader {
                reject("431 Request Header Fields Too Large", "the CONNECT request is over 16 KiB")
            }
            return inbound.count >= Self.maxHeader
        }
        let head = String(decoding: inbound.prefix(end), as: UTF8.self)
        let line = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let words = line.split(separator: " ").map(String.init)
        observation.requestLine = String(line.prefix(1024))
        inbound.removeFirst(end)
        headScanner.reset()
        guard words.count == 3, words[2].hasPrefix("HTTP/1.") else {
            reject("400 Bad Request", "not an HTTP/1.x request line")
            return true
        }
        guard words[0] == "CONNECT" else {
            reject(
                "405 Method Not Allowed",
                "pinlab intercept is an HTTPS proxy: it handles CONNECT only, not \(words[0]) (plain HTTP is not proxied)"
            )
            return true
        }
        guard let (host, port) = Authority.split(words[1]) else {
            reject("400 Bad Request", "'\(words[1])' is not a CONNECT authority (host:port)")
            return true
        }
        observation.authority = words[1]
        authorityHost = host
        authorityPort = port
        if !inbound.isEmpty {
            // The client sent TLS bytes before our 200: they were consumed with the header; a TLS engine reading
            // the socket would miss them. No real client does this (it must wait for the 200).
            reject("400 Bad Request", "data sent before the proxy's 200 reply")
            return true
        }
        // A passthrough host named by the authority is resolved, vetted and dialled before the 200 (server-speaks-
        // first protocols work; a refused destination gets its 403); otherwise the ClientHello's SNI decides. An
        // address whose own policy passes it through is vetted now too, so that it is refused with a 403.
        let passthrough = core.policy(for: host) == .passthrough
        if passthrough && AddressRange.bytes(host) == nil {
            observation.host = host
            observation.policy = .passthrough
            startDial(replyPending: true)
            return true
        }
        if passthrough {
            let target = core.configuration.upstream(host: host, authorityHost: host, authorityPort: port)
            if !target.routed, let why = core.configuration.refusal(target, addresses: [target.host]) {
                observation.policy = .passthrough
                reject("403 Forbidden", why, closure: "destination-refused")
                return true
            }
        }
        acceptConnect(then: .hello)
        return true
    }

    /// Answers the CONNECT with a 200, then goes on with `next`.
    private func acceptConnect(then next: Phase) {
        afterReply = next
        outbound = Array("HTTP/1.1 200 Connection established\r\nProxy-Agent: pinlab-intercept\r\n\r\n".utf8)
        written = 0
        phase = .connectReply
    }

    private func reject(_ status: String, _ why: String, closure: String = "not-connect") {
        observation.closure = closure
        observation.error = why
        let body = why + "\n"
        outbound = Array(
            "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                .utf8)
        written = 0
        afterReply = .finished
        phase = .connectReply
    }

    /// Writes `outbound` in plain text; `true` when all of it is written.
    private func writeOutbound() -> Bool {
        while written < outbound.count {
            let n = outbound.withUnsafeBytes {
                send(fd, $0.baseAddress! + written, outbound.count - written, Self.noSignal)
            }
            if n < 0 {
                if Self.wouldBlock {
                    clientEvents = Int16(POLLOUT)
                    return false
                }
                finish("reset", error: Sockets.errnoText())
                return false
            }
            written += n
        }
        return true
    }

    // MARK: ClientHello

    /// Peeks at the ClientHello for the SNI, then picks the policy; `true` when the phase moved on.
    private func peekHello() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024 + 5)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_PEEK))
        if n == 0 {
            finish("closed-before-hello", error: nil)
            return false
        }
        if n < 0 {
            if Self.wouldBlock {
                clientEvents = Int16(POLLIN)
                return false
            }
            finish("reset", error: Sockets.errnoText())
            return false
        }
        let hello = ClientHello.parse(buffer.prefix(n))
        let host: String
        switch hello {
        case .incomplete:
            // Part of the record is here: poll would report the socket readable at once, so look again shortly.
            clientEvents = 0
            retryAt = Sockets.now() &+ 1_000_000
            return false
        case .notTLS:
            host = authorityHost
        case .hello(let sni):
            observation.serverName = sni
            if let sni, !Self.isServerName(sni) {
                refuseServerName(sni, helloBytes: n)
                return false
            }
            host = sni.map { HostPattern.normalize($0) } ?? authorityHost
        }
        observation.host = host
        let policy = core.policy(for: host)
        observation.policy = policy
        if policy == .passthrough {
            startDial(replyPending: false)
            return true
        }
        guard case .hello = hello else {
            // Plain text inside the tunnel: the request left in clear, which no pinning can excuse.
            let line = buffer.prefix(n).split(separator: 0x0A, maxSplits: 1).first.map {
                String(decoding: $0.prefix(1024), as: UTF8.self)
            }
            observation.applicationDataReceived = true
            observation.bytesFromClient = n
            observation.requestLine = line?.trimmingCharacters(in: .whitespacesAndNewlines)
            finish("not-tls", error: "the client sent plain text through the tunnel, not a TLS ClientHello")
            return false
        }
        if policy == .stuff
            && !core.genuineReady(host: host, authorityHost: authorityHost, authorityPort: authorityPort)
        {
            phase = .fetching
            clientEvents = 0
            retryAt = Sockets.now() &+ 5_000_000
            return false
        }
        return openSession(host: host, policy: policy)
    }

    /// Whether a ClientHello's server name is a host name as RFC 6066 §3 has it (`HostName`: LDH labels, the last
    /// not all digits; no IP literal), allowing the one trailing dot some clients send.
    static func isServerName(_ sni: String) -> Bool {
        HostName.isValid(sni.hasSuffix(".") ? String(sni.dropLast()) : sni)
    }

    /// A ClientHello named something that is not a host name (a backtick, a line break, an escape sequence, HTML):
    /// no policy is looked up and no leaf is minted for it; the client gets a fatal `illegal_parameter` alert
    /// (RFC 8446 §6.2: a field "incorrectly formatted"), and the connection is recorded with no host — it is not a
    /// domain and gets no verdict; the reports list the name, escaped.
    private func refuseServerName(_ sni: String, helloBytes: Int) {
        // The peeked ClientHello is read first: a socket closed with unread bytes resets the connection, and the
        // client could lose the alert.
        var hello = [UInt8](repeating: 0, count: helloBytes)
        _ = read(fd, &hello, helloBytes)
        let alert: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 47]  // alert record: fatal, illegal_parameter
        _ = alert.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Self.noSignal) }
        observation.host = nil
        observation.policy = nil
        let shown = TextEscaping.terminal(sni.count > 80 ? String(sni.prefix(80)) + "…" : sni)
        finish(
            InterceptReport.serverNameRefused,
            error:
                "the ClientHello's server name '\(shown)' is not a host name (RFC 6066: letters, digits and hyphens in "
                + "dot-separated labels): refused with the alert illegal_parameter, no certificate made")
    }

    /// Starts the intercepted TLS session; `false` when it could not.
    private func openSession(host: String, policy: InterceptPolicy) -> Bool {
        if policy == .stuff { observation.genuineChain = core.genuine(for: host).source }
        do {
            session = try core.context(host: host, policy: policy).makeSession(socket: fd)
        } catch {
            finish("proxy-error", error: "cannot serve \(host): \(error)")
            return false
        }
        clientEvents = Int16(POLLIN)
        phase = .handshake
        return true
    }

    // MARK: Intercepted request

    /// A request line as the reports keep it: the query (where apps carry tokens and codes) becomes `?…`. That the
    /// request was sent, its method and path are the evidence; what it carried is not the report's business.
    static func withoutQuery(_ line: String) -> String {
        var parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, let q = parts[1].firstIndex(of: "?") else { return line }
        parts[1] = parts[1][..<q] + "?…"
        return parts.joined(separator: " ")
    }

    private func prepareResponse(headerBytes: Int) {
        let head = inbound.prefix(headerBytes)
        if let lineEnd = head.firstIndex(of: 0x0A) {
            var line = head[..<lineEnd]
            if line.last == 0x0D { line = line.dropLast() }
            observation.requestLine = Self.withoutQuery(String(decoding: line.prefix(1024), as: UTF8.self))
        }
        let fields: [(String, String?)] = [
            ("intercepted_by", "pinlab intercept"), ("host", observation.host),
            ("policy", observation.policy?.rawValue),
            ("request", observation.requestLine),
        ]
        let body =
            "{"
            + fields.map { "\"\($0.0)\":" + ($0.1.map(ProxyConnection.jsonString) ?? "null") }.joined(separator: ",")
            + "}\n"
        outbound = Array(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\nServer: pinlab-intercept\r\n\r\n\(body)"
                .utf8)
        written = 0
        phase = .response
        deadline = Sockets.now() &+ core.listener.idleTimeout
    }

    static func jsonString(_ s: String) -> String {
        (try? JSONOutput.string(s)) ?? "\"\""
    }

    // MARK: Tunnel

    /// Picks the upstream for the connection's host, resolves it off this thread when it is a name, vets it, then
    /// dials it: before the 200 (`replyPending`) or after it (the ClientHello named a passthrough host).
    private func startDial(replyPending: Bool) {
        self.replyPending = replyPending
        let target = core.configuration.upstream(
            host: observation.host ?? authorityHost, authorityHost: authorityHost, authorityPort: authorityPort)
        self.target = target
        if AddressRange.bytes(target.host) != nil {
            resolved(.success([target.host]))
            return
        }
        let pending = PendingLookup(host: target.host, wake: wake)
        let resolver = core.resolver
        guard core.lookups.submit({ pending.deliver(resolver(target.host)) }) else {
            refuse(
                "503 Service Unavailable", "upstream-unreachable",
                "cannot resolve \(target.host): \(core.lookups.maxPending) name look-ups are pending; try again")
            return
        }
        lookup = pending
        phase = .resolving
        clientEvents = 0
        upstreamEvents = 0
        deadline = Sockets.now() &+ Sockets.nanoseconds(core.configuration.lookupTimeout)
    }

    /// The look-up's answer: refuse, or dial the vetted addresses (never resolving again).
    private func resolved(_ result: NameResolution) {
        guard let target else { return }
        switch result {
        case .failure(let failure):
            refuse("502 Bad Gateway", "upstream-unreachable", "cannot resolve \(target.host): \(failure.reason)")
        case .success(let addresses):
            if let why = core.configuration.refusal(target, addresses: addresses) {
                refuse("403 Forbidden", "destination-refused", why)
                return
            }
            dialAddresses = addresses
            if replyPending {
                acceptConnect(then: .dialing)
            } else {
                dial()
            }
        }
    }

    /// Refuses the destination: a reply while the CONNECT is unanswered, else the connection is closed with the
    /// reason. A refused destination is not judged as a host (it was never reached).
    private func refuse(_ status: String, _ closure: String, _ why: String) {
        if closure == "destination-refused" { observation.host = nil }
        if replyPending {
            reject(status, why, closure: closure)
        } else {
            finish(closure, error: why)
        }
    }

    /// Dials the next vetted address (numeric: nothing is resolved here).
    private func dial() {
        guard let target, !dialAddresses.isEmpty else {
            finish("upstream-unreachable", error: "no address to connect to")
            return
        }
        let address = dialAddresses.removeFirst()
        observation.upstream = target.text
        do {
            let started = try Sockets.startConnect(host: address, port: target.port, numericHost: true)
            upstreamFD = started.fd  // owned from here: finish closes it
        } catch {
            if !dialAddresses.isEmpty { return dial() }
            finish(
                "upstream-unreachable",
                error: "connect \(target.text)\(address == target.host ? "" : " (\(address))"): \(error.reason)")
            return
        }
        phase = .dialing
        clientEvents = 0
        upstreamEvents = Int16(POLLOUT)
        deadline = Sockets.now() &+ core.listener.handshakeTimeout
    }

    private func finishDial() -> Bool {
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(upstreamFD, SOL_SOCKET, SO_ERROR, &err, &len)
        if err == EINPROGRESS || err == EALREADY { return false }
        if err != 0 {
            if !dialAddresses.isEmpty {  // the name's next address
                close(upstreamFD)
                upstreamFD = -1
                dial()
                return false
            }
            finish("upstream-unreachable", error: "connect \(observation.upstream ?? ""): \(Sockets.errnoText(err))")
            return false
        }
        var probe = pollfd(fd: upstreamFD, events: Int16(POLLOUT), revents: 0)
        guard poll(&probe, 1, 0) > 0 else {
            upstreamEvents = Int16(POLLOUT)
            return false
        }
        phase = .tunnel
        deadline = Sockets.now() &+ core.listener.idleTimeout
        return true
    }

    /// Moves bytes both ways until both sides closed.
    private func relay() {
        var progressed = false
        // Client → upstream, then upstream → client. `move` holds inout accesses to this connection's fields, so the
        // tunnel is ended here, after they are over (ending it inside `move` was a fatal exclusivity violation).
        var failure = move(
            from: fd, to: upstreamFD, buffer: &toUpstream, offset: &toUpstreamOffset, eof: &clientEOF,
            count: &observation.bytesFromClient, progressed: &progressed)
        if failure == nil {
            failure = move(
                from: upstreamFD, to: fd, buffer: &toClient, offset: &toClientOffset, eof: &upstreamEOF,
                count: &observation.bytesFromUpstream, progressed: &progressed)
        }
        if let failure {
            finish("tunnel-reset", error: failure)
            return
        }
        if clientEOF && upstreamEOF && toUpstream.isEmpty && toClient.isEmpty {
            finish("tunnel-closed", error: nil)
            return
        }
        if progressed { deadline = Sockets.now() &+ core.listener.idleTimeout }
        clientEvents = (toUpstream.isEmpty && !clientEOF ? Int16(POLLIN) : 0) | (toClient.isEmpty ? 0 : Int16(POLLOUT))
        upstreamEvents =
            (toClient.isEmpty && !upstreamEOF ? Int16(POLLIN) : 0) | (toUpstream.isEmpty ? 0 : Int16(POLLOUT))
        if clientEvents == 0 && upstreamEvents == 0 { finish("tunnel-closed", error: nil) }
    }

    /// One direction of the tunnel: flush what is pending, else read more. Returns the socket error that ends the
    /// tunnel, nil while it goes on (a call that would block only means "not now").
    private func move(
        from source: Int32, to sink: Int32, buffer: inout [UInt8], offset: inout Int, eof: inout Bool, count: inout Int,
        progressed: inout Bool
    ) -> String? {
        for _ in 0..<4 {
            if !buffer.isEmpty {
                let n = buffer.withUnsafeBytes {
                    send(sink, $0.baseAddress! + offset, buffer.count - offset, Self.noSignal)
                }
                if n < 0 { return Self.failure() }
                progressed = true
                offset += n
                if offset < buffer.count { return nil }
                buffer.removeAll(keepingCapacity: true)
                offset = 0
                if eof { shutdown(sink, Int32(SHUT_WR)) }
            }
            if eof { return nil }
            var chunk = [UInt8](repeating: 0, count: Self.bufferSize)
            let n = read(source, &chunk, chunk.count)
            if n == 0 {
                eof = true
                progressed = true
                shutdown(sink, Int32(SHUT_WR))
                return nil
            }
            if n < 0 { return Self.failure() }
            progressed = true
            count += n
            buffer = Array(chunk.prefix(n))
            offset = 0
        }
        return nil
    }

    /// After a tunnel's send or read failed: nil when that only means "not now", else the error.
    private static func failure() -> String? { wouldBlock ? nil : Sockets.errnoText() }

    /// Whether the last failed socket call only means "not now".
    static var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }

    #if os(Linux)
        static let noSignal = Int32(MSG_NOSIGNAL)
    #else
        static let noSignal: Int32 = 0
    #endif

    // MARK: End

    func finish(_ closure: String, error: String?) {
        guard phase != .finished else { return }
        phase = .finished
        lookup?.cancel()  // from here its thread never wakes this worker
        lookup = nil
        if let d = session?.details {
            if observation.alertReceived == nil { observation.alertReceived = d.alertReceived?.name }
            if observation.tlsVersion == nil { observation.tlsVersion = d.version?.rawValue }
            if observation.serverName == nil { observation.serverName = d.serverName }
        }
        session = nil  // frees the engine's session before its descriptor is closed
        close(fd)
        if upstreamFD >= 0 { close(upstreamFD) }
        upstreamFD = -1
        observation.closure = closure
        if let error, !error.isEmpty { observation.error = error }
        observation.totalMilliseconds = Double(Sockets.now() - startNanos) / 1e6
        core.record(observation)
    }
}
