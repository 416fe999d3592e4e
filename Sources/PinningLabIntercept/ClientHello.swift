import Foundation

/// Just enough of a TLS ClientHello to read the SNI (RFC 8446 §4.1.2, RFC 6066 §3).
enum ClientHello: Equatable {
    case incomplete
    case notTLS
    case hello(serverName: String?)

    static func parse(_ bytes: ArraySlice<UInt8>) -> ClientHello {
        let b = Array(bytes)
        guard let first = b.first else { return .incomplete }
        guard first == 0x16 else { return .notTLS }
        guard b.count >= 5 else { return .incomplete }
        let recordLength = Int(b[3]) << 8 | Int(b[4])
        guard recordLength <= 16 * 1024 + 256 else { return .notTLS }
        guard b.count >= 5 + recordLength else { return .incomplete }
        var i = 5
        func need(_ n: Int) -> Bool { i + n <= 5 + recordLength }
        guard need(4), b[i] == 0x01 else { return .hello(serverName: nil) }
        i += 4 + 2 + 32  // handshake header, legacy_version, random
        guard need(1) else { return .hello(serverName: nil) }
        i += 1 + Int(b[i])  // session id
        guard need(2) else { return .hello(serverName: nil) }
        i += 2 + (Int(b[i]) << 8 | Int(b[i + 1]))  // cipher suites
        guard need(1) else { return .hello(serverName: nil) }
        i += 1 + Int(b[i])  // compression methods
        guard need(2) else { return .hello(serverName: nil) }
        let extensionsEnd = min(i + 2 + (Int(b[i]) << 8 | Int(b[i + 1])), 5 + recordLength)
        i += 2
        while i + 4 <= extensionsEnd {
            let type = Int(b[i]) << 8 | Int(b[i + 1])
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            i += 4
            guard i + length <= extensionsEnd else { break }
            if type == 0, length >= 5, b[i + 2] == 0 {
                let nameLength = Int(b[i + 3]) << 8 | Int(b[i + 4])
                guard i + 5 + nameLength <= i + length else { break }
                let name = String(decoding: b[(i + 5)..<(i + 5 + nameLength)], as: UTF8.self)
                return .hello(serverName: name.isEmpty ? nil : name)
            }
            i += length
        }
        return .hello(serverName: nil)
    }
}
