package import Foundation
package import PinningLabCore
package import PinningLabPKI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lab's OCSP responder and CRL server: a small HTTP/1.1 server on loopback that answers what the lab's leaves
/// name in their Authority Information Access (`http://ocsp.pinning.test/<issuer>`) and CRL distribution points
/// (`http://crl.pinning.test/<issuer>.crl`), from the lab PKI, and records every request so that a verdict can
/// say whether the client asked.
///
/// - `POST /<anything>` with an `OCSPRequest` body (`application/ocsp-request`): the response the PKI builds for the
///   certificate the request's first CertID names (issuer key hash and serial); `unauthorized` when no CA of the lab
///   issued it; HTTP 400 with `malformedRequest` when the body is not an OCSP request.
/// - `GET /<issuer>/<base64 request>` or `GET /<base64 request>` (RFC 6960 appendix A.1, percent-encoded): the same.
/// - `GET /<issuer>.crl`: the CA's CRL (DER, `application/pkix-crl`).
/// - The same in absolute form, as a client sends it to an HTTP proxy (`GET http://crl.pinning.test/lab-root.crl`),
///   for the lab's two revocation hosts only (port 80 or none): a client whose HTTP stack honours a proxy setting
///   (the JDK's `http.proxyHost`/`http.proxyPort` pointed at the responder) then fetches the URLs the certificates
///   name themselves, whatever certificate of the chain names them. Any other absolute URL is refused (400): the
///   responder relays nothing.
/// - Anything else: 404; other methods 405; a head over 8 KiB 431; a body over ``OCSPRequestReader/maxBytes`` 413;
///   a request not complete within `readTimeout` 408.
///
/// One request per connection (`Connection: close`), each on a thread of its own, at most `maxConnections` at once.
/// It binds loopback addresses only. Call ``stop()`` when done: the accepting thread holds the responder until then.
package final class RevocationResponder: Sendable {
    /// One request as the responder saw it.
    package struct Request: Sendable, Hashable {
        package enum Kind: String, Sendable, Hashable { case ocsp, crl, other }
        package var time: Date
        package var method: String
        package var path: String
        package var kind: Kind
        /// The serial number an OCSP request asked about (hex), nil for CRLs and unreadable requests.
        package var serialHex: String?
        /// The lab identity asked about (OCSP) or the CA whose CRL was fetched.
        package var subject: String?
        /// The HTTP status answered.
        package var status: Int
        /// `good`, `revoked`, `unknown`, `unauthorized`, `malformedRequest` for OCSP; nil otherwise.
        package var answer: String?
    }

    /// How the responder answers: the OCSP options for every response (as issued by default) and the CRLs' options.
    package struct Behaviour: Sendable {
        package var ocsp = OCSPResponseOptions()
        package var crl = CRLOptions()
        package init(ocsp: OCSPResponseOptions = .init(), crl: CRLOptions = .init()) {
            self.ocsp = ocsp
            self.crl = crl
        }
    }

    package static let maxHeadBytes = HTTPRequestHead.maxBytes

    package let host: String
    package let port: Int
    /// `http://127.0.0.1:PORT` (brackets for IPv6).
    package var baseURL: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }

    private let pki: LabPKI
    private let behaviour: Behaviour
    private let index: OCSPIssuerIndex
    private let listenFD: Int32
    private let stopPipe: WakePipe
    private let readTimeout: Duration
    private let maxConnections: Int
    private struct State {
        var active = 0
        var stopping = false
        var requests: [Request] = []
        var acceptThread: WorkerThread?
    }
    private let state = Locked(State())
    /// At most this many requests are kept (the oldest are dropped first).
    private static let maxRecorded = 10_000

    /// Binds `host:port` (port 0: a free one) and starts answering. `host` must be a loopback address.
    package init(pki: LabPKI, behaviour: Behaviour = .init(), host: String = "127.0.0.1", port: Int = 0,
                 readTimeout: Duration = .seconds(5), maxConnections: Int = 32) throws(TLSEngineError) {
        guard Sockets.isLoopback(host) else {
            throw TLSEngineError(.invalidConfiguration,
                                 "the revocation responder binds loopback only, not '\(host)': use 127.0.0.1 or ::1")
        }
        _ = Sockets.ignoreSIGPIPE
        let bound = try Sockets.listen(address: host, port: port, backlog: 64)
        let pipe: WakePipe
        do {
            pipe = try WakePipe()
        } catch {
            close(bound.fd)
            throw error
        }
        self.pki = pki
        self.behaviour = behaviour
        self.index = OCSPIssuerIndex(pki)
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = bound.port
        self.listenFD = bound.fd
        self.stopPipe = pipe
        self.readTimeout = readTimeout
        self.maxConnections = maxConnections
        do {
            let thread = try WorkerThread(name: "pinlab.revocation") { [self] in acceptLoop() }
            state.withLock { $0.acceptThread = thread }
        } catch {
            close(bound.fd)
            pipe.closeEnds()
            throw error
        }
    }

    deinit {
        stop()
        stopPipe.closeEnds()
    }

    /// Every request so far, oldest first.
    package var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting and waits up to a second for the connections being served.
    package func stop() {
        let thread: WorkerThread? = state.withLock { s in
            guard !s.stopping else { return nil }
            s.stopping = true
            defer { s.acceptThread = nil }
            return s.acceptThread
        }
        guard let thread else { return }
        stopPipe.wake()
        thread.join()
        close(listenFD)
        let deadline = Sockets.now() + 1_000_000_000
        while state.withLock({ $0.active }) > 0 && Sockets.now() < deadline { usleep(2_000) }
    }

    // MARK: - Accepting

    private func acceptLoop() {
        var fds = [pollfd(fd: stopPipe.readEnd, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)]
        while !state.withLock({ $0.stopping }) {
            let room = state.withLock { $0.active < maxConnections }
            fds[1].fd = room ? listenFD : -1
            fds[0].revents = 0
            fds[1].revents = 0
            let n = poll(&fds, 2, room ? -1 : 5)
            if n < 0 && errno != EINTR { return }
            if fds[0].revents != 0 { return }
            guard room, fds[1].revents != 0 else { continue }
            while state.withLock({ $0.active < maxConnections && !$0.stopping }), let (fd, _) = Sockets.accept(listenFD) {
                state.withLock { $0.active += 1 }
                let t = Thread { [self] in
                    Sockets.nameCurrentThread("pinlab.revocation.conn")
                    serve(fd)
                    close(fd)
                    state.withLock { $0.active -= 1 }
                }
                t.stackSize = 512 * 1024
                t.start()
            }
        }
    }

    // MARK: - One connection

    /// Reads into `buffer[filled...]`; false when the peer closed, the deadline passed or the server stops.
    private func readSome(_ fd: Int32, _ buffer: inout [UInt8], _ filled: inout Int, until deadline: UInt64) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: stopPipe.readEnd, events: Int16(POLLIN), revents: 0)]
        while Sockets.now() < deadline {
            fds[0].revents = 0
            let n = poll(&fds, 2, Sockets.pollTimeout(until: deadline))
            if n < 0 && errno != EINTR { return false }
            if fds[1].revents != 0 { return false }
            guard fds[0].revents != 0 else { continue }
            let from = filled
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + from, $0.count - from) }
            if got > 0 {
                filled += got
                return true
            }
            if got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { return false }
        }
        return false
    }

    private struct Answer {
        var status: Int
        var contentType = "text/plain; charset=utf-8"
        var body: [UInt8]
        init(_ status: Int, _ text: String) {
            self.status = status
            body = Array((text + "\n").utf8)
        }
        init(status: Int, contentType: String, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    private func serve(_ fd: Int32) {
        let deadline = Sockets.now() + Sockets.nanoseconds(readTimeout)
        var buffer = [UInt8](repeating: 0, count: Self.maxHeadBytes)
        var filled = 0
        var headEnd: Int?
        var scanned = 0
        while headEnd == nil {
            if let end = HTTPRequestHead.end(of: buffer, count: filled, scannedUpTo: scanned) {
                headEnd = end
                break
            }
            scanned = filled
            guard filled < buffer.count else {
                return respond(fd, Answer(431, "the request head exceeds \(Self.maxHeadBytes) bytes"))
            }
            guard readSome(fd, &buffer, &filled, until: deadline) else {
                if filled > 0 && Sockets.now() >= deadline { respond(fd, Answer(408, "the request did not arrive in time")) }
                return
            }
        }
        guard let end = headEnd else { return }
        let head: HTTPRequestHead
        do {
            head = try HTTPRequestHead.parse(Self.originForm(buffer[0..<(end - 2)])[...])
        } catch {
            return respond(fd, Answer(400, "the request is not HTTP/1.1: \(error.reason) Fix: \(error.fix)"))
        }
        if !head.values("transfer-encoding").isEmpty {
            return respond(fd, Answer(411, "send the OCSP request with a Content-Length, not chunked"))
        }
        let contentLength = head.values("content-length")
        guard Set(contentLength).count <= 1 else {
            return respond(fd, Answer(400, "the request has several different Content-Length headers"))
        }
        var length = 0
        if let value = contentLength.first {
            guard value.utf8.count <= 9, let n = Int(value), n >= 0, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return respond(fd, Answer(400, "the Content-Length is not one whole number"))
            }
            length = n
        }
        guard length <= OCSPRequestReader.maxBytes else {
            record(head, kind: head.method == "POST" ? .ocsp : .other, serial: nil, subject: nil, status: 413, answer: nil)
            return respond(fd, Answer(413, "the body has \(length) bytes; an OCSP request has at most \(OCSPRequestReader.maxBytes)"))
        }
        var body = [UInt8](repeating: 0, count: length)
        var received = min(length, filled - end)
        for i in 0..<received { body[i] = buffer[end + i] }
        while received < length {
            guard readSome(fd, &body, &received, until: deadline) else {
                if Sockets.now() >= deadline { respond(fd, Answer(408, "the body did not arrive in time")) }
                return
            }
        }
        respond(fd, answer(head, body: body), method: head.method)
    }

    private func answer(_ head: HTTPRequestHead, body: [UInt8]) -> Answer {
        let path = head.path
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch head.method {
        case "POST":
            return ocsp(head, request: body)
        case "GET", "HEAD":
            if segments.count == 1, segments[0].hasSuffix(".crl") {
                let issuer = String(segments[0].dropLast(4))
                guard let ca = pki[issuer], ca.role.isCA, let crl = try? pki.crl(issuer: issuer, options: behaviour.crl) else {
                    record(head, kind: .crl, serial: nil, subject: nil, status: 404, answer: nil)
                    return Answer(404, "no CRL at \(path): the lab's CAs publish theirs at /<issuer>.crl")
                }
                record(head, kind: .crl, serial: nil, subject: ca.name, status: 200, answer: nil)
                return Answer(status: 200, contentType: "application/pkix-crl", body: crl)
            }
            // GET OCSP: the last segment (or, as many clients do not escape '/', everything after the issuer's name).
            var candidates: [String] = []
            if let last = segments.last { candidates.append(last) }
            if segments.count > 1 { candidates.append(segments.dropFirst().joined(separator: "/")) }
            candidates.append(segments.joined(separator: "/"))
            for candidate in candidates {
                guard let decoded = candidate.removingPercentEncoding, let der = Self.base64(decoded),
                      (try? OCSPRequestReader.certificates(in: der)) != nil else { continue }
                return ocsp(head, request: der)
            }
            record(head, kind: .other, serial: nil, subject: nil, status: 404, answer: nil)
            return Answer(404, "nothing at \(path): OCSP is POST /<issuer> or GET /<issuer>/<base64 request>; CRLs GET /<issuer>.crl")
        default:
            record(head, kind: .other, serial: nil, subject: nil, status: 405, answer: nil)
            return Answer(405, "\(head.method) is not answered: use POST (OCSP) or GET (OCSP, CRLs)")
        }
    }

    private func ocsp(_ head: HTTPRequestHead, request: [UInt8]) -> Answer {
        let a = pki.answerOCSPRequest(request, index: index, options: behaviour.ocsp)
        let status = a.status == "malformedRequest" ? 400 : 200
        record(head, kind: .ocsp, serial: a.serialHex, subject: a.subject, status: status, answer: a.status)
        return Answer(status: status, contentType: "application/ocsp-response", body: a.response)
    }

    private func record(_ head: HTTPRequestHead, kind: Request.Kind, serial: String?, subject: String?, status: Int, answer: String?) {
        let r = Request(time: Date(), method: head.method, path: String(head.path.prefix(256)), kind: kind,
                        serialHex: serial, subject: subject, status: status, answer: answer)
        state.withLock { s in
            if s.requests.count >= Self.maxRecorded { s.requests.removeFirst(s.requests.count / 2) }
            s.requests.append(r)
        }
    }

    private func respond(_ fd: Int32, _ answer: Answer, method: String? = nil) {
        var text = "HTTP/1.1 \(answer.status) \(Self.phrase(answer.status))\r\nContent-Type: \(answer.contentType)\r\n"
        text += "Content-Length: \(answer.body.count)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        var bytes = Array(text.utf8)
        if method != "HEAD" { bytes += answer.body }
        let deadline = Sockets.now() + Sockets.nanoseconds(readTimeout)
        var sent = 0
        var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
        while sent < bytes.count && Sockets.now() < deadline {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Self.sendFlags) }
            if n > 0 {
                sent += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                _ = poll(&fds, 1, Sockets.pollTimeout(until: deadline))
            } else {
                return
            }
        }
        shutdown(fd, Int32(SHUT_WR))
        // Briefly discard what the peer still sends (an oversized body), so that it reads the answer, not a reset.
        let lingerEnd = Sockets.now() + 200_000_000
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        var discarded = 0
        var readFDs = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        while discarded < 256 * 1024, Sockets.now() < lingerEnd, poll(&readFDs, 1, Sockets.pollTimeout(until: lingerEnd)) > 0 {
            let n = sink.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            discarded += n
        }
    }

    #if os(Linux)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let sendFlags: Int32 = 0
    #endif

    private static func phrase(_ status: Int) -> String {
        [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
         411: "Length Required", 413: "Content Too Large", 431: "Request Header Fields Too Large"][status] ?? "Status"
    }

    // MARK: - Request targets

    /// The head with an absolute-form target for one of the lab's revocation hosts (`http://crl.pinning.test/x.crl`,
    /// `http://ocsp.pinning.test:80/…`) rewritten to its origin form (`/x.crl`); any other head unchanged (an
    /// absolute URL for another host then fails to parse: 400).
    static func originForm(_ head: ArraySlice<UInt8>) -> [UInt8] {
        guard let firstSpace = head.firstIndex(of: 0x20) else { return Array(head) }
        let targetStart = head.index(after: firstSpace)
        let lineEnd = head[targetStart...].firstIndex(of: 0x0D) ?? head.endIndex
        guard let targetEnd = head[targetStart..<lineEnd].firstIndex(of: 0x20) else { return Array(head) }
        let target = String(decoding: head[targetStart..<targetEnd], as: UTF8.self)
        let scheme = "http://"
        guard target.count > scheme.count, target.prefix(scheme.count).lowercased() == scheme else { return Array(head) }
        let rest = target.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var host = Substring(authority.lowercased())
        if let colon = host.lastIndex(of: ":") {
            guard host[host.index(after: colon)...] == "80" else { return Array(head) }
            host = host[..<colon]
        }
        guard [RevocationHosts.ocsp, RevocationHosts.crl].contains(String(host)) else { return Array(head) }
        let path = rest.dropFirst(authority.count)
        let origin = path.hasPrefix("/") ? String(path) : "/" + path
        return Array(head[..<targetStart]) + Array(origin.utf8) + Array(head[targetEnd...])
    }

    /// Standard or URL-safe base64, padding optional.
    static func base64(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}
