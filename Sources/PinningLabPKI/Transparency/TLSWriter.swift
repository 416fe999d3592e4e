// A small writer for the TLS presentation language (RFC 8446 §3), which RFC 6962 uses for SCTs: big-endian
// integers and vectors prefixed by a length of 1, 2 or 3 bytes. Not DER: nothing here is self-describing.

/// Appends TLS-encoded values to a byte buffer.
struct TLSWriter {
    /// What has been written so far.
    private(set) var bytes: [UInt8] = []

    init() {}

    mutating func uint8(_ v: UInt8) { bytes.append(v) }

    mutating func uint16(_ v: UInt16) {
        bytes.append(UInt8(v >> 8))
        bytes.append(UInt8(v & 0xff))
    }

    mutating func uint64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(shift)) & 0xff)) }
    }

    /// Fixed-length bytes (an `opaque x[n]` field), written as they are.
    mutating func raw(_ b: some Sequence<UInt8>) { bytes.append(contentsOf: b) }

    /// A variable-length vector `opaque x<min..2^(8·lengthBytes)-1>`: its length in `lengthBytes` big-endian bytes,
    /// then the bytes. Throws when the body does not fit the length field or is shorter than `minimum`.
    mutating func vector(_ body: [UInt8], lengthBytes: Int, minimum: Int = 0, field: String) throws(TLSEncodingError) {
        precondition((1...3).contains(lengthBytes), "TLS vectors have 1 to 3 length bytes here")
        let maximum = (1 << (8 * lengthBytes)) - 1
        guard body.count <= maximum else {
            throw TLSEncodingError(field: field, count: body.count, limit: "at most \(maximum)")
        }
        guard body.count >= minimum else {
            throw TLSEncodingError(field: field, count: body.count, limit: "at least \(minimum)")
        }
        for shift in stride(from: 8 * (lengthBytes - 1), through: 0, by: -8) {
            bytes.append(UInt8((body.count >> shift) & 0xff))
        }
        bytes.append(contentsOf: body)
    }
}

/// A vector whose length does not fit its TLS length field.
struct TLSEncodingError: Error, CustomStringConvertible {
    var field: String
    var count: Int
    var limit: String
    var description: String { "\(field) is \(count) bytes; its TLS vector holds \(limit)" }
}

/// A reader for the same encoding, for tests and for `pinlab pki show` (it never trusts a length).
struct TLSReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func uint8() -> UInt8? { take(1).map { $0[0] } }

    mutating func uint16() -> UInt16? { take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }

    mutating func uint64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }

    mutating func raw(_ n: Int) -> [UInt8]? { take(n) }

    mutating func vector(lengthBytes: Int) -> [UInt8]? {
        guard let l = take(lengthBytes) else { return nil }
        return take(l.reduce(0) { $0 << 8 | Int($1) })
    }

    private mutating func take(_ n: Int) -> [UInt8]? {
        guard n >= 0, bytes.count - offset >= n else { return nil }
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }
}
