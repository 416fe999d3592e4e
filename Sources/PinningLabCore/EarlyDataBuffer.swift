/// TLS 1.3 early data a server session accepted before its handshake completed, handed to the application's reads
/// before anything that arrives after the handshake: the part the OpenSSL and GnuTLS server sessions share.
package struct EarlyDataBuffer: Sendable {
    /// Every byte of early data accepted so far.
    package private(set) var bytes: [UInt8] = []
    /// How many of ``bytes`` the reads took.
    private var delivered = 0

    package init() {}

    package mutating func append(_ chunk: some Sequence<UInt8>) { bytes.append(contentsOf: chunk) }

    /// Copies the next bytes no read took yet into `buffer`: how many, or `nil` when every byte was read.
    package mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard delivered < bytes.count else { return nil }
        let n = min(buffer.count, bytes.count - delivered)
        bytes.withUnsafeBytes { all in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[delivered..<delivered + n]))
        }
        delivered += n
        return n
    }
}
