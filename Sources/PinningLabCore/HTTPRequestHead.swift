import Foundation

/// The request line and headers of one HTTP/1.1 request, as the lab's small HTTP servers (the control API, the
/// revocation responder) read them: found by one
/// scan for CRLFCRLF (``HeadScanner``, which remembers where it stopped) and parsed in one pass, so reading and parsing
/// a head costs time in proportion to its length, and a head is never longer than ``HTTPRequestHead/maxBytes``.
package struct HTTPRequestHead: Sendable, Equatable {
    /// Request line and headers together, their CRLFs and the blank line's included: a longer head gets 431.
    package static let maxBytes = 8 * 1024

    package var method: String
    /// The request target as sent (`/servers/x?wait=5`).
    package var target: String
    /// The path of the target, percent-decoded segment by segment, without empty segments.
    package var segments: [String]
    /// The path as sent (before `?`), for messages.
    package var path: String
    /// Query parameters in order, `+` and percent-escapes decoded.
    package var query: [(name: String, value: String)]
    /// `HTTP/1.1` or `HTTP/1.0`.
    package var version: String
    /// Header fields in order: the name lower-cased, the value without surrounding whitespace.
    package var fields: [(name: String, value: String)]

    package static func == (a: HTTPRequestHead, b: HTTPRequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// Every value of the header `name` (lower-case).
    package func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// The only value of `name`, nil when absent; a repeated header is an error of the caller's choosing.
    package func single(_ name: String) -> (value: String?, repeated: Bool) {
        let all = values(name)
        return (all.first, all.count > 1)
    }

    /// Why a head cannot be parsed: a 400 with these words.
    package struct Malformed: Error, Sendable {
        package var reason: String
        package var fix: String
    }

    /// Parses `bytes`, the head up to and excluding the blank line's CRLF (so it ends in the last header's CRLF, or
    /// the request line's).
    package static func parse(_ bytes: ArraySlice<UInt8>) throws(Malformed) -> HTTPRequestHead {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == 0x0D {
                guard i + 1 < bytes.endIndex, bytes[i + 1] == 0x0A else {
                    throw Malformed(reason: "a bare CR in the request head.", fix: "end every line with CRLF.")
                }
                lines.append(bytes[start..<i])
                i += 2
                start = i
                continue
            }
            if b == 0x0A { throw Malformed(reason: "a bare LF in the request head.", fix: "end every line with CRLF.") }
            if b == 0 { throw Malformed(reason: "a NUL byte in the request head.", fix: "send text only.") }
            i += 1
        }
        if start < bytes.endIndex { lines.append(bytes[start..<bytes.endIndex]) }
        guard let requestLine = lines.first else {
            throw Malformed(reason: "the request has no request line.", fix: "send e.g. GET /health HTTP/1.1.")
        }
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw Malformed(
                reason: "the request line is not METHOD TARGET HTTP/1.1.", fix: "send e.g. GET /health HTTP/1.1.")
        }
        guard !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            throw Malformed(reason: "the method is not an HTTP token.", fix: "use GET, POST or DELETE.")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            throw Malformed(reason: "'\(version.prefix(16))' is not HTTP/1.1.", fix: "speak HTTP/1.1.")
        }
        let target = parts[1]
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Malformed(
                reason: "the request target is not a path (/…) of visible ASCII.",
                fix: "send the path and query only, e.g. /servers?x=1, percent-encoding anything else.")
        }
        let targetText = String(decoding: target, as: UTF8.self)
        let pathPart: Substring
        let queryPart: Substring?
        if let q = targetText.firstIndex(of: "?") {
            pathPart = targetText[..<q]
            queryPart = targetText[targetText.index(after: q)...]
        } else {
            pathPart = Substring(targetText)
            queryPart = nil
        }
        var segments: [String] = []
        for s in pathPart.split(separator: "/") {
            // Without a `%` there is nothing to decode (and Foundation's decoding is most of a parse's cost).
            guard let decoded = s.utf8.contains(UInt8(ascii: "%")) ? s.removingPercentEncoding : String(s) else {
                throw Malformed(
                    reason: "the path segment '\(s.prefix(64))' has a bad percent-escape.",
                    fix: "write % as %25.")
            }
            segments.append(decoded)
        }
        var query: [(name: String, value: String)] = []
        for pair in (queryPart ?? "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            query.append((decode(kv[0]), kv.count > 1 ? decode(kv[1]) : ""))
        }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                if line.first == 0x20 || line.first == 0x09 {
                    throw Malformed(
                        reason: "a folded header line (obsolete line folding).", fix: "send each header on one line.")
                }
                throw Malformed(reason: "a header line without ':'.", fix: "send headers as Name: value.")
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                throw Malformed(
                    reason: "a header name that is not an HTTP token (or whitespace before ':').",
                    fix: "send headers as Name: value.")
            }
            var value = line[line.index(after: colon)...]
            while let f = value.first, f == 0x20 || f == 0x09 { value.removeFirst() }
            while let l = value.last, l == 0x20 || l == 0x09 { value.removeLast() }
            guard value.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) else {
                throw Malformed(
                    reason: "a control character in the value of '\(String(decoding: name, as: UTF8.self))'.",
                    fix: "send printable header values.")
            }
            fields.append((String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        }
        return HTTPRequestHead(
            method: String(decoding: parts[0], as: UTF8.self), target: targetText, segments: segments,
            path: String(pathPart), query: query, version: version, fields: fields)
    }

    /// RFC 9110 `tchar`.
    package static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }
}
