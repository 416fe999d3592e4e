import Foundation
import PinningLabCore
import Testing

/// The one request-head scanner of the fixture server's worker, the interception proxy and the small HTTP server
/// (`HeadScanner`): linear however the head is split into reads, and finding exactly the ends the three
/// scanners it replaced found.
@Suite struct HeadScannerTests {
    static let cap = 16 * 1024

    /// A head of exactly `length` bytes: a request line, `X-Pad-N: aaa…` lines, the blank line; every line ends in
    /// `eol` (CRLF or a bare LF).
    static func head(length: Int, eol: String) -> [UInt8] {
        var out = Array("GET /fixture HTTP/1.1\(eol)Host: api.pinning.test\(eol)".utf8)
        let tail = Array(eol.utf8)
        var n = 0
        while true {
            let line = Array("X-Pad-\(n): ".utf8)
            let room = length - out.count - line.count - 2 * tail.count
            if room <= 0 { break }
            out += line + Array(repeating: UInt8(ascii: "a"), count: min(room, 200)) + tail
            n += 1
        }
        out += Array(repeating: UInt8(ascii: "b"), count: max(0, length - out.count - tail.count))
        out += tail
        precondition(out.count == length, "\(out.count)")
        return out
    }

    /// Feeds `bytes` one byte per read, scanning after each, as the worker and the proxy do (the buffer grows).
    static func oneBytePerRead(_ bytes: [UInt8], _ terminator: HeadScanner.Terminator) -> (
        end: Int?, at: Int, visits: Int
    ) {
        var scanner = HeadScanner(terminator)
        var buffer: [UInt8] = []
        for (i, b) in bytes.enumerated() {
            buffer.append(b)
            if let end = scanner.scan(buffer) { return (end, i + 1, scanner.visits) }
        }
        return (nil, bytes.count, scanner.visits)
    }

    /// The proof of linearity: a 16 KiB head read one byte at a time is looked at in at most 2 × 16 KiB byte visits
    /// (the scanner carries how much of a terminator it has seen from one read to the next, so it visits each byte
    /// once). Scanning from byte 0 after every read, as the worker and the proxy did, visits 16,384 × 16,385 / 2 ≈ 134
    /// million bytes.
    @Test(arguments: [HeadScanner.Terminator.crlf, .crlfOrBareLF])
    func aSixteenKiBHeadFedOneBytePerReadIsScannedOnce(_ terminator: HeadScanner.Terminator) {
        let bytes = Self.head(length: Self.cap, eol: "\r\n")
        let r = Self.oneBytePerRead(bytes, terminator)
        #expect(r.end == Self.cap && r.at == Self.cap, "the head ends at its last byte")
        #expect(r.visits <= 2 * Self.cap, "\(r.visits) byte visits for a \(Self.cap)-byte head")
        print(
            "HeadScanner \(terminator): 16 KiB head, one byte per read: \(r.visits) byte visits (bound \(2 * Self.cap); a rescan per read: \(Self.cap * (Self.cap + 1) / 2))"
        )
    }

    /// Heads without an end — 16 KiB of `\n\r\n` (what made a look-back from each line feed read bytes twice), of
    /// `a\r\n`, of bare LFs — fed one byte per read: each byte is visited once.
    @Test(arguments: ["\n\r\n", "a\r\n", "\n"])
    func everyByteIsVisitedOnce(_ unit: String) {
        let bytes = Array(String(repeating: unit, count: Self.cap).utf8.prefix(Self.cap))
        let r = Self.oneBytePerRead(bytes, .crlf)
        #expect(r.end == nil && r.visits == Self.cap, "\(r.visits)")
    }

    /// The small HTTP server reads into a fixed buffer and scans its first `count` bytes.
    @Test func aFixedBufferIsScannedUpToItsCount() {
        let bytes = Self.head(length: 8 * 1024, eol: "\r\n")
        var buffer = [UInt8](repeating: 0, count: 8 * 1024)
        var scanner = HeadScanner(.crlf)
        var end: Int?
        for i in 0..<bytes.count {
            buffer[i] = bytes[i]
            end = scanner.scan(buffer, count: i + 1)
            if i + 1 < bytes.count { #expect(end == nil) }
        }
        #expect(end == bytes.count)
        #expect(scanner.visits <= 2 * bytes.count, "\(scanner.visits)")
        // Once found, the end is kept.
        #expect(scanner.scan(buffer, count: bytes.count) == bytes.count)
    }

    /// The fixture server tolerates heads whose lines end in a bare LF; the proxy and the small server do not.
    @Test func bareLineFeedsEndAHeadOnlyForTheFixtureServer() {
        let lf = Self.head(length: 4096, eol: "\n")
        #expect(Self.oneBytePerRead(lf, .crlfOrBareLF).end == 4096)
        #expect(Self.oneBytePerRead(lf, .crlf).end == nil)
        let mixed = Array("GET / HTTP/1.1\r\nHost: x\r\n\nrest".utf8)
        #expect(Self.oneBytePerRead(mixed, .crlfOrBareLF).end == mixed.count - 4)
        #expect(Self.oneBytePerRead(mixed, .crlf).end == nil)
    }

    /// After the proxy consumed the CONNECT head, its scanner starts again at byte 0 of the emptied buffer.
    @Test func resetStartsAgainAtTheFront() {
        var scanner = HeadScanner(.crlf)
        let connect = Array("CONNECT api.pinning.test:443 HTTP/1.1\r\nHost: api.pinning.test:443\r\n\r\n".utf8)
        #expect(scanner.scan(connect) == connect.count)
        scanner.reset()
        #expect(scanner.position == 0 && scanner.end == nil && scanner.visits == 0)
        let request = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        var buffer: [UInt8] = []
        var end: Int?
        for b in request {
            buffer.append(b)
            end = scanner.scan(buffer)
        }
        #expect(end == request.count)
    }

    /// The scanners the shared one replaced, as they were (each rescanned from byte 0): the worker's (CRLFCRLF or
    /// LFLF) and the proxy's (CRLFCRLF).
    static func workerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 1..<bytes.count where bytes[i] == 0x0A {
            if bytes[i - 1] == 0x0A { return i + 1 }
            if i >= 3, bytes[i - 1] == 0x0D, bytes[i - 2] == 0x0A, bytes[i - 3] == 0x0D { return i + 1 }
        }
        return nil
    }

    static func proxyEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count
        where bytes[i] == 0x0A && bytes[i - 1] == 0x0D && bytes[i - 2] == 0x0A && bytes[i - 3] == 0x0D {
            return i + 1
        }
        return nil
    }

    /// Random heads over `a`, CR and LF, split into random reads: after every read the scanner answers what the
    /// old full rescan of the bytes so far answered.
    @Test func everySplitFindsTheEndTheOldScannersFound() {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [UInt8(ascii: "a"), 0x0D, 0x0A]
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...64, using: &rng)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &rng)! }
            for (terminator, old) in [(HeadScanner.Terminator.crlf, Self.proxyEnd), (.crlfOrBareLF, Self.workerEnd)] {
                var scanner = HeadScanner(terminator)
                var buffer: [UInt8] = []
                var i = 0
                while i < bytes.count {
                    let n = Int.random(in: 1...5, using: &rng)
                    buffer += bytes[i..<min(bytes.count, i + n)]
                    i += n
                    let got = scanner.scan(buffer)
                    #expect(got == old(buffer), "\(terminator) \(bytes) split at \(buffer.count)")
                    if got != nil { break }
                }
            }
        }
    }
}
