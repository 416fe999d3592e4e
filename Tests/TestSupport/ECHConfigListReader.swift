/// An `ECHConfigList` (RFC 9849, section 4) read field by field, independently of the lab's writer
/// (`ECHConfiguration`): what the export, control API and CLI tests parse what they were given with.
public struct ECHConfigRead: Sendable, Hashable {
    public var version: UInt16
    public var configID: UInt8
    public var kemID: UInt16
    public var publicKey: [UInt8]
    /// (kdf_id, aead_id) pairs.
    public var cipherSuites: [[UInt16]]
    public var maximumNameLength: UInt8
    public var publicName: String
    public var extensions: [UInt8]

    /// Every config of the list, or nil when the bytes are not exactly one well-formed list (a short field, a length
    /// that overruns, bytes after the list). Configs of a version other than 0xfe0d are returned with their version
    /// only (their contents are skipped, as a client skips them).
    public static func parseList(_ bytes: [UInt8]) -> [ECHConfigRead]? {
        var r = Reader(bytes)
        guard let listLength = r.u16(), listLength == bytes.count - 2 else { return nil }
        var configs: [ECHConfigRead] = []
        while !r.atEnd {
            guard let version = r.u16(), let length = r.u16(), let body = r.take(Int(length)) else { return nil }
            guard version == 0xfe0d else {
                configs.append(
                    ECHConfigRead(
                        version: version, configID: 0, kemID: 0, publicKey: [], cipherSuites: [],
                        maximumNameLength: 0, publicName: "", extensions: []))
                continue
            }
            var c = Reader(body)
            guard let id = c.u8(), let kem = c.u16(), let keyLength = c.u16(), let key = c.take(Int(keyLength)),
                let suitesLength = c.u16(), suitesLength % 4 == 0, let suites = c.take(Int(suitesLength)),
                let maximum = c.u8(), let nameLength = c.u8(), nameLength > 0, let name = c.take(Int(nameLength)),
                let extensionsLength = c.u16(), let extensions = c.take(Int(extensionsLength)), c.atEnd
            else { return nil }
            var s = Reader(suites)
            var pairs: [[UInt16]] = []
            while let kdf = s.u16(), let aead = s.u16() { pairs.append([kdf, aead]) }
            configs.append(
                ECHConfigRead(
                    version: version, configID: id, kemID: kem, publicKey: key, cipherSuites: pairs,
                    maximumNameLength: maximum, publicName: String(decoding: name, as: UTF8.self),
                    extensions: extensions))
        }
        return configs
    }

    private struct Reader {
        var bytes: [UInt8]
        var at = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var atEnd: Bool { at == bytes.count }
        mutating func take(_ n: Int) -> [UInt8]? {
            guard n >= 0, at + n <= bytes.count else { return nil }
            defer { at += n }
            return Array(bytes[at..<(at + n)])
        }
        mutating func u8() -> UInt8? { take(1).map { $0[0] } }
        mutating func u16() -> UInt16? { take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }
    }
}
