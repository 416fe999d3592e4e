package import Foundation
import PinningLabBase
package import PinningLabCore
package import PinningLabPKI

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
/// One request per connection (`Connection: close`), at most `maxConnections` at once, each on a thread of its own —
/// but an OCSP POST that has wholly arrived as its connection is accepted is answered on the accepting thread (one
/// signature, no hand-off; ``SmallHTTPServer/Limits/answersAtOnce``), as `openssl ocsp` answers every request; one
/// that would wait for its client still gets a thread of its own. A response is built and signed when it is asked
/// for, and served again to the same request within the same second (its times are whole seconds: a fresh one
/// would say the same). It binds loopback addresses only, on the package's ``SmallHTTPServer``. ``stop()`` (or dropping the responder)
/// stops it.
///
/// What only a web page sends is refused (403) and not recorded: an `Origin` header (OCSP and CRL clients send
/// none), and a `Host` that names neither a loopback address or `localhost` nor one of the two revocation hosts, on
/// the bound port, 80 or none (a page on a DNS-rebound name). A request without `Host` (HTTP/1.0) is answered.
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

    private let service: Service
    private let http: SmallHTTPServer
    /// At most this many requests are kept (the oldest are dropped first).
    private static let maxRecorded = 10_000

    /// Binds `host:port` (port 0: a free one) and starts answering. `host` must be a loopback address.
    package init(
        pki: LabPKI, behaviour: Behaviour = .init(), host: String = "127.0.0.1", port: Int = 0,
        readTimeout: Duration = .seconds(5), maxConnections: Int = 32
    ) throws(TLSEngineError) {
        guard Sockets.isLoopback(host) else {
            throw TLSEngineError(
                .invalidConfiguration,
                "the revocation responder binds loopback only, not '\(host)': use 127.0.0.1 or ::1")
        }
        let service = Service(pki: pki, behaviour: behaviour)
        let boundPort = Locked(0)  // known once started; no client can know the port before
        let limits = SmallHTTPServer.Limits(
            maxConnections: maxConnections, maxBodyBytes: OCSPRequestReader.maxBytes,
            bodyFix: "send one OCSP request (at most \(OCSPRequestReader.maxBytes) bytes).", readTimeout: readTimeout,
            stopGrace: .seconds(1), backlog: 64, threadName: "pinlab.ocsp", answersAtOnce: { $0.method == "POST" })
        let server = try SmallHTTPServer(
            host: host, port: port, limits: limits, rewriteHead: { Self.originForm($0) },
            handler: { request in
                if let refusal = Self.webRefusal(request.head, port: boundPort.withLock { $0 }) {
                    return refusal.response
                }
                return service.answer(request.head, body: Array(request.body)).response
            },
            refusal: { refusal in
                if let head = refusal.head {
                    service.record(
                        head, kind: head.method == "POST" ? .ocsp : .other, serial: nil, subject: nil,
                        status: refusal.status, answer: nil)
                }
                return Answer(refusal.status, "\(refusal.reason) Fix: \(refusal.fix)").response
            })
        try server.start()
        boundPort.withLock { $0 = server.port }
        self.service = service
        self.http = server
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = server.port
    }

    deinit {
        stop()
    }

    /// Every request so far, oldest first.
    package var requests: [Request] { service.recorded.withLock { $0 } }

    /// Stops accepting and waits up to a second for the connections being served.
    package func stop() {
        http.stop()
    }

    /// The names a revocation client addresses: the lab's two revocation hosts (their URLs, or a proxy request
    /// for them) and this machine.
    static let servedHosts: Set<String> = ["ocsp.pinning.test", "crl.pinning.test", "localhost", "127.0.0.1", "::1"]

    /// 403 for what a web page sends and a revocation client does not (see the type's documentation); nil to answer.
    fileprivate static func webRefusal(_ head: HTTPRequestHead, port: Int) -> Answer? {
        if !head.values("origin").isEmpty {
            return Answer(
                403,
                "requests from a web origin are refused: OCSP and CRL clients send no Origin. Fix: fetch the URL with a TLS client or a tool (curl, openssl ocsp)."
            )
        }
        let hosts = head.values("host")
        guard let host = hosts.first else { return nil }
        // Trimmed only when an end is whitespace at all (Character.isWhitespace covers every `.whitespaces`).
        let bare =
            host.first?.isWhitespace == true || host.last?.isWhitespace == true
            ? host.trimmingCharacters(in: .whitespaces) : host
        var name = Substring(bare.lowercased())
        var givenPort: Substring?
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            let rest = name[name.index(after: close)...]
            let inner = name[name.index(after: name.startIndex)..<close]
            if rest.isEmpty || rest.hasPrefix(":") {
                givenPort = rest.isEmpty ? nil : rest.dropFirst()
                name = inner
            } else {
                name = ""
            }
        } else if let colon = name.lastIndex(of: ":"), name.firstIndex(of: ":") == colon {
            givenPort = name[name.index(after: colon)...]
            name = name[..<colon]
        }
        let portOK = givenPort.map { $0 == "80" || $0 == String(port) } ?? true
        guard hosts.count == 1, servedHosts.contains(String(name)), portOK else {
            return Answer(
                403,
                "Host '\(hosts.joined(separator: ", ").prefix(200))' is not served (DNS rebinding protection): this responder answers requests for ocsp.pinning.test, crl.pinning.test, localhost or a loopback address, on port \(port), 80 or none. Fix: use the URL the certificate names, or http://127.0.0.1:\(port)/."
            )
        }
        return nil
    }

    fileprivate struct Answer {
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
        var response: SmallHTTPServer.Response {
            .init(
                status: status, headers: [("Content-Type", contentType), ("Cache-Control", "no-store")],
                body: Data(body))
        }
    }

    /// What answers: the PKI, the behaviour, and the record of requests. The server's threads hold this, not the
    /// responder, so that dropping the responder stops it.
    private final class Service: Sendable {
        let pki: LabPKI
        let behaviour: Behaviour
        let index: OCSPIssuerIndex
        let recorded = Locked<[RevocationResponder.Request]>([])
        /// The answers built in the current second, by request (at most 256): a response's times are whole seconds,
        /// so one built again within the same second would say the same, but for its (random) ECDSA signature.
        private let thisSecond = Locked<(second: Int64, answers: [[UInt8]: OCSPAnswer])>((0, [:]))
        init(pki: LabPKI, behaviour: Behaviour) {
            self.pki = pki
            self.behaviour = behaviour
            self.index = OCSPIssuerIndex(pki)
        }

        func answer(_ head: HTTPRequestHead, body: [UInt8]) -> Answer {
            let path = head.path
            let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            switch head.method {
            case "POST":
                return ocsp(head, request: body)
            case "GET", "HEAD":
                if segments.count == 1, segments[0].hasSuffix(".crl") {
                    let issuer = String(segments[0].dropLast(4))
                    guard let ca = pki[issuer], ca.role.isCA,
                        let crl = try? pki.crl(issuer: issuer, options: behaviour.crl)
                    else {
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
                    guard let decoded = candidate.removingPercentEncoding,
                        let der = RevocationResponder.base64(decoded),
                        (try? OCSPRequestReader.certificates(in: der)) != nil
                    else { continue }
                    return ocsp(head, request: der)
                }
                record(head, kind: .other, serial: nil, subject: nil, status: 404, answer: nil)
                return Answer(
                    404,
                    "nothing at \(path): OCSP is POST /<issuer> or GET /<issuer>/<base64 request>; CRLs GET /<issuer>.crl"
                )
            default:
                record(head, kind: .other, serial: nil, subject: nil, status: 405, answer: nil)
                return Answer(405, "\(head.method) is not answered: use POST (OCSP) or GET (OCSP, CRLs)")
            }
        }

        private func ocsp(_ head: HTTPRequestHead, request: [UInt8]) -> Answer {
            let now = Date()
            let second = Int64(now.timeIntervalSince1970.rounded(.down))
            let a: OCSPAnswer
            if let known = thisSecond.withLock({ $0.second == second ? $0.answers[request] : nil }) {
                a = known
            } else {
                a = pki.answerOCSPRequest(request, index: index, options: behaviour.ocsp, now: now)
                thisSecond.withLock { c in
                    if c.second != second { c = (second, [:]) }
                    if c.answers.count < 256 { c.answers[request] = a }
                }
            }
            let status = a.status == "malformedRequest" ? 400 : 200
            record(head, kind: .ocsp, serial: a.serialHex, subject: a.subject, status: status, answer: a.status)
            return Answer(status: status, contentType: "application/ocsp-response", body: a.response)
        }

        func record(
            _ head: HTTPRequestHead, kind: RevocationResponder.Request.Kind, serial: String?, subject: String?,
            status: Int, answer: String?
        ) {
            let r = RevocationResponder.Request(
                time: Date(), method: head.method, path: String(head.path.prefix(256)), kind: kind, serialHex: serial,
                subject: subject, status: status, answer: answer)
            recorded.withLock { requests in
                if requests.count >= RevocationResponder.maxRecorded { requests.removeFirst(requests.count / 2) }
                requests.append(r)
            }
        }
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
        guard target.count > scheme.count, target.prefix(scheme.count).lowercased() == scheme else {
            return Array(head)
        }
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
