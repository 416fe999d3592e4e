/// Finds where an HTTP/1.1 request head ends in bytes that arrive in pieces — the one scanner of the fixture
/// server's worker, the interception proxy (its CONNECT request and the intercepted request) and the small HTTP
/// server (the control API, the live view, the revocation responder).
///
/// The scanner remembers where it stopped, and how much of a terminator the bytes so far end in (a terminator may
/// be split across reads): each call looks only at the bytes that arrived since the last one, so a head read one byte
/// at a time is still scanned once — linear in its length, where scanning from byte 0 after every read was
/// quadratic.
package struct HeadScanner: Sendable {
    /// What ends a head.
    package enum Terminator: Sendable {
        /// CRLFCRLF only (RFC 9112): the proxy and the small HTTP server.
        case crlf
        /// CRLFCRLF, or two LFs in a row (`\n\n`, `\r\n\n`): the fixture server, which answers hand-typed requests
        /// and tools that end lines with a bare LF.
        case crlfOrBareLF
    }

    package let terminator: Terminator
    /// The index of the next byte to look at.
    package private(set) var position = 0
    /// The head's end once found (the index just past the terminator); later calls return it without scanning.
    package private(set) var end: Int?
    /// Bytes looked at so far, over every call since ``reset()``: each byte once, however the head was split into
    /// reads (what a test bounds; a rescan from byte 0 after every read made it quadratic).
    package private(set) var visits = 0
    /// How much of a terminator the bytes before ``position`` end in: what lets the next call go on from there.
    private var state = State.none

    private enum State: UInt8, Sendable {
        /// No part of a terminator.
        case none
        /// A CR (that does not follow CRLF).
        case cr
        /// A bare LF (not after a CR).
        case lf
        /// CRLF.
        case crlf
        /// CRLFCR.
        case crlfcr
    }

    package init(_ terminator: Terminator = .crlf) {
        self.terminator = terminator
    }

    /// Starts again at byte 0 (the buffer was emptied: the proxy's CONNECT head was consumed).
    package mutating func reset() {
        position = 0
        end = nil
        visits = 0
        state = .none
    }

    /// Where the head ends in the first `count` bytes of `buffer` (all of them when `count` is nil): the index just
    /// past its terminator, or nil when it has not arrived. The bytes before ``position`` must be the ones an
    /// earlier call saw: only the bytes from there on are looked at, each once.
    package mutating func scan(_ buffer: [UInt8], count: Int? = nil) -> Int? {
        if let end { return end }
        let n = min(count ?? buffer.count, buffer.count)
        guard position < n else { return nil }
        let bareLF = terminator == .crlfOrBareLF
        var s = state
        var i = position
        let found: Int? = buffer.withUnsafeBufferPointer { b in
            while i < n {
                let byte = b[i]
                i += 1
                switch byte {
                case 0x0A:
                    switch s {
                    case .crlfcr: return i
                    case .lf where bareLF, .crlf where bareLF: return i
                    case .cr: s = .crlf
                    default: s = bareLF ? .lf : .none
                    }
                case 0x0D:
                    s = s == .crlf ? .crlfcr : .cr
                default:
                    s = .none
                }
            }
            return nil
        }
        visits += i - position
        position = i
        state = s
        end = found
        return found
    }
}
