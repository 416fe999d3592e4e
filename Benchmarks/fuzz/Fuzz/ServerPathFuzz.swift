// Fuzzing the fixture server's connection path on each engine: the engine's server session, the handshake, the HTTP
// request parsing, the response and the observation — the code a worker runs for an accepted connection — over a
// socketpair (`ServerPathHarness` in PinningLabCore).
//
// Input format:
//   - first byte 0x00: a real handshake by an in-process OpenSSL client, then the rest of the input sent as the
//     request's plaintext over the established session, then close_notify. Checks: the handshake completed, a
//     request with a header end within 16 KiB got a response whose JSON parses and names this connection and its
//     request line, the observation says what was sent.
//   - anything else: raw bytes on the wire from the client (seeded with captured ClientHellos and client
//     certificate flights), then EOF. Check: the connection finishes, and the observation never claims a completed
//     handshake or a request (no client can finish a handshake with bytes written before seeing the server's).
// Every 10,000 inputs a good client completes a handshake and gets its answer through the same server context.
import CPinningLabOpenSSL
import Foundation
import PinningLab
import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL

#if canImport(Glibc)
import Glibc
#endif

final class ServerPathFuzz: @unchecked Sendable {  // used from the fuzzer's single thread only
    static let openssl = ServerPathFuzz(engine: OpenSSLEngine())
    static let gnutls = ServerPathFuzz(engine: GnuTLSEngine())
    static let goodClientInterval = 10_000

    let harness: ServerPathHarness
    let engineName: String
    let clientContext: OpaquePointer
    var inputs = 0
    var goodClients = 0

    init(engine: any TLSEngine) {
        engineName = engine.name
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-fuzz-pki-\(getpid())")
        do {
            let pki = try Lab.pki(directory: directory)
            let runner = CheckRunner(pki: pki, catalogue: try Catalogue.bundled())
            // Optional client authentication (a presented certificate is verified), ALPN, TLS 1.0–1.3 and a second
            // identity chosen by SNI: every branch of the engine's callbacks is reachable.
            var c = try runner.serverConfiguration(for: try runner.catalogue.scenario("mtls-optional-missing"))
            c.minimumVersion = .tls10
            c.alpnProtocols = ["h2", "http/1.1"]
            let rsa = try pki.identity("leaf-rsa-2048")
            c.identities.append(ServerIdentity(rsa, chain: [rsa.certificateDER], serverNames: ["rsa.pinning.test"]))
            harness = try ServerPathHarness(engine: engine, configuration: c, label: "fuzz")
        } catch {
            require(false, "cannot set up the \(engine.name) server path: \(error)")
            fatalError()
        }
        clientContext = SSL_CTX_new(TLS_client_method())!
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        _ = SSL_CTX_set_alpn_protos(clientContext, alpn, UInt32(alpn.count))
    }

    func run(_ bytes: [UInt8]) {
        inputs += 1
        if bytes.first == 0 {
            runRequest(Array(bytes.dropFirst()))
        } else {
            guard let o = harness.runRaw(bytes) else {
                require(false, "\(engineName): a connection whose client sent \(bytes.count) bytes and EOF did not finish")
                return
            }
            require(o.engine == engineName && o.label == "fuzz", "\(engineName): observation of another server: \(o)")
            require(!o.handshakeCompleted && !o.applicationDataReceived && o.requestLine == nil,
                    "\(engineName): raw bytes completed a handshake or a request: \(o)")
        }
        if inputs % Self.goodClientInterval == 0 { goodClient() }
    }

    /// A well-behaved client: must complete its handshake and get its own request answered.
    func goodClient() {
        goodClients += 1
        let path = "/good-\(goodClients)"
        let (o, response) = exchange(Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        require(o?.closure == .responseSent && o?.requestLine == "GET \(path) HTTP/1.1" && response.starts(with: Array("HTTP/1.1 200 OK".utf8)),
                "\(engineName): the good client after \(inputs) inputs was not served: \(String(describing: o))")
        FileHandle.standardError.write(Data("pinlab-fuzz: \(engineName) good client #\(goodClients) served after \(inputs) inputs\n".utf8))
    }

    func runRequest(_ request: [UInt8]) {
        let (observation, response) = exchange(request)
        guard let o = observation else {
            require(false, "\(engineName): a request of \(request.count) bytes did not finish")
            return
        }
        require(o.handshakeCompleted, "\(engineName): the in-process client's handshake did not complete: \(o)")
        require(o.applicationDataReceived == !request.isEmpty, "\(engineName): \(request.count) bytes sent, observation says \(o.bytesReceived)")
        guard let end = Self.headerEnd(request.prefix(16 * 1024)) else { return }
        require(o.closure == .responseSent, "\(engineName): a request with a header end got no response: \(o.closure)")
        let head = request.prefix(end)
        var line = head.prefix(while: { $0 != 0x0A })
        if line.last == 0x0D { line = line.dropLast() }
        let expectedLine = String(decoding: line.prefix(1024), as: UTF8.self)
        require(o.requestLine == expectedLine, "\(engineName): request line \(String(describing: o.requestLine)) != \(expectedLine)")
        // The response: a header, then the JSON document naming this connection and its request line.
        guard let split = Self.find([13, 10, 13, 10], in: response) else {
            require(false, "\(engineName): response without a header end (\(response.count) bytes)")
            return
        }
        let body = Data(response[(split + 4)...])
        let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        require(json?["connection"] as? Int == o.id, "\(engineName): the response names another connection: \(String(decoding: body, as: UTF8.self))")
        require(json?["request"] as? String == expectedLine, "\(engineName): the response's request line differs: \(String(decoding: body, as: UTF8.self))")
    }

    /// A real handshake by an OpenSSL client over the socketpair, `request` as plaintext, close_notify; returns the
    /// observation and what the client read.
    func exchange(_ request: [UInt8]) -> (Observation?, [UInt8]) {
        guard let session = harness.open(), let ssl = SSL_new(clientContext) else { return (nil, []) }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, session.peerFD)
        SSL_set_connect_state(ssl)
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        enum Phase { case handshake, write, read, done }
        var phase = Phase.handshake
        var written = 0
        var started = false
        // The client's socket is blocking, but it only reads when the server has written (the server is stepped
        // in between), so a read never waits: every step either makes progress or ends the exchange.
        _ = fcntl(session.peerFD, F_SETFL, fcntl(session.peerFD, F_GETFL) | O_NONBLOCK)
        for _ in 0..<512 {
            switch phase {
            case .handshake:
                let rc = SSL_do_handshake(ssl)
                if rc == 1 {
                    phase = .write
                } else {
                    let e = SSL_get_error(ssl, rc)
                    if e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE { phase = .done }
                }
            case .write:
                if written < request.count {
                    let rc = request.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + written, Int32(request.count - written)) }
                    if rc > 0 {
                        written += Int(rc)
                    } else {
                        // The server may answer and close before a long request is all sent: read its answer.
                        let e = SSL_get_error(ssl, rc)
                        if e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE { phase = .read }
                    }
                } else {
                    _ = SSL_shutdown(ssl)
                    phase = .read
                }
            case .read:
                let n = SSL_read(ssl, &buffer, Int32(buffer.count))
                if n > 0 {
                    response += buffer[0..<Int(n)]
                } else if session.isFinished {
                    let e = SSL_get_error(ssl, n)
                    if e != SSL_ERROR_WANT_READ { phase = .done }
                }
            case .done:
                break
            }
            if !started {
                harness.start(session)
                started = true
            } else {
                session.step()
            }
            if phase == .done && session.isFinished { break }
            if phase == .read && session.isFinished {
                // Everything the server wrote is in the socket: read it to the end.
                while true {
                    let n = SSL_read(ssl, &buffer, Int32(buffer.count))
                    if n <= 0 { break }
                    response += buffer[0..<Int(n)]
                }
                break
            }
        }
        let finished = session.isFinished
        if !finished { session.expire() }
        session.close()
        return (finished ? harness.observation(session.id) : nil, response)
    }

    static func headerEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
        let b = Array(bytes)
        for i in b.indices where b[i] == 0x0A {
            if i >= 1 && b[i - 1] == 0x0A { return i + 1 }
            if i >= 3 && b[i - 1] == 0x0D && b[i - 2] == 0x0A && b[i - 3] == 0x0D { return i + 1 }
        }
        return nil
    }

    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
