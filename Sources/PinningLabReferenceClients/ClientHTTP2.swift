// HTTP/2 for the reference clients: a request sent as a stream (nghttp2, through PinningLabCore's HTTP2Session), and
// a connection kept open across the steps of a cell so that a later request to the same address can reuse it —
// where connection coalescing, and the pin check it may skip, happen.
internal import CPinningLabOpenSSL
internal import Foundation
internal import PinningLabCore
internal import PinningLabModel
internal import PinningLabOpenSSL  // the handle owners (Handles.swift)

/// An HTTP/2 connection a reference client keeps open for a later step of the cell: its TLS session, its HTTP/2
/// session, and what the full handshake decided (the chains and the host they were checked for).
// used by one step at a time: the steps of a cell run in order
final class PooledHTTP2Connection: @unchecked Sendable {
    let session: ClientSession
    let http2: HTTP2Session
    let entry: ClientSessionEntry
    /// Kept alive with the connection: the `SSL*`'s ex_data points at it.
    let state: ClientVerifyState

    init(session: ClientSession, http2: HTTP2Session, entry: ClientSessionEntry, state: ClientVerifyState) {
        self.session = session
        self.http2 = http2
        self.entry = entry
        self.state = state
    }
}

extension ClientConnection {
    /// Under which key a cell's session cache keeps the HTTP/2 connection to an address.
    static func http2PoolKey(_ target: ClientTarget) -> String { "h2 \(target.ip):\(target.port)" }

    static func authority(_ target: ClientTarget) -> String {
        (target.host.contains(":") ? "[\(target.host)]" : target.host) + ":\(target.port)"
    }

    /// Sends the request on the HTTP/2 connection kept for this address, when the client may: its certificate
    /// covers the host (RFC 9113 section 9.1.1; a client that checks no host names skips this), and the host's
    /// pins match the chain the connection was verified with — which `coalesces-without-pins` does not check for a
    /// connection made for another host. `nil`: no connection to reuse, or not this one; a new connection decides.
    static func reuseHTTP2(
        target: ClientTarget, mistake: ReferenceClient.Mistake, state: ClientVerifyState, deadline: ClientDeadline
    ) throws(ClientFailure) -> ClientOutcome? {
        guard let cache = target.sessionCache,
            let pooled = cache.value(forKey: http2PoolKey(target)) as? PooledHTTP2Connection
        else { return nil }
        let name = PinScope.normalizedHost(target.host)
        if state.policy.checksHostname && !pooled.entry.covers(name) { return nil }
        let note: String
        if mistake.traits.coalescesWithoutPins && pooled.entry.host != name {
            note = "pins not checked for \(name): the connection's pins were checked for \(pooled.entry.host)"
        } else if state.recheckResumed(pooled.entry, host: name, reuse: true) != nil {
            return nil  // not on this connection: a new one, with a full handshake, decides
        } else {
            note = state.pinMatch ?? "no pins apply to \(name)"
        }
        pooled.session.deadline = deadline
        let answer: (status: Int, bytes: Int, stream: Int32)
        do {
            answer = try exchange(on: pooled, authority: authority(target))
        } catch {
            // The connection is gone (the server closed it): forget it; a new connection decides.
            cache.removeValue(forKey: http2PoolKey(target))
            return nil
        }
        return .accepted(
            "sent GET / as HTTP/2 stream \(answer.stream) on the connection kept from \(pooled.entry.host) over \(pooled.session.negotiated); response: \(answer.status) (\(answer.bytes) bytes); \(note)"
        )
    }

    /// The first request on a new connection that negotiated `h2`, after the trust decision; the connection is
    /// then kept in the cell's cache for a later step.
    static func startHTTP2(
        session: ClientSession, target: ClientTarget, host: String, state: ClientVerifyState, resumed: Bool,
        offered: ClientSessionEntry?
    ) throws(ClientFailure) -> ClientOutcome {
        guard let http2 = HTTP2Session(server: false) else {
            throw ClientFailure(
                category: .other, detail: HTTP2.availability.unavailableReason ?? "cannot create an HTTP/2 session")
        }
        guard let made = SSL_get1_session(session.ssl) else {
            throw ClientFailure(category: .other, detail: "SSL_get1_session: \(openSSLErrorQueue())")
        }
        let handle = SSLSessionHandle(adopting: made)
        let entry =
            resumed && offered != nil
            ? offered!.resumed(as: handle)
            : ClientSessionEntry(
                session: handle, presentedChain: state.presentedChain, verifiedChain: state.verifiedChain,
                issuerPath: state.issuerPath, host: host)
        let pooled = PooledHTTP2Connection(session: session, http2: http2, entry: entry, state: state)
        let answer = try exchange(on: pooled, authority: authority(target))
        target.sessionCache?.store(pooled, forKey: http2PoolKey(target))
        var detail =
            "sent GET / as HTTP/2 stream \(answer.stream) over \(session.negotiated)\(resumed ? " (resumed session)" : ""); response: \(answer.status) (\(answer.bytes) bytes)"
        if let pinMatch = state.pinMatch { detail += "; \(pinMatch)" }
        return .accepted(detail)
    }

    /// Opens a stream `GET https://authority/` and pumps the connection until the stream closes.
    static func exchange(on c: PooledHTTP2Connection, authority: String) throws(ClientFailure)
        -> (status: Int, bytes: Int, stream: Int32)
    {
        func failure(_ stop: ClientTLSStop, _ during: String) -> ClientFailure {
            switch stop {
            case .transport(let f): return ClientFailure(category: f.category, detail: "\(f.detail) during \(during)")
            case .closed:
                return ClientFailure(
                    category: .protocolError, detail: "server closed the TLS connection during \(during)")
            case .failed(let code, let errors):
                return ClientFailure(
                    category: .protocolError, detail: "TLS failure during \(during) (SSL_get_error \(code)): \(errors)")
            }
        }
        let index: Int
        do {
            index = try c.http2.request(authority: authority)
        } catch {
            throw ClientFailure(category: .other, detail: "HTTP/2 request: \(error)")
        }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let output: [UInt8]
            do {
                output = try c.http2.takeOutput()
            } catch {
                throw ClientFailure(category: .protocolError, detail: "\(error)")
            }
            var offset = 0
            while offset < output.count {
                do {
                    let n = try c.session.drive { ssl in
                        output[offset...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
                    }
                    offset += Int(n)
                } catch {
                    throw failure(error, "sending HTTP/2 frames")
                }
            }
            let (closed, code) = c.http2.closed(index)
            if closed {
                guard code == 0 else {
                    throw ClientFailure(
                        category: .protocolError, detail: "the server reset the HTTP/2 stream (error code \(code))")
                }
                return (c.http2.status(index), c.http2.bodyLength(index), c.http2.stream(at: index).id)
            }
            if !c.http2.isAlive {
                throw ClientFailure(category: .protocolError, detail: "the HTTP/2 session ended before the response")
            }
            let count: Int32
            do {
                count = try c.session.drive { ssl in
                    buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                }
            } catch {
                throw failure(error, "reading the HTTP/2 response")
            }
            do {
                try c.http2.receive(Array(buffer[0..<Int(count)]))
            } catch {
                throw ClientFailure(category: .protocolError, detail: "\(error)")
            }
        }
    }
}
