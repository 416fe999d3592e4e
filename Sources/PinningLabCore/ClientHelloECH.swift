internal import PinningLabTLSTypes

/// What a ClientHello says about Encrypted Client Hello (RFC 9849), read from its raw handshake message by an
/// engine that cannot itself speak ECH: whether it carried the `encrypted_client_hello` extension (0xfe0d), of
/// which type (an outer offer, or the inner marker), and the outer SNI beside it.
public struct ClientHelloECH: Sendable, Hashable {
    /// The extension's code point.
    public static let extensionType: UInt16 = 0xfe0d
    /// Whether the extension was there.
    public var offered: Bool
    /// `ECHClientHelloType`: 0 outer, 1 inner; `nil` when not offered or empty.
    public var type: UInt8?
    /// The host name of the `server_name` extension (the outer SNI when ECH is offered).
    public var serverName: String?

    public init(offered: Bool, type: UInt8? = nil, serverName: String? = nil) {
        self.offered = offered
        self.type = type
        self.serverName = serverName
    }

    /// Parses a ClientHello handshake message (type 1 and its 3-byte length first) or its body; nil when it is not
    /// one or is cut short.
    public static func parse(_ message: UnsafeRawBufferPointer) -> ClientHelloECH? {
        var body = Array(message)
        if body.count >= 4, body[0] == 1, Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3]) == body.count - 4 {
            body.removeFirst(4)
        }
        return parse(body: body)
    }

    public static func parse(body: [UInt8]) -> ClientHelloECH? {
        guard let extensions = TLSHelloExtensions.clientHello(body: body) else { return nil }
        var out = ClientHelloECH(offered: false)
        for (type, data) in extensions {
            if type == extensionType {
                out.offered = true
                out.type = data.first
            } else if type == 0, data.count >= 5, data[2] == 0 {
                // ServerNameList: list length, name type 0 (host_name), name length, name.
                let n = Int(data[3]) << 8 | Int(data[4])
                if 5 + n <= data.count { out.serverName = String(decoding: data[5..<(5 + n)], as: UTF8.self) }
            }
        }
        return out
    }
}
