/// A TLS code point of a registry whose values are 16 bits (Supported Groups, SignatureScheme): its value and, where
/// the lab knows it, its IANA name. Written `X25519MLKEM768 (0x11ec)`, or `0x1234` when unnamed (as an alert is
/// written `bad_certificate (42)`); GREASE values (RFC 8701) are named `GREASE`.
public struct TLSCodePoint: Hashable, Sendable, Codable, CustomStringConvertible {
    public var value: UInt16
    public var name: String?

    public init(value: UInt16, name: String?) {
        self.value = value
        self.name = name
    }

    /// A named group (`supported_groups`, `key_share`).
    public static func group(_ value: UInt16) -> TLSCodePoint {
        TLSCodePoint(value: value, name: isGREASE(value) ? "GREASE" : groupNames[value])
    }

    /// A signature scheme (`signature_algorithms`).
    public static func signatureScheme(_ value: UInt16) -> TLSCodePoint {
        TLSCodePoint(value: value, name: isGREASE(value) ? "GREASE" : signatureSchemeNames[value])
    }

    /// `0x11ec`.
    public var hex: String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    public var description: String { name.map { "\($0) (\(hex))" } ?? hex }

    /// RFC 8701: both bytes equal, each `0x?a`.
    public static func isGREASE(_ value: UInt16) -> Bool { value & 0x0f0f == 0x0a0a && value >> 8 == value & 0xff }

    public var isGREASE: Bool { Self.isGREASE(value) }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = Self(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not `name (0x1234)` or `0x1234`"))
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    /// Reads `name (0x1234)` or `0x1234`.
    init?(parsing text: String) {
        var name: String? = nil
        var hex = Substring(text)
        if text.hasSuffix(")"), let open = text.lastIndex(of: "(") {
            name = String(text[..<open].dropLast(text[..<open].hasSuffix(" ") ? 1 : 0))
            hex = text[text.index(after: open)..<text.index(before: text.endIndex)]
        }
        guard hex.hasPrefix("0x"), let v = UInt16(hex.dropFirst(2), radix: 16) else { return nil }
        self.init(value: v, name: name)
    }

    /// IANA TLS Supported Groups (with the post-quantum hybrids of draft-ietf-tls-ecdhe-mlkem).
    public static let groupNames: [UInt16: String] = [
        0x0015: "secp224r1", 0x0016: "secp256k1", 0x0017: "secp256r1", 0x0018: "secp384r1", 0x0019: "secp521r1",
        0x001a: "brainpoolP256r1", 0x001b: "brainpoolP384r1", 0x001c: "brainpoolP512r1", 0x001d: "x25519",
        0x001e: "x448", 0x001f: "brainpoolP256r1tls13", 0x0020: "brainpoolP384r1tls13",
        0x0021: "brainpoolP512r1tls13", 0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096",
        0x0103: "ffdhe6144", 0x0104: "ffdhe8192", 0x0200: "MLKEM512", 0x0201: "MLKEM768", 0x0202: "MLKEM1024",
        0x11eb: "SecP256r1MLKEM768", 0x11ec: "X25519MLKEM768", 0x11ed: "SecP384r1MLKEM1024",
        0x6399: "X25519Kyber768Draft00",
    ]

    /// IANA TLS SignatureScheme (with ML-DSA of draft-ietf-tls-mldsa), and the legacy TLS 1.2 pairs
    /// (hash, signature) that clients still send.
    public static let signatureSchemeNames: [UInt16: String] = [
        0x0201: "rsa_pkcs1_sha1", 0x0202: "dsa_sha1", 0x0203: "ecdsa_sha1", 0x0301: "rsa_pkcs1_sha224",
        0x0302: "dsa_sha224", 0x0303: "ecdsa_sha224", 0x0401: "rsa_pkcs1_sha256", 0x0402: "dsa_sha256",
        0x0403: "ecdsa_secp256r1_sha256", 0x0501: "rsa_pkcs1_sha384", 0x0502: "dsa_sha384",
        0x0503: "ecdsa_secp384r1_sha384", 0x0601: "rsa_pkcs1_sha512", 0x0602: "dsa_sha512",
        0x0603: "ecdsa_secp521r1_sha512", 0x0804: "rsa_pss_rsae_sha256", 0x0805: "rsa_pss_rsae_sha384",
        0x0806: "rsa_pss_rsae_sha512", 0x0807: "ed25519", 0x0808: "ed448", 0x0809: "rsa_pss_pss_sha256",
        0x080a: "rsa_pss_pss_sha384", 0x080b: "rsa_pss_pss_sha512", 0x081a: "ecdsa_brainpoolP256r1tls13_sha256",
        0x081b: "ecdsa_brainpoolP384r1tls13_sha384", 0x081c: "ecdsa_brainpoolP512r1tls13_sha512",
        0x0904: "mldsa44", 0x0905: "mldsa65", 0x0906: "mldsa87",
    ]

    /// Named groups, for configurations and tests.
    public static let x25519 = group(0x001d)
    public static let secp256r1 = group(0x0017)
    public static let secp384r1 = group(0x0018)
    public static let secp521r1 = group(0x0019)
    public static let x25519MLKEM768 = group(0x11ec)
    public static let secp256r1MLKEM768 = group(0x11eb)
    public static let secp384r1MLKEM1024 = group(0x11ed)
}

/// What a ClientHello offers for the key exchange and the server's signature, read from its raw handshake message
/// by the engines (OpenSSL 3.0 and GnuTLS 3.7 alike, one parser): the groups of `supported_groups` (extension 10),
/// the groups it sent key shares for (`key_share`, 51), and the schemes of `signature_algorithms` (13), each in the
/// client's order, GREASE included. A list is empty when the extension was absent.
public struct ClientHelloOffers: Hashable, Sendable, Codable {
    public static let supportedGroupsExtension: UInt16 = 10
    public static let signatureAlgorithmsExtension: UInt16 = 13
    public static let keyShareExtension: UInt16 = 51

    /// `supported_groups`, in the client's order of preference.
    public var groups: [TLSCodePoint]
    /// The groups of the `key_share` entries (TLS 1.3): the groups the client computed a share for up front. A group
    /// offered without a share costs a HelloRetryRequest if the server picks it.
    public var keyShares: [TLSCodePoint]
    /// `signature_algorithms`, in the client's order: what the server may sign with (and so which certificate of a
    /// host holding several it is served).
    public var signatureAlgorithms: [TLSCodePoint]

    public init(groups: [TLSCodePoint] = [], keyShares: [TLSCodePoint] = [], signatureAlgorithms: [TLSCodePoint] = []) {
        self.groups = groups
        self.keyShares = keyShares
        self.signatureAlgorithms = signatureAlgorithms
    }

    /// The groups offered, GREASE left out: what a reader compares with a client's configuration.
    public var realGroups: [TLSCodePoint] { groups.filter { !$0.isGREASE } }
    public var realKeyShares: [TLSCodePoint] { keyShares.filter { !$0.isGREASE } }

    /// Parses a ClientHello handshake message (type 1 and its 3-byte length first) or its body; nil when it is not
    /// one, or is cut short or malformed.
    public static func parse(_ message: UnsafeRawBufferPointer) -> ClientHelloOffers? {
        parse(message: Array(message))
    }

    public static func parse(message: [UInt8]) -> ClientHelloOffers? {
        var body = message
        if body.count >= 4, body[0] == 1, Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3]) == body.count - 4 {
            body.removeFirst(4)
        }
        return parse(body: body)
    }

    public static func parse(body: [UInt8]) -> ClientHelloOffers? {
        guard let extensions = TLSHelloExtensions.clientHello(body: body) else { return nil }
        var out = ClientHelloOffers()
        for (type, data) in extensions {
            switch type {
            case supportedGroupsExtension:
                guard let list = u16List(data) else { return nil }
                out.groups = list.map(TLSCodePoint.group)
            case signatureAlgorithmsExtension:
                guard let list = u16List(data) else { return nil }
                out.signatureAlgorithms = list.map(TLSCodePoint.signatureScheme)
            case keyShareExtension:
                // client_shares<0..2^16-1>: KeyShareEntry { NamedGroup group; opaque key_exchange<1..2^16-1>; }
                guard data.count >= 2, Int(data[0]) << 8 | Int(data[1]) == data.count - 2 else { return nil }
                var i = 2
                var shares: [TLSCodePoint] = []
                while i < data.count {
                    guard i + 4 <= data.count else { return nil }
                    let group = UInt16(data[i]) << 8 | UInt16(data[i + 1])
                    let n = Int(data[i + 2]) << 8 | Int(data[i + 3])
                    guard i + 4 + n <= data.count else { return nil }
                    shares.append(.group(group))
                    i += 4 + n
                }
                out.keyShares = shares
            default: break
            }
        }
        return out
    }

    /// A list of 16-bit values behind a 2-byte length.
    private static func u16List(_ data: [UInt8]) -> [UInt16]? {
        guard data.count >= 2 else { return nil }
        let n = Int(data[0]) << 8 | Int(data[1])
        guard n == data.count - 2, n % 2 == 0 else { return nil }
        return stride(from: 2, to: data.count, by: 2).map { UInt16(data[$0]) << 8 | UInt16(data[$0 + 1]) }
    }

    /// RFC 8446 4.1.3: the `random` of a ServerHello that is a HelloRetryRequest (SHA-256 of "HelloRetryRequest").
    public static let helloRetryRequestRandom: [UInt8] = [
        0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
        0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
    ]

    /// Whether a ServerHello handshake message (type 2 and its length first) is a HelloRetryRequest.
    public static func isHelloRetryRequest(serverHello message: UnsafeRawBufferPointer) -> Bool {
        // type (1), length (3), legacy_version (2), random (32)
        guard message.count >= 38, message[0] == 2 else { return false }
        return message[6..<38].elementsEqual(helloRetryRequestRandom)
    }
}

/// The extensions of a hello message, in order: the one ClientHello walker (the offers here, ``ClientHelloECH`` in the
/// server runtime).
package enum TLSHelloExtensions {
    /// The extensions of a ClientHello body (no handshake header): `[]` when it has none; nil when it is cut short.
    package static func clientHello(body: [UInt8]) -> [(type: UInt16, data: [UInt8])]? {
        var i = 0
        func u(_ n: Int) -> Int? {
            guard i + n <= body.count else { return nil }
            var v = 0
            for k in 0..<n { v = v << 8 | Int(body[i + k]) }
            i += n
            return v
        }
        func skip(_ lengthBytes: Int) -> Bool {
            guard let n = u(lengthBytes), i + n <= body.count else { return false }
            i += n
            return true
        }
        // legacy_version, random, session id, cipher suites, compression methods.
        guard u(2) != nil, i + 32 <= body.count else { return nil }
        i += 32
        guard skip(1), skip(2), skip(1) else { return nil }
        guard i < body.count else { return [] }
        guard let total = u(2), i + total <= body.count else { return nil }
        let end = i + total
        var out: [(type: UInt16, data: [UInt8])] = []
        while i + 4 <= end {
            guard let type = u(2), let len = u(2), i + len <= end else { return nil }
            out.append((UInt16(type), Array(body[i..<(i + len)])))
            i += len
        }
        return out
    }
}

extension TLSCodePoint {
    /// The signature schemes a key can sign a handshake with, from its PKCS#8 DER (the algorithm identifier and, for
    /// an EC key, its curve); empty for a key the lab does not know. TLS 1.2 lets an ECDSA key sign with any ECDSA
    /// hash; TLS 1.3 binds the curve (`ecdsa_secp256r1_sha256` for P-256), which comes first.
    public static func signatureSchemes(forPKCS8 der: [UInt8]) -> [UInt16] {
        guard let (algorithm, parameter) = PKCS8Algorithm.read(der) else { return [] }
        let rsa: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]
        let rsaPSS: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a]
        let ec: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
        let mldsa: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03]
        switch algorithm {
        case rsa: return [0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0201]
        case rsaPSS: return [0x0809, 0x080a, 0x080b]
        case [0x2b, 0x65, 0x70]: return [0x0807]
        case [0x2b, 0x65, 0x71]: return [0x0808]
        case mldsa + [0x11]: return [0x0904]
        case mldsa + [0x12]: return [0x0905]
        case mldsa + [0x13]: return [0x0906]
        case ec:
            let any: [UInt16] = [0x0403, 0x0503, 0x0603, 0x0203]
            switch parameter {
            case [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]: return any
            case [0x2b, 0x81, 0x04, 0x00, 0x22]: return [0x0503, 0x0403, 0x0603, 0x0203]
            case [0x2b, 0x81, 0x04, 0x00, 0x23]: return [0x0603, 0x0403, 0x0503, 0x0203]
            default: return any
            }
        default: return []
        }
    }
}

/// The algorithm identifier of a PKCS#8 `PrivateKeyInfo`: its OID's content and, when the parameter is an OID too
/// (an EC curve), that one's.
enum PKCS8Algorithm {
    static func read(_ der: [UInt8]) -> (algorithm: [UInt8], parameter: [UInt8]?)? {
        var i = 0
        /// Reads a tag and a length; returns the content's range.
        func element(_ tag: UInt8) -> Range<Int>? {
            guard i + 2 <= der.count, der[i] == tag else { return nil }
            var length = Int(der[i + 1])
            i += 2
            if length & 0x80 != 0 {
                let n = length & 0x7f
                guard n >= 1, n <= 3, i + n <= der.count else { return nil }
                length = der[i..<(i + n)].reduce(0) { $0 << 8 | Int($1) }
                i += n
            }
            guard i + length <= der.count else { return nil }
            return i..<(i + length)
        }
        guard element(0x30) != nil, let version = element(0x02) else { return nil }
        i = version.upperBound
        guard let algorithm = element(0x30) else { return nil }
        guard let oid = element(0x06), oid.upperBound <= algorithm.upperBound else { return nil }
        i = oid.upperBound
        var parameter: [UInt8]? = nil
        if i < algorithm.upperBound, let p = element(0x06), p.upperBound <= algorithm.upperBound {
            parameter = Array(der[p])
        }
        return (Array(der[oid]), parameter)
    }
}
