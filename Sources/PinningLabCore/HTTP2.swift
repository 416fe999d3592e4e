import CPinningLabSystem

/// HTTP/2 as this machine can speak it: nghttp2, loaded at run time (libnghttp2.so.14, or Homebrew's
/// libnghttp2.14.dylib), so that building PinningLab never needs its development package.
public enum HTTP2 {
    /// Whether HTTP/2 can be spoken here, and why not when it cannot.
    public struct Availability: Sendable, Hashable {
        /// `nil` when available; otherwise one sentence naming the library and how to install it.
        public var unavailableReason: String?
        /// nghttp2's version, e.g. `1.52.0`, when loaded.
        public var libraryVersion: String?
        public var isAvailable: Bool { unavailableReason == nil }
    }

    /// Loads nghttp2 on first use; the answer never changes within a process.
    public static var availability: Availability {
        var reason = [CChar](repeating: 0, count: 512)
        if cpl_h2_load(&reason, UInt(reason.count)) == 1 {
            return Availability(unavailableReason: nil, libraryVersion: String(cString: cpl_h2_library_version()))
        }
        return Availability(
            unavailableReason: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The ALPN identifier of HTTP/2 over TLS.
    public static let alpn = "h2"
}

/// One HTTP/2 stream as a server saw it.
public struct HTTP2Stream: Hashable, Sendable, Codable {
    /// The stream identifier (odd: opened by the client).
    public var id: Int32
    /// The `:authority` pseudo-header (or the `host` header when the client sent no `:authority`).
    public var authority: String?
    public var method: String?
    public var path: String?

    public init(id: Int32, authority: String?, method: String?, path: String?) {
        self.id = id
        self.authority = authority
        self.method = method
        self.path = path
    }
}

/// An HTTP/2 request as a fixture server recorded it, the moment it arrived: on which connection (the
/// observation's `id`), under which SNI, asking for which `:authority`.
public struct ObservedHTTP2Stream: Hashable, Sendable, Codable {
    /// 1, 2, 3… per server, in order of arrival.
    public var sequence: Int
    /// The connection's id (``Observation/id``).
    public var connection: Int
    /// The SNI of the connection the stream arrived on.
    public var serverName: String?
    public var stream: HTTP2Stream

    public init(sequence: Int, connection: Int, serverName: String?, stream: HTTP2Stream) {
        self.sequence = sequence
        self.connection = connection
        self.serverName = serverName
        self.stream = stream
    }
}

/// The one owner of an nghttp2 session (server or client) and the streams it saw. Used by one thread at a time.
package final class HTTP2Session {
    private let handle: OpaquePointer

    /// `nil` when nghttp2 is not available (see ``HTTP2/availability``) or out of memory.
    package init?(server: Bool) {
        guard let h = cpl_h2_new(server ? 1 : 0) else { return nil }
        handle = h
    }

    deinit { cpl_h2_free(handle) }

    /// Feeds received bytes; throws nghttp2's words when the peer broke the protocol.
    package func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let rc = cpl_h2_receive(handle, base.assumingMemoryBound(to: UInt8.self), UInt(bytes.count))
        if rc < 0 { throw HTTP2Error(code: rc) }
    }

    /// Feeds received bytes (see ``receive(_:)-(UnsafeRawBufferPointer)``).
    package func receive(_ bytes: [UInt8]) throws(HTTP2Error) {
        guard !bytes.isEmpty else { return }
        let rc = bytes.withUnsafeBufferPointer { cpl_h2_receive(handle, $0.baseAddress, UInt($0.count)) }
        if rc < 0 { throw HTTP2Error(code: rc) }
    }

    /// Everything the session has to send now (frames, in order).
    package func takeOutput() throws(HTTP2Error) -> [UInt8] {
        var out: [UInt8] = []
        while true {
            var chunk: UnsafePointer<UInt8>? = nil
            let n = cpl_h2_next_output(handle, &chunk)
            if n < 0 { throw HTTP2Error(code: Int32(n)) }
            guard n > 0, let chunk else { return out }
            out.append(contentsOf: UnsafeBufferPointer(start: chunk, count: n))
        }
    }

    /// Whether the session still wants to read or write.
    package var isAlive: Bool { cpl_h2_alive(handle) == 1 }

    /// Queues GOAWAY (no error).
    package func goAway() { cpl_h2_goaway(handle) }

    package var streamCount: Int { Int(cpl_h2_stream_count(handle)) }

    package func stream(at index: Int) -> HTTP2Stream {
        func header(_ name: String) -> String? {
            cpl_h2_stream_header(handle, Int32(index), name).map { String(cString: $0) }
        }
        return HTTP2Stream(
            id: cpl_h2_stream_id(handle, Int32(index)), authority: header(":authority") ?? header("host"),
            method: header(":method"), path: header(":path"))
    }

    /// Server: whether the stream's request ended and awaits its response.
    package func awaitsResponse(_ index: Int) -> Bool { cpl_h2_stream_awaits_response(handle, Int32(index)) == 1 }

    /// Server: answers a stream with `status` and a JSON `body`.
    package func respond(_ index: Int, status: Int, body: [UInt8]) throws(HTTP2Error) {
        let rc = body.withUnsafeBufferPointer {
            cpl_h2_respond(handle, Int32(index), Int32(status), $0.baseAddress, UInt($0.count))
        }
        if rc < 0 { throw HTTP2Error(code: rc) }
    }

    /// Client: opens `GET https://authority/path`; returns the stream's index.
    package func request(authority: String, path: String = "/") throws(HTTP2Error) -> Int {
        let rc = cpl_h2_request(handle, authority, path)
        if rc < 0 { throw HTTP2Error(code: rc) }
        return Int(rc)
    }

    /// Client: the response's status (0 until its headers arrived).
    package func status(_ index: Int) -> Int { Int(cpl_h2_stream_status(handle, Int32(index))) }

    /// Whether the stream closed, and with which HTTP/2 error code.
    package func closed(_ index: Int) -> (closed: Bool, errorCode: UInt32) {
        var code: UInt32 = 0
        let c = cpl_h2_stream_closed(handle, Int32(index), &code)
        return (c == 1, code)
    }

    /// Client: the response body's length so far.
    package func bodyLength(_ index: Int) -> Int { Int(cpl_h2_stream_body_length(handle, Int32(index))) }
}

/// An nghttp2 failure, in its words.
package struct HTTP2Error: Error, CustomStringConvertible {
    package var code: Int32
    package var description: String { "HTTP/2 error \(code): \(String(cString: cpl_h2_error_text(code)))" }
}
