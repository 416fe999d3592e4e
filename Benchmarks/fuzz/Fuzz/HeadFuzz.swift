// Fuzz targets for what the lab's servers read from the network before any TLS, and for the files `pinlab audit`
// reads:
//
//   request-head   the request-head scanner (`HeadScanner`, shared by the fixture server's worker, the proxy and the
//                  small HTTP server) fed the input in reads of the size its first byte picks, in both terminator
//                  modes, checked after every read against a full rescan of the bytes so far and against its bound (each
//                  byte visited once); then the head parser of the small HTTP server (`HTTPRequestHead.parse`)
//                  on what the scanner found.
//   connect-head   a real `pinlab intercept` proxy on 127.0.0.1 (the same process): the input is written to a fresh
//                  connection in pieces of the size its first byte picks, then EOF. The proxy's reply must be nothing
//                  (it closes) or an HTTP/1.1 status it is documented to send (200, 400, 403, 405, 431, 502, 503), and
//                  every 1,000 inputs a well-formed CONNECT must still get its 200.
//   ocsp-request   the OCSP request reader (`OCSPRequestReader.certificates`) and the lab responder's answer
//                  (`LabPKI.answerOCSPRequest`): a reader error is the project's own, every CertID read has a known
//                  hash, and the answer is one of the responder's statuses — malformedRequest exactly when the reader
//                  refused the request.
//   audit-xml      `pinlab audit`'s XML path (`PinAudit.run` on the input saved as fuzz.xml: the XML tree reader, the
//                  network-security-config and property-list readers and the checks): a report or a PinConfigError that
//                  names the file.
import Foundation
import PinningLab
import PinningLabCore
import PinningLabExports
import PinningLabIntercept
import PinningLabPKI

#if canImport(Glibc)
import Glibc
#endif

enum HeadFuzz {
    /// The read sizes the first byte picks: 1 to 64 bytes.
    static func pieceSize(_ bytes: [UInt8]) -> Int { Int(bytes.first ?? 0) % 64 + 1 }

    static func requestHead(_ bytes: [UInt8]) {
        let input = Array(bytes.prefix(20_000))
        let piece = pieceSize(input)
        for terminator in [HeadScanner.Terminator.crlf, .crlfOrBareLF] {
            var scanner = HeadScanner(terminator)
            var buffer: [UInt8] = []
            var found: Int?
            var i = 0
            while i < input.count, found == nil {
                buffer += input[i..<min(input.count, i + piece)]
                i += piece
                found = scanner.scan(buffer)
                let expected = terminator == .crlf ? crlfEnd(buffer) : lenientEnd(buffer)
                require(found == expected, "HeadScanner(\(terminator)) found \(String(describing: found)), a rescan \(String(describing: expected)), after \(buffer.count) bytes")
                require(scanner.visits == (found ?? buffer.count), "HeadScanner visited \(scanner.visits) bytes, not each of \(found ?? buffer.count) once")
            }
            guard terminator == .crlf, let end = found else { continue }
            do {
                let head = try HTTPRequestHead.parse(buffer[0..<(end - 2)])
                require(!head.method.isEmpty && head.target.hasPrefix("/"), "parsed a head without a method or a path: \(head.method) \(head.target)")
                require(head.version == "HTTP/1.1" || head.version == "HTTP/1.0", "parsed version \(head.version)")
                require(head.fields.allSatisfy { $0.name == $0.name.lowercased() && !$0.name.isEmpty }, "a field name not lower-cased")
            } catch {
                require(!error.reason.isEmpty && !error.fix.isEmpty, "a Malformed without reason or fix")
            }
        }
    }

    /// The old scanners, by full rescan: the first CRLFCRLF …
    static func crlfEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 3..<b.count where b[i] == 0x0A && b[i - 1] == 0x0D && b[i - 2] == 0x0A && b[i - 3] == 0x0D { return i + 1 }
        return nil
    }

    /// … and the first CRLFCRLF or LFLF.
    static func lenientEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 2 else { return nil }
        for i in 1..<b.count where b[i] == 0x0A {
            if b[i - 1] == 0x0A { return i + 1 }
            if i >= 3, b[i - 1] == 0x0D, b[i - 2] == 0x0A, b[i - 3] == 0x0D { return i + 1 }
        }
        return nil
    }

    // MARK: OCSP

    static let ocspPKI: (pki: LabPKI, index: OCSPIssuerIndex) = {
        do {
            let pki = try Lab.pki(directory: FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-fuzz-ocsp-\(getpid())"))
            return (pki, OCSPIssuerIndex(pki))
        } catch {
            require(false, "cannot open the lab PKI for the OCSP target: \(error)")
            fatalError()
        }
    }()

    static func ocspRequest(_ bytes: [UInt8]) -> FuzzResult {
        var readable = true
        do {
            let asked = try OCSPRequestReader.certificates(in: bytes)
            require(!asked.isEmpty, "the reader returned no CertID without an error")
            for a in asked {
                require(a.hashAlgorithm == "sha1" || a.hashAlgorithm == "sha256", "hash \(a.hashAlgorithm)")
                require(a.serial.first != 0, "a serial with a leading zero byte")
            }
        } catch {
            require(!error.reason.isEmpty, "an OCSPRequestError without a reason")
            readable = false
        }
        let (pki, index) = ocspPKI
        let answer = pki.answerOCSPRequest(bytes, index: index)
        require(!answer.response.isEmpty, "an empty OCSP response")
        require(["malformedRequest", "unauthorized", "good", "revoked", "unknown"].contains(answer.status), "status \(answer.status)")
        require((answer.status == "malformedRequest") == !readable, "answered \(answer.status) to a request the reader \(readable ? "read" : "refused")")
        return readable ? .ok : .projectError
    }

    // MARK: audit

    static let auditFile: String = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-fuzz-audit-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("fuzz.xml").path
    }()

    static func auditXML(_ bytes: [UInt8]) -> FuzzResult {
        let file = auditFile
        let fd = open(file, O_WRONLY | O_TRUNC | O_CREAT, 0o600)
        require(fd >= 0, "cannot write \(file)")
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            require(n > 0, "cannot write \(file)")
            off += n
        }
        close(fd)
        do {
            _ = try PinAudit.run(files: [file], options: AuditOptions())
            return .ok
        } catch {
            require(error.file == file, "a PinConfigError naming \(error.file), not \(file)")
            require(!error.problem.isEmpty && !error.fix.isEmpty, "a PinConfigError without problem or fix: \(error)")
            return .projectError
        }
    }

    // MARK: CONNECT

    static let proxy: InterceptProxy = {
        do {
            let pki = try Lab.pki(directory: FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-fuzz-proxy-\(getpid())"))
            var listener = InterceptProxy.Configuration.defaultListener
            listener.handshakeTimeout = .seconds(5)
            return try InterceptProxy.start(pki: pki, configuration: InterceptProxy.Configuration(listener: listener))
        } catch {
            require(false, "cannot start the proxy for the CONNECT target: \(error)")
            fatalError()
        }
    }()
    nonisolated(unsafe) static var connectInputs = 0

    static let replies: Set<String> = ["200", "400", "403", "405", "431", "502", "503"]

    static func connectHead(_ bytes: [UInt8]) {
        connectInputs += 1
        let reply = exchange(Array(bytes.prefix(20_000)), piece: pieceSize(bytes) * 64)
        if let line = reply.split(separator: 0x0A, maxSplits: 1).first, reply.contains(0x0A) {
            let text = String(decoding: line, as: UTF8.self)
            let words = text.split(separator: " ")
            require(text.hasPrefix("HTTP/1.1 ") && words.count >= 2 && replies.contains(String(words[1])),
                    "the proxy answered '\(text.prefix(80))'")
        }
        if connectInputs % 1_000 == 0 {
            let good = Array("CONNECT api.pinning.test:443 HTTP/1.1\r\nHost: api.pinning.test:443\r\n\r\n".utf8)
            let r = String(decoding: exchange(good, piece: good.count), as: UTF8.self)
            require(r.hasPrefix("HTTP/1.1 200 "), "a good CONNECT after \(connectInputs) inputs got '\(r.prefix(80))'")
            FileHandle.standardError.write(Data("pinlab-fuzz: proxy answered a good CONNECT after \(connectInputs) inputs\n".utf8))
        }
    }

    /// Connects to the proxy, writes `bytes` in pieces of `piece` bytes, closes its sending side and reads the
    /// reply until the proxy closes (at most 10 s).
    static func exchange(_ bytes: [UInt8], piece: Int) -> [UInt8] {
        let p = proxy
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        require(fd >= 0, "socket: \(errno)")
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(p.port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        require(connected == 0, "cannot connect to the proxy: \(errno)")
        var off = 0
        while off < bytes.count {
            let n = bytes[off..<min(bytes.count, off + piece)].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }  // the proxy answered and closed (431, 400) before reading it all
            off += n
        }
        _ = shutdown(fd, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 {
                require(n == 0 || errno == ECONNRESET || errno == EPIPE, "reading the proxy's reply: errno \(errno) (a timeout: the proxy did not close)")
                break
            }
            reply += chunk[0..<n]
        }
        return reply
    }
}
