import Foundation

/// One worker thread of a fixture server: an event loop over a wake-up pipe, the shared listening socket (while
/// below the connection cap) and the connections this worker accepted — epoll on Linux, `poll` elsewhere.
final class Worker: PooledWorker, @unchecked Sendable {  // `connections` is touched only by the worker's own thread
    private let core: ServerCore
    private let index: Int
    /// Woken by the server's stop; closed by it once this worker's thread has ended.
    let wakeUp: WakePipe
    private var connections: [Connection] = []
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)

    init(core: ServerCore, index: Int) throws(TLSEngineError) {
        self.core = core
        self.index = index
        wakeUp = try WakePipe()
    }

    deinit { readBuffer.deallocate() }

    func run() {
        #if os(Linux)
            if core.options.eventLoop == .automatic, let epoll = EpollSet(),
                epoll.add(wakeUp.readEnd, events: Int16(POLLIN))
            {
                runEpoll(epoll)
                return
            }
        #endif
        runPoll()
    }

    private func runPoll() {
        var pollSet = PollSet()
        pollSet.run(&connections, core: core.listener, wake: wakeUp) { c, set in
            set.add(c.fd, c.events)
            return c.deadline
        } serve: { c, ready, _ in
            if ready { c.advance(buffer: readBuffer) } else { c.timedOut() }
            return c.isFinished
        } accept: { list in
            acceptPending { list.append($0) }
        }
        for c in connections { c.finish(.serverStopped, error: nil) }
        connections.removeAll()
    }

    /// Accepts a bounded batch (so that one burst cannot starve the connections already open), starts each, and
    /// hands `keep` the ones still open.
    private func acceptPending(_ keep: (Connection) -> Void) {
        for _ in 0..<32 {
            guard let accepted = core.acceptOne() else { return }
            let connection = Connection(core: core, accepted: accepted)
            connection.start(buffer: readBuffer)
            if !connection.isFinished { keep(connection) }
        }
    }

    #if os(Linux)
        /// The loop on epoll: connections stay registered with the events they wait for; a wake-up touches only the
        /// ready ones, and the connections are scanned for timeouts only when the nearest deadline has passed.
        private func runEpoll(_ epoll: EpollSet) {
            var open: [Int32: (connection: Connection, events: Int16)] = [:]
            var listening = false
            var nearest = UInt64.max

            /// After a connection moved: forget it once finished, else wait for what it now wants.
            func settle(_ c: Connection, registered: Int16?) {
                if c.isFinished {
                    open[c.fd] = nil  // its descriptor is closed, which removed it from the epoll set
                    return
                }
                if c.events != registered {
                    let ok =
                        registered == nil ? epoll.add(c.fd, events: c.events) : epoll.modify(c.fd, events: c.events)
                    guard ok else {
                        let reason = Sockets.errnoText()
                        c.finish(.handshakeFailed, error: "epoll_ctl: \(reason)")
                        open[c.fd] = nil
                        return
                    }
                }
                open[c.fd] = (c, c.events)
                nearest = min(nearest, c.deadline)
            }

            while !core.listener.isStopping {
                let mayAccept = core.listener.mayAccept()
                if mayAccept && !listening {
                    listening = epoll.add(core.listener.listenFD, events: Int16(POLLIN))
                } else if !mayAccept && listening {
                    epoll.remove(core.listener.listenFD)
                    listening = false
                }
                var acceptNow = false
                let waited = epoll.wait(timeout: Sockets.pollTimeout(until: nearest)) { fd, _ in
                    if fd == wakeUp.readEnd {
                        wakeUp.drain()
                    } else if fd == core.listener.listenFD {
                        acceptNow = true
                    } else if let (c, registered) = open[fd] {
                        c.advance(buffer: readBuffer)
                        settle(c, registered: registered)
                    }
                }
                if !waited { break }
                let now = Sockets.now()
                if nearest <= now {
                    // Time out the expired connections (which finishes them) and find the next deadline among the rest.
                    nearest = .max
                    var expired: [Connection] = []
                    for (c, _) in open.values {
                        if c.deadline <= now { expired.append(c) } else { nearest = min(nearest, c.deadline) }
                    }
                    for c in expired {
                        c.timedOut()
                        open[c.fd] = nil
                    }
                }
                if acceptNow && listening {
                    acceptPending { settle($0, registered: nil) }
                }
            }
            for (c, _) in open.values { c.finish(.serverStopped, error: nil) }
        }
    #endif
}

/// One accepted connection: handshake, read one HTTP request, write one response, close — or, when the client
/// negotiated ALPN `h2`, answer every HTTP/2 stream until the client closes (`http2`).
final class Connection {
    enum Phase { case handshake, request, response, http2, finished }

    let fd: Int32
    let id: Int
    private let core: ServerCore
    private let peer: String
    private let generation: Int
    private let identities: [ServerIdentity]
    private let startedAt = Date()
    private let startNanos = Sockets.now()
    private var handshakeNanos: UInt64?
    private var session: (any TLSServerSession)?
    private var openError: String?
    private(set) var phase = Phase.handshake
    private(set) var events = Int16(POLLIN)
    private(set) var deadline: UInt64
    private var request: [UInt8] = []
    /// Where the request head ends: scanned once however the request is split into reads (bare LFs tolerated).
    private var headScanner = HeadScanner(.crlfOrBareLF)
    private var bytesReceived = 0
    private var requestLine: String?
    private var response: [UInt8] = []
    private var written = 0
    /// The HTTP/2 session, once the client negotiated `h2`; the streams it asked for, in order.
    private var http2: HTTP2Session?
    private var streams: [HTTP2Stream] = []
    /// The last HTTP/2 answer's JSON up to its `"stream":` value, with the request line and `:authority` it is for:
    /// the TLS details in it are fixed once the handshake ended, so the streams of a connection that ask for the
    /// same thing differ only in their identifier, and the body is encoded once rather than once per stream.
    private var lastAnswer: (request: String, authority: String?, prefix: [UInt8])?

    var isFinished: Bool { phase == .finished }

    init(core: ServerCore, accepted: ServerCore.Accepted) {
        self.core = core
        self.fd = accepted.fd
        self.id = accepted.id
        self.peer = accepted.peer
        self.generation = accepted.generation
        self.identities = accepted.identities
        self.deadline = startNanos &+ core.listener.handshakeTimeout
        do {
            session = try accepted.context.makeSession(socket: accepted.fd)
        } catch {
            openError = error.reason
        }
    }

    func start(buffer: UnsafeMutableRawBufferPointer) {
        guard session != nil else {
            finish(.handshakeFailed, error: openError ?? "could not create a TLS session")
            return
        }
        // The ClientHello has usually arrived with the connection: try at once.
        advance(buffer: buffer)
    }

    func advance(buffer: UnsafeMutableRawBufferPointer) {
        guard let session else { return }
        while true {
            let step: TLSStep
            switch phase {
            case .handshake:
                step = session.handshake()
            case .request:
                step = session.read(into: buffer)
            case .response:
                if written >= response.count {
                    session.shutdown()
                    drain()
                    finish(.responseSent, error: nil)
                    return
                }
                step = response.withUnsafeBytes { all in
                    session.write(UnsafeRawBufferPointer(rebasing: all[written...]))
                }
            case .http2:
                if written < response.count {
                    step = response.withUnsafeBytes { all in
                        session.write(UnsafeRawBufferPointer(rebasing: all[written...]))
                    }
                } else if let h2 = http2, !h2.isAlive {
                    session.shutdown()
                    drain()
                    finish(streams.isEmpty ? .closedAfterHandshake : .responseSent, error: openError)
                    return
                } else {
                    step = session.read(into: buffer)
                }
            case .finished:
                return
            }
            switch step {
            case .wantRead:
                // Waiting for the client, who may be waiting for our ACK: see ``Sockets/acknowledgeNow(_:)``.
                if phase == .handshake || phase == .request || phase == .http2 { Sockets.acknowledgeNow(fd) }
                events = Int16(POLLIN)
                return
            case .wantWrite:
                events = Int16(POLLOUT)
                return
            case .closed(let t) where phase == .http2 && !streams.isEmpty && t.kind != .protocolError:
                // The client closed an HTTP/2 connection after its requests were answered: the normal end.
                finish(.responseSent, error: nil)
                return
            case .closed(let t):
                let handshakeDone = phase != .handshake
                let sawData = phase == .response || bytesReceived > 0
                finish(Self.closure(t, handshakeDone: handshakeDone, sawData: sawData), error: t.detail)
                return
            case .done where phase != .handshake:
                continue
            case .done, .bytes:
                progressed(step, buffer: buffer)
            }
        }
    }

    /// A step that moved: the handshake finished, request bytes arrived, or response bytes left.
    private func progressed(_ step: TLSStep, buffer: UnsafeMutableRawBufferPointer) {
        let n: Int
        if case .bytes(let count) = step { n = count } else { n = 0 }
        switch phase {
        case .handshake:
            handshakeNanos = Sockets.now()
            phase = .request
            deadline = handshakeNanos! &+ core.listener.idleTimeout
            if session?.details.alpn == HTTP2.alpn { startHTTP2() }
        case .request:
            // The deadline set at the end of the handshake bounds the whole request: a client trickling bytes
            // cannot hold the connection longer than the idle timeout.
            bytesReceived += n
            if request.count < Self.maxRequest {
                request.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            }
            if let end = headScanner.scan(request) {
                prepareResponse(status: "200 OK", headerBytes: end)
            } else if request.count >= Self.maxRequest {
                prepareResponse(status: "431 Request Header Fields Too Large", headerBytes: request.count)
            }
        case .response:
            written += n
            deadline = Sockets.now() &+ core.listener.idleTimeout
        case .http2:
            guard let h2 = http2 else { return }
            deadline = Sockets.now() &+ core.listener.idleTimeout
            if written < response.count {
                written += n
                if written < response.count { return }
            } else {
                bytesReceived += n
                do {
                    try h2.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    answerStreams(h2)
                } catch {
                    h2.goAway()  // nghttp2 queued a GOAWAY with the error: send it, then close
                    openError = error.description
                }
            }
            do {
                response = try h2.takeOutput()
                written = 0
            } catch {
                finish(.protocolError, error: error.description)
            }
        case .finished:
            break
        }
    }

    /// The client negotiated `h2`: the server's SETTINGS go out first, then every stream is answered.
    private func startHTTP2() {
        guard let h2 = HTTP2Session(server: true) else {
            finish(.protocolError, error: HTTP2.availability.unavailableReason ?? "could not create an HTTP/2 session")
            return
        }
        http2 = h2
        phase = .http2
        response = (try? h2.takeOutput()) ?? []
        written = 0
    }

    /// Answers each stream whose request ended, with the connection as the server saw it and the stream's
    /// `:authority`; records the stream at once (``ServerCore/recordStream``), so that a request sent on a
    /// connection that is still open counts as sent.
    private func answerStreams(_ h2: HTTP2Session) {
        for i in 0..<h2.streamCount where h2.awaitsResponse(i) {
            let stream = h2.stream(at: i)
            if streams.count < Self.maxStreamsRecorded { streams.append(stream) }
            let line = "\(stream.method ?? "GET") \(stream.path ?? "/") HTTP/2"
            if requestLine == nil { requestLine = line }
            let d = session?.details ?? TLSSessionDetails()
            core.recordStream(connection: id, serverName: d.serverName, stream: stream)
            let prefix: [UInt8]
            if let last = lastAnswer, last.request == line, last.authority == stream.authority {
                prefix = last.prefix
            } else {
                let summary = ResponseBody(
                    scenario: core.label, engine: core.engineName, connection: id, tlsVersion: d.version?.rawValue,
                    cipher: d.cipherSuite, alpn: d.alpn, sni: d.serverName,
                    clientCertificateSubject: d.clientCertificates.first?.subject, request: line,
                    authority: stream.authority)
                prefix = Self.answerPrefix(summary)
                lastAnswer = (line, stream.authority, prefix)
            }
            var body = prefix
            body.reserveCapacity(prefix.count + 14)
            body.append(contentsOf: String(stream.id).utf8)
            body.append(contentsOf: Self.answerEnd)
            try? h2.respond(i, status: 200, body: body)
        }
    }

    /// `{…}` of an HTTP/2 answer without its stream identifier, as `{…,"stream":`, which the identifier and
    /// ``answerEnd`` complete: the same JSON object as encoding the body with `stream` set, its last member.
    static func answerPrefix(_ summary: ResponseBody) -> [UInt8] {
        guard var json = try? Self.encoder.encode(summary), json.last == UInt8(ascii: "}") else {
            return Array(#"{"stream":"#.utf8)
        }
        json.removeLast()
        return Array(json) + Array(#","stream":"#.utf8)
    }

    private static let answerEnd: [UInt8] = Array("}\n".utf8)

    static let maxStreamsRecorded = 256

    func timedOut() {
        switch phase {
        case .handshake: finish(.handshakeTimeout, error: nil)
        case .request, .response: finish(.idleTimeout, error: nil)
        case .http2: finish(streams.isEmpty ? .idleTimeout : .responseSent, error: nil)
        case .finished: return
        }
    }

    static let maxRequest = 16 * 1024

    static func closure(_ t: TLSTermination, handshakeDone: Bool, sawData: Bool) -> Observation.Closure {
        switch t.kind {
        case .alertReceived: return .alert
        case .reset: return .reset
        case .protocolError: return handshakeDone ? .protocolError : .handshakeFailed
        case .closeNotify where !handshakeDone: return .alert
        default:
            if !handshakeDone { return .eofBeforeHandshake }
            return sawData ? .closedDuringRequest : .closedAfterHandshake
        }
    }

    private func prepareResponse(status: String, headerBytes: Int) {
        let head = request.prefix(headerBytes)
        if let lineEnd = head.firstIndex(of: 0x0A) {
            var line = head[..<lineEnd]
            if line.last == 0x0D { line = line.dropLast() }
            requestLine = String(decoding: line.prefix(1024), as: UTF8.self)
        }
        let d = session?.details ?? TLSSessionDetails()
        let summary = ResponseBody(
            scenario: core.label, engine: core.engineName, connection: id, tlsVersion: d.version?.rawValue,
            cipher: d.cipherSuite, alpn: d.alpn, sni: d.serverName,
            clientCertificateSubject: d.clientCertificates.first?.subject, request: requestLine)
        let body = ((try? Self.encoder.encode(summary)) ?? Data("{}".utf8)) + Data("\n".utf8)
        let header =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\nServer: pinninglab-\(core.engineName)\r\n\r\n"
        response = Array(header.utf8) + Array(body)
        written = 0
        phase = .response
    }

    /// What the fixture server answers: the connection as the server saw it (every key present, null when unknown).
    struct ResponseBody: Encodable {
        var scenario: String
        var engine: String
        var connection: Int
        @NullWhenAbsent var tlsVersion: String?
        @NullWhenAbsent var cipher: String?
        @NullWhenAbsent var alpn: String?
        @NullWhenAbsent var sni: String?
        @NullWhenAbsent var clientCertificateSubject: String?
        @NullWhenAbsent var request: String?
        /// HTTP/2 only (absent over HTTP/1.1): the stream's `:authority` and identifier.
        var authority: String? = nil
        var stream: Int? = nil

        enum CodingKeys: String, CodingKey {
            case scenario, engine, connection, cipher, alpn, sni, request, authority, stream
            case tlsVersion = "tls_version"
            case clientCertificateSubject = "client_certificate_subject"
        }
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    /// Reads (and discards) what the client already sent so that closing does not turn into a reset that could
    /// destroy the response in the client's receive buffer.
    private func drain() {
        var sink = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<8 where read(fd, &sink, sink.count) > 0 {}
    }

    func finish(_ closure: Observation.Closure, error: String?) {
        guard phase != .finished else { return }
        phase = .finished
        let end = Sockets.now()
        let d = session?.details ?? TLSSessionDetails()
        session = nil  // frees the engine's session before the descriptor is closed
        close(fd)
        let served = d.identityIndex.flatMap { $0 < identities.count ? identities[$0] : nil }
        // The certificates sent are normally exactly the configured chain: then share its storage rather than
        // keeping a copy per observation.
        let sent = d.serverCertificatesSent.map { certs in
            certs == served?.chainDER ? served!.chainDER : certs
        }
        var observation = Observation(
            id: id, label: core.label, engine: core.engineName, startedAt: startedAt, peerAddress: peer,
            serverName: d.serverName, identity: served.flatMap { $0.name.isEmpty ? nil : $0.name },
            generation: generation,
            handshakeCompleted: handshakeNanos != nil, alertReceived: d.alertReceived, alertSent: d.alertSent,
            closure: closure, error: (error?.isEmpty ?? true) ? nil : error, tlsVersion: d.version,
            cipherSuite: d.cipherSuite, alpn: d.alpn, resumption: d.resumption,
            clientCertificates: d.clientCertificates,
            serverCertificates: sent?.map { ObservedCertificate(der: $0) },
            // Early data reached the server even when the handshake never completed (the client decided after
            // sending it): it counts as application data received. `read(into:)` hands it over first, so once the
            // request was read it is part of `bytesReceived` already.
            applicationDataReceived: bytesReceived > 0 || d.earlyDataBytes > 0,
            bytesReceived: max(bytesReceived, d.earlyDataBytes), requestLine: requestLine,
            http2Streams: http2 == nil ? nil : streams,
            handshakeMilliseconds: handshakeNanos.map { Double($0 - startNanos) / 1e6 },
            totalMilliseconds: Double(end - startNanos) / 1e6, earlyDataBytes: d.earlyDataBytes)
        observation.negotiatedGroup = d.negotiatedGroup
        observation.echOffered = d.echOffered
        observation.offered = d.offered
        observation.helloRetryRequest = d.offered == nil && !d.helloRetryRequest ? nil : d.helloRetryRequest
        core.record(observation)
    }
}
