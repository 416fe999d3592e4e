package import Foundation
import PinningLabBase
import PinningLabPKI  // Locked

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The package's one small HTTP/1.1 server, under the control API, the live view and the lab's revocation
/// responder: one request per connection (`Connection: close`), on threads of its own — one that accepts and one per
/// connection, never Swift's cooperative pool — so that no flood of requests can starve the process's other work
/// (its signal handling included). An owner whose answers are quick (the revocation responder's OCSP POSTs: one
/// signature) may have them answered on the accepting thread instead, when the whole request has already arrived
/// as the connection is accepted (``Limits/answersAtOnce``); anything that would wait goes to a thread of its own.
///
/// Bounded everywhere: at most `maxConnections` connections at once (more wait in the listen queue); the request
/// line and headers are read until CRLFCRLF or ``HTTPRequestHead/maxBytes`` (then 431 at once, without reading on);
/// a body only with `Content-Length` and at most `maxBodyBytes` (413 before reading it); the head and then the body
/// each within `readTimeout` (else 408). The head is scanned once, so the work is linear in what was read. What the
/// server refuses itself goes through the owner's `refusal`, so that every answer of one service has one shape.
package final class SmallHTTPServer: Sendable {
    /// A parsed request handed to the handler, with its body and the peer's address (`127.0.0.1`, `::1`).
    package struct Request: Sendable {
        package var head: HTTPRequestHead
        package var body: Data
        package var peer: String
    }

    /// What the handler answers. `Content-Length` and `Connection: close` are added when written.
    package struct Response: Sendable {
        package var status: Int
        package var headers: [(String, String)]
        package var body: Data
        package init(status: Int, headers: [(String, String)], body: Data) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// A request the server answers itself (431, 413, 411, 408, 400): what is wrong, in which field, how to fix it,
    /// and the head when it was read.
    package struct Refusal: Sendable {
        package var status: Int
        package var field: String?
        package var reason: String
        package var fix: String
        package var head: HTTPRequestHead?
    }

    package struct Limits: Sendable {
        package var maxConnections = 64
        package var maxBodyBytes = 64 * 1024
        /// The fix a 413 names (the default: "send a body of at most N bytes.").
        package var bodyFix: String?
        package var readTimeout: Duration = .seconds(10)
        /// How long ``stop()`` waits for the connections being served.
        package var stopGrace: Duration = .seconds(2)
        package var backlog: Int32 = 128
        /// The accepting thread's name; each connection's is this with `.conn`.
        package var threadName = "pinlab.http"
        /// Requests answered on the accepting thread, without a thread hand-off, when the request (head and body)
        /// was already complete as the connection was accepted, nothing followed it, and its answer fits in the
        /// socket at once: for answers that cost little and never wait. On Linux the listening socket then accepts a
        /// connection only once its first bytes have arrived (`TCP_DEFER_ACCEPT`). nil: every connection on a
        /// thread of its own.
        package var answersAtOnce: (@Sendable (HTTPRequestHead) -> Bool)?
        package init(
            maxConnections: Int = 64, maxBodyBytes: Int = 64 * 1024, bodyFix: String? = nil,
            readTimeout: Duration = .seconds(10), stopGrace: Duration = .seconds(2), backlog: Int32 = 128,
            threadName: String = "pinlab.http", answersAtOnce: (@Sendable (HTTPRequestHead) -> Bool)? = nil
        ) {
            self.maxConnections = maxConnections
            self.maxBodyBytes = maxBodyBytes
            self.bodyFix = bodyFix
            self.readTimeout = readTimeout
            self.stopGrace = stopGrace
            self.backlog = backlog
            self.threadName = threadName
            self.answersAtOnce = answersAtOnce
        }
    }

    package typealias Handler = @Sendable (Request) -> Response
    package typealias Refuser = @Sendable (Refusal) -> Response
    /// Rewrites the raw head (request line and headers, without the final CRLF) before it is parsed.
    package typealias HeadRewriter = @Sendable (ArraySlice<UInt8>) -> [UInt8]

    package let port: Int
    private let listenFD: Int32
    /// Written once by `stop()` and never drained, so that every thread waiting on it wakes and sees the stop.
    private let stopPipe: WakePipe
    private let limits: Limits
    private let handler: Handler
    private let refusal: Refuser
    private let rewriteHead: HeadRewriter?
    private struct State {
        var active = 0
        var stopping = false
        var acceptThread: WorkerThread?
    }
    private let state = Locked(State())

    /// Binds `host:port` (port 0: a free one; the caller has checked the address); ``start()`` starts accepting.
    package init(
        host: String, port: Int, limits: Limits, rewriteHead: HeadRewriter? = nil,
        handler: @escaping Handler, refusal: @escaping Refuser
    ) throws(TLSEngineError) {
        _ = Sockets.ignoreSIGPIPE
        let bound = try Sockets.listen(address: host, port: port, backlog: limits.backlog)
        let pipe: WakePipe
        do {
            pipe = try WakePipe()
        } catch {
            close(bound.fd)
            throw error
        }
        #if os(Linux)
            if limits.answersAtOnce != nil {
                // Wake the accepting thread once the request's first bytes are there, not at the bare handshake.
                var seconds = Int32(max(1, limits.readTimeout.components.seconds))
                _ = setsockopt(
                    bound.fd, Int32(IPPROTO_TCP), Int32(TCP_DEFER_ACCEPT), &seconds,
                    socklen_t(MemoryLayout<Int32>.size))
            }
        #endif
        listenFD = bound.fd
        self.port = bound.port
        stopPipe = pipe
        self.limits = limits
        self.rewriteHead = rewriteHead
        self.handler = handler
        self.refusal = refusal
    }

    /// Starts accepting on a thread of its own. Once only; on a failure, the socket is closed.
    package func start() throws(TLSEngineError) {
        do {
            let thread = try WorkerThread(name: limits.threadName) { [self] in acceptLoop() }
            state.withLock { $0.acceptThread = thread }
        } catch {
            state.withLock { $0.stopping = true }
            close(listenFD)
            throw error
        }
    }

    deinit {
        stop()
        stopPipe.closeEnds()
    }

    /// Stops accepting, wakes every connection (each ends at its next wait), and waits up to the limits' `stopGrace`
    /// for them. Idempotent.
    package func stop() {
        let first: Bool = state.withLock { s in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else { return }
        stopPipe.wake()
        guard
            let accepting = state.withLock({ s in
                defer { s.acceptThread = nil }
                return s.acceptThread
            })
        else {
            close(listenFD)
            return
        }
        accepting.join()
        close(listenFD)
        let deadline = Sockets.now() + Sockets.nanoseconds(limits.stopGrace)
        while activeConnections > 0 && Sockets.now() < deadline { usleep(2_000) }
    }

    /// Connections being served now.
    package var activeConnections: Int { state.withLock { $0.active } }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    // MARK: - Accepting

    private func acceptLoop() {
        var fds = [
            pollfd(fd: stopPipe.readEnd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
        ]
        let connectionThread = limits.threadName + ".conn"
        while !isStopping {
            let room = state.withLock { $0.active < limits.maxConnections }
            fds[1].fd = room ? listenFD : -1
            fds[0].revents = 0
            fds[1].revents = 0
            // Without room, look again after a moment (a connection's end does not wake this thread).
            let n = poll(&fds, 2, room ? -1 : 5)
            if n < 0 && errno != EINTR { return }
            if fds[0].revents != 0 { return }
            guard room, fds[1].revents != 0 else { continue }
            while state.withLock({ $0.active < limits.maxConnections && !$0.stopping }),
                let (fd, peer) = Sockets.accept(listenFD)
            {
                state.withLock { $0.active += 1 }
                var incoming = Incoming(deadline: Sockets.now() + Sockets.nanoseconds(limits.readTimeout))
                if let quick = limits.answersAtOnce, answerAtOnce(fd, peer: peer, &incoming, quick) { continue }
                let pending = incoming
                startThread(named: connectionThread) { [self] in
                    serve(fd, peer: Self.host(ofPeer: peer), pending)
                    close(fd)
                    state.withLock { $0.active -= 1 }
                }
            }
        }
    }

    /// On the accepting thread: answers a request that is already complete, when `quick` says its answer is, and
    /// closes the connection (or hands its lingering close to a thread). False, having waited for nothing and
    /// answered nothing, when the connection needs a thread of its own; `incoming` then holds what was read.
    private func answerAtOnce(
        _ fd: Int32, peer: String, _ incoming: inout Incoming, _ quick: (HTTPRequestHead) -> Bool
    ) -> Bool {
        guard gather(fd, &incoming, waiting: false) == .complete, let head = incoming.head, !incoming.surplus,
            quick(head)
        else { return false }
        let response = handler(Request(head: head, body: Data(incoming.body), peer: Self.host(ofPeer: peer)))
        let bytes = Self.bytes(of: response, method: head.method)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Self.sendFlags | Self.dontWait) }
        if sent == bytes.count, closesAtOnce(fd) {
            close(fd)
            state.withLock { $0.active -= 1 }
            return true
        }
        // The rest of the answer, or the lingering close, waits on a thread of its own.
        let from = max(sent, 0)
        startThread(named: limits.threadName + ".conn") { [self] in
            if from < bytes.count { deliver(fd, bytes, from: from, lingers: false) } else { linger(fd) }
            close(fd)
            state.withLock { $0.active -= 1 }
        }
        return true
    }

    /// `127.0.0.1` of `127.0.0.1:5000`, `::1` of `[::1]:5000`.
    package static func host(ofPeer peer: String) -> String {
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            return String(peer[peer.index(after: peer.startIndex)..<close])
        }
        return peer.lastIndex(of: ":").map { String(peer[..<$0]) } ?? peer
    }

    // MARK: - One connection

    private enum Wait { case ready, timedOut, stopped, failed }

    /// Waits until `fd` is ready for `events`, the deadline passes, or the server stops.
    private func wait(_ fd: Int32, _ events: Int32, until deadline: UInt64) -> Wait {
        var fds = [
            pollfd(fd: fd, events: Int16(events), revents: 0),
            pollfd(fd: stopPipe.readEnd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let now = Sockets.now()
            if now >= deadline { return .timedOut }
            let n = poll(&fds, 2, Sockets.pollTimeout(until: deadline))
            if n < 0 {
                if errno == EINTR { continue }
                return .failed
            }
            if fds[1].revents != 0 { return .stopped }
            if fds[0].revents != 0 { return .ready }
        }
    }

    private enum Read {
        case bytes(Int)
        case closed, timedOut, stopped, wouldWait
    }

    /// Reads into `buffer` from `filled` up to its end (never past it), advancing `filled`: what has arrived at once,
    /// else (`waiting`) after waiting for it.
    private func readSome(
        _ fd: Int32, into buffer: inout [UInt8], filled: inout Int, until deadline: UInt64, waiting: Bool = true
    ) -> Read {
        while true {
            if isStopping { return .stopped }
            let from = filled
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + from, $0.count - from) }
            if n > 0 {
                filled += n
                return .bytes(n)
            }
            if n == 0 { return .closed }
            if errno == EINTR { continue }
            if errno != EAGAIN && errno != EWOULDBLOCK { return .closed }
            guard waiting else { return .wouldWait }
            switch wait(fd, POLLIN, until: deadline) {
            case .timedOut: return .timedOut
            case .stopped: return .stopped
            case .failed: return .closed
            case .ready: continue
            }
        }
    }

    private func refuse(
        _ fd: Int32, _ status: Int, _ field: String?, _ reason: String, _ fix: String, _ head: HTTPRequestHead?
    ) {
        respond(
            fd, refusal(Refusal(status: status, field: field, reason: reason, fix: fix, head: head)),
            method: head?.method)
    }

    /// A request as far as it has been read: the head's buffer, then, once the head is parsed, the body.
    private struct Incoming: Sendable {
        var buffer = [UInt8](repeating: 0, count: HTTPRequestHead.maxBytes)
        var filled = 0
        var scanner = HeadScanner(.crlf)
        let headDeadline: UInt64
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var received = 0
        var bodyDeadline: UInt64 = 0
        /// Bytes arrived after the body (a pipelined request): the close then lingers.
        var surplus = false
        init(deadline: UInt64) { headDeadline = deadline }
    }

    private enum Gathered { case complete, ended, wouldWait }

    /// Reads the request's head and body, refusing what breaks the limits (then `.ended`, as when the peer closed,
    /// the server stops or the time is up). Not `waiting`: reads only what has arrived and refuses nothing —
    /// anything but a complete, acceptable request is `.wouldWait`, for a connection thread to take on from there.
    private func gather(_ fd: Int32, _ r: inout Incoming, waiting: Bool) -> Gathered {
        let seconds = Int(limits.readTimeout.components.seconds)
        if r.head == nil {
            var headEnd: Int?
            while true {
                if let end = r.scanner.scan(r.buffer, count: r.filled) {
                    headEnd = end
                    break
                }
                if r.filled >= HTTPRequestHead.maxBytes {
                    guard waiting else { return .wouldWait }
                    refuse(
                        fd, 431, nil, "the request line and headers exceed \(HTTPRequestHead.maxBytes) bytes.",
                        "send a shorter URL and fewer or shorter headers (at most \(HTTPRequestHead.maxBytes / 1024) KiB together).",
                        nil)
                    return .ended
                }
                switch readSome(fd, into: &r.buffer, filled: &r.filled, until: r.headDeadline, waiting: waiting) {
                case .bytes: continue
                case .wouldWait: return .wouldWait
                case .closed, .stopped: return waiting ? .ended : .wouldWait
                case .timedOut:
                    if r.filled > 0 {
                        refuse(
                            fd, 408, nil, "the request head did not arrive within \(seconds) s.",
                            "send the whole request at once.", nil)
                    }
                    return .ended
                }
            }
            guard let end = headEnd else { return .ended }
            let head: HTTPRequestHead
            do {
                let raw = r.buffer[0..<(end - 2)]
                head = try HTTPRequestHead.parse(rewriteHead.map { $0(raw)[...] } ?? raw)
            } catch {
                guard waiting else { return .wouldWait }
                refuse(fd, 400, nil, "the request is not HTTP/1.1: \(error.reason)", error.fix, nil)
                return .ended
            }
            if !head.values("transfer-encoding").isEmpty {
                guard waiting else { return .wouldWait }
                refuse(
                    fd, 411, "Transfer-Encoding", "Transfer-Encoding is not accepted (the body was sent chunked).",
                    "send the body with a Content-Length (at most \(limits.maxBodyBytes) bytes).", head)
                return .ended
            }
            let lengths = head.values("content-length")
            var length = 0
            if let first = lengths.first {
                guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
                    first.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(first)
                else {
                    guard waiting else { return .wouldWait }
                    refuse(
                        fd, 400, "Content-Length", "the Content-Length is not one whole number.",
                        "send one Content-Length: N.", head)
                    return .ended
                }
                length = n
            }
            if length > limits.maxBodyBytes {
                guard waiting else { return .wouldWait }
                refuse(
                    fd, 413, "body", "the body has \(length) bytes; at most \(limits.maxBodyBytes) are read.",
                    limits.bodyFix ?? "send a body of at most \(limits.maxBodyBytes) bytes.", head)
                return .ended
            }
            var body = [UInt8](repeating: 0, count: length)
            let received = min(length, r.filled - end)
            if received > 0 {
                r.buffer.withUnsafeBytes { from in
                    body.withUnsafeMutableBytes {
                        $0.baseAddress!.copyMemory(from: from.baseAddress! + end, byteCount: received)
                    }
                }
            }
            r.surplus = r.filled - end > length
            r.head = head
            r.body = body
            r.received = received
            r.bodyDeadline = Sockets.now() + Sockets.nanoseconds(limits.readTimeout)
        }
        while r.received < r.body.count {
            switch readSome(fd, into: &r.body, filled: &r.received, until: r.bodyDeadline, waiting: waiting) {
            case .bytes: continue
            case .wouldWait: return .wouldWait
            case .closed, .stopped: return waiting ? .ended : .wouldWait
            case .timedOut:
                refuse(
                    fd, 408, "body",
                    "the body did not arrive within \(seconds) s (\(r.received) of \(r.body.count) bytes).",
                    "send the whole body at once.", r.head)
                return .ended
            }
        }
        return .complete
    }

    /// On a connection's thread: reads the rest of the request (`incoming`: what was read before), answers it.
    private func serve(_ fd: Int32, peer: String, _ incoming: Incoming) {
        var r = incoming
        guard gather(fd, &r, waiting: true) == .complete, let head = r.head else { return }
        let response = handler(Request(head: head, body: Data(r.body), peer: peer))
        respond(fd, response, method: head.method, lingers: r.surplus)
    }

    /// Writes `response` (headers only for HEAD), then closes the sending side and, when the peer may still be
    /// sending (`lingers`: a refusal, or bytes after the request) or has sent more since, discards what it sends
    /// for a moment, so that it reads the answer rather than a reset.
    private func respond(_ fd: Int32, _ response: Response, method: String?, lingers: Bool = true) {
        deliver(fd, Self.bytes(of: response, method: method), from: 0, lingers: lingers)
    }

    /// The response as sent: status line, the handler's headers, `Content-Length` and `Connection: close`, the
    /// body (none for HEAD).
    private static func bytes(of response: Response, method: String?) -> [UInt8] {
        var text = "HTTP/1.1 \(response.status) \(Self.phrase(response.status))\r\n"
        for (k, v) in response.headers { text += "\(k): \(v)\r\n" }
        text += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
        var bytes = Array(text.utf8)
        if method != "HEAD" { bytes.append(contentsOf: response.body) }
        return bytes
    }

    /// Sends `bytes` from `from` on, then closes the sending side and lingers (see ``respond(_:_:method:lingers:)``).
    private func deliver(_ fd: Int32, _ bytes: [UInt8], from: Int, lingers: Bool) {
        let deadline = Sockets.now() + Sockets.nanoseconds(limits.readTimeout)
        var sent = from
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Self.sendFlags) }
            if n > 0 {
                sent += n
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                guard wait(fd, POLLOUT, until: deadline) == .ready else { return }
                continue
            }
            return
        }
        if lingers || !closesAtOnce(fd) { linger(fd) }
    }

    /// After the whole answer: true when the peer has sent nothing more (nothing is pending, or it closed), so that
    /// closing now sends a plain FIN and cannot turn into a reset that destroys the answer.
    private func closesAtOnce(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Self.dontWait | Int32(MSG_PEEK))
        return n == 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    }

    /// Lingering close, bounded: up to 200 ms and 256 KiB of whatever the peer still sends, never parsed.
    private func linger(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        let lingerEnd = Sockets.now() + 200_000_000
        var discarded = 0
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        while discarded < 256 * 1024, wait(fd, POLLIN, until: lingerEnd) == .ready {
            let n = sink.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)) { break }
            if n > 0 { discarded += n }
        }
    }

    #if os(Linux)
        private static let sendFlags = Int32(MSG_NOSIGNAL)
        private static let dontWait = Int32(MSG_DONTWAIT)
    #else
        private static let sendFlags: Int32 = 0
        private static let dontWait = Int32(MSG_DONTWAIT)
    #endif

    package static func phrase(_ status: Int) -> String {
        [
            200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
            411: "Length Required",
            413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
            503: "Service Unavailable",
        ][status] ?? "Status"
    }
}
