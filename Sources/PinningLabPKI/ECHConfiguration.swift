import Crypto
public import Foundation

/// The lab's Encrypted Client Hello configuration (RFC 9849): an HPKE key pair — DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-128-GCM — and the `ECHConfigList` a client is given, with the public name
/// `public.pinning.test`.
///
/// No engine of the lab can decrypt an ECH offer (that needs OpenSSL ≥ 4.0): the configuration exists so that a
/// client offers ECH to the lab's servers, which then *reject* it — they answer the outer ClientHello, whose SNI is
/// the public name, with the public name's chain — and a client's rejection path can be judged. The private key is
/// kept like every key of the lab (`ech/ech-key.pem`, PKCS#8, mode 0600, written atomically under the folder's
/// lock, never replaced once made), so the configuration, and every client configured with it, stays the same
/// across runs.
public struct ECHConfiguration: Sendable, Hashable {
    /// `ECHConfig.version` of RFC 9849 (draft-ietf-tls-esni-13 onwards).
    public static let version: UInt16 = 0xfe0d
    /// DHKEM(X25519, HKDF-SHA256).
    public static let kemID: UInt16 = 0x0020
    /// HKDF-SHA256.
    public static let kdfID: UInt16 = 0x0001
    /// AES-128-GCM.
    public static let aeadID: UInt16 = 0x0001
    /// The public name of the lab's ECH configuration: the name an outer ClientHello carries in clear.
    public static let labPublicName = "public.pinning.test"
    /// `maximum_name_length`: the inner names of the lab are all shorter.
    public static let maximumNameLength: UInt8 = 64

    /// The X25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// The X25519 private key (32 bytes).
    public var privateKey: [UInt8]
    public var publicName: String
    /// One byte derived from the public key (the first byte of its SHA-256): stable as long as the key is.
    public var configID: UInt8

    public init(privateKey: [UInt8], publicName: String = ECHConfiguration.labPublicName) throws {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        self.privateKey = privateKey
        self.publicKey = Array(key.publicKey.rawRepresentation)
        self.publicName = publicName
        self.configID = Array(SHA256.hash(data: publicKey))[0]
    }

    /// One `ECHConfig` (version, length, ECHConfigContents), RFC 9849 section 4.
    public var config: [UInt8] {
        var contents: [UInt8] = [configID]
        contents.append(u16: Self.kemID)
        contents.append(u16: UInt16(publicKey.count))
        contents += publicKey
        contents.append(u16: 4)  // cipher_suites: one HpkeSymmetricCipherSuite
        contents.append(u16: Self.kdfID)
        contents.append(u16: Self.aeadID)
        contents.append(Self.maximumNameLength)
        let name = Array(publicName.utf8)
        contents.append(UInt8(name.count))
        contents += name
        contents.append(u16: 0)  // extensions: none
        var out: [UInt8] = []
        out.append(u16: Self.version)
        out.append(u16: UInt16(contents.count))
        return out + contents
    }

    /// The `ECHConfigList` (a 2-byte length, then the one config): what a client is configured with (Go's
    /// `Config.EncryptedClientHelloConfigList`, the HTTPS record's `ech` parameter).
    public var configList: [UInt8] {
        let c = config
        var out: [UInt8] = []
        out.append(u16: UInt16(c.count))
        return out + c
    }

    /// ``configList`` in base64, as a command template's `{ech.config}` and the exports give it.
    public var configListBase64: String { Data(configList).base64EncodedString() }

    /// PKCS#8 of an X25519 private key (RFC 8410): the fixed prefix, then the 32 bytes.
    static let x25519PKCS8Prefix: [UInt8] = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20,
    ]

    /// The private key as PKCS#8 DER.
    public var privateKeyPKCS8DER: [UInt8] { Self.x25519PKCS8Prefix + privateKey }
}

/// Where the lab's ECH files are in a PKI folder.
public struct ECHFiles: Sendable, Hashable {
    public var folder: URL
    public init(directory: URL) { folder = directory.appendingPathComponent("ech", isDirectory: true) }
    /// The HPKE private key, PKCS#8 PEM (`PRIVATE KEY`), mode 0600.
    public var keyPEM: URL { folder.appendingPathComponent("ech-key.pem") }
    /// The `ECHConfigList`, binary.
    public var configList: URL { folder.appendingPathComponent("echconfig.list") }
    /// The `ECHConfigList` in base64 on one line (the form Go, curl's `--ech ecl:` and HTTPS records take).
    public var configListBase64: URL { folder.appendingPathComponent("echconfig.b64") }
}

extension LabPKI {
    /// The files of the lab's ECH configuration.
    public var echFiles: ECHFiles { ECHFiles(directory: directory) }

    /// The lab's ECH configuration: its key is read from `ech/ech-key.pem`, made once (random) when missing; the
    /// config list files are rewritten when they do not hold the current list. Works under the folder's lock.
    public func echConfiguration() throws -> ECHConfiguration {
        let files = echFiles
        if let kept = try Self.readECHKey(files.keyPEM), Self.echFilesCurrent(files, kept) { return kept }
        let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        try Storage.makeOwnDirectory(files.folder, mode: 0o700, what: "the PKI's ech folder")
        Storage.removeStaleTemporaryFiles(in: files.folder)
        let ech: ECHConfiguration
        if let kept = try Self.readECHKey(files.keyPEM) {
            ech = kept
        } else {
            ech = try ECHConfiguration(privateKey: Array(Curve25519.KeyAgreement.PrivateKey().rawRepresentation))
            try Storage.writeAtomically(
                Array(PEM.encode(ech.privateKeyPKCS8DER, label: "PRIVATE KEY").utf8),
                to: files.keyPEM, mode: 0o600)
        }
        if !Self.echFilesCurrent(files, ech) {
            try Storage.writeAtomically(ech.configList, to: files.configList, mode: 0o644)
            try Storage.writeAtomically(
                Array((ech.configListBase64 + "\n").utf8), to: files.configListBase64, mode: 0o644)
        }
        return ech
    }

    private static func echFilesCurrent(_ files: ECHFiles, _ ech: ECHConfiguration) -> Bool {
        (try? Storage.readFile(files.configList)) == ech.configList
            && (try? Storage.readFile(files.configListBase64)) == Array((ech.configListBase64 + "\n").utf8)
    }

    /// The kept key, or nil when there is none; a key file open to others, or not an X25519 PKCS#8 key, is an error
    /// (never silently replaced: every client configured with the list would stop matching).
    private static func readECHKey(_ url: URL) throws -> ECHConfiguration? {
        guard Storage.exists(url) else { return nil }
        try Storage.requireOwnPrivate(url, what: "the ECH key")
        guard let bytes = try Storage.readFile(url),
            let der = PEM.decode(String(decoding: bytes, as: UTF8.self), label: "PRIVATE KEY"),
            der.count == ECHConfiguration.x25519PKCS8Prefix.count + 32,
            Array(der.prefix(ECHConfiguration.x25519PKCS8Prefix.count)) == ECHConfiguration.x25519PKCS8Prefix
        else {
            throw PKIError(
                .keyFileCorrupt, "not an X25519 PKCS#8 PEM private key (damaged or truncated)", file: url.path,
                entity: "ech",
                fix:
                    "remove \(url.path) to make a new ECH key (every client given the old ECHConfigList must get the new one)"
            )
        }
        return try ECHConfiguration(privateKey: Array(der.suffix(32)))
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func append(u16 v: UInt16) {
        append(UInt8(v >> 8))
        append(UInt8(v & 0xff))
    }
}
