import Crypto
public import Foundation
import PinningLabBase
import SwiftASN1
import X509
import _CryptoExtras

/// Builds a PKCS#12 file (key + certificate + chain, password-protected). Implemented outside this C-free module
/// (the OpenSSL engine provides one); the PKI writes `.p12` files only when given an encoder.
public protocol PKCS12Encoder: Sendable {
    func encode(
        privateKeyPKCS8DER: [UInt8], certificateDER: [UInt8], chainDER: [[UInt8]], friendlyName: String,
        password: String
    ) throws -> [UInt8]
}

/// Where the files of one identity are.
public struct IdentityFiles: Sendable, Hashable {
    public var folder: URL
    public init(folder: URL) { self.folder = folder }
    /// The files of identity `name` in the PKI folder `directory`: `certs/NAME/`.
    public init(directory: URL, name: String) {
        folder = directory.appendingPathComponent("certs", isDirectory: true).appendingPathComponent(
            name, isDirectory: true)
    }
    /// The certificate, PEM.
    public var certificatePEM: URL { folder.appendingPathComponent("cert.pem") }
    /// The certificate, DER (`.cer`, as iOS bundles take it).
    public var certificateDER: URL { folder.appendingPathComponent("cert.cer") }
    /// The certificate and its issuers without the root: what a server sends.
    public var chainPEM: URL { folder.appendingPathComponent("chain.pem") }
    /// The chain plus the root.
    public var fullChainPEM: URL { folder.appendingPathComponent("fullchain.pem") }
    /// The root at the top of the chain: the trust file.
    public var rootPEM: URL { folder.appendingPathComponent("root.pem") }
    /// The private key, PKCS#8 PEM, mode 0600.
    public var keyPEM: URL { folder.appendingPathComponent("key.pem") }
    /// Key, certificate and chain in PKCS#12 (leaves and clients), mode 0600.
    public var pkcs12: URL { folder.appendingPathComponent("identity.p12") }
    /// Every pin of the certificate, JSON.
    public var pinsJSON: URL { folder.appendingPathComponent("pins.json") }
}

/// Options for opening a lab PKI directory.
public struct PKIOptions: Sendable {
    /// The folder holding keys and issued certificates.
    public var directory: URL
    /// Derive the EC and Ed25519 keys of leaf and client certificates from this text, so their pins are the same
    /// on every machine. RSA keys and every key a root or intermediate uses stay random: whoever knows a seed could
    /// otherwise mint certificates a device trusting that CA accepts.
    public var seed: String?
    /// Replace every key (all pins change) and re-issue everything.
    public var regenerateKeys: Bool = false
    /// Replace these keys (by key name, e.g. `proxy-root`) with new random ones and re-issue everything.
    public var rekey: Set<String> = []
    /// Re-issue every certificate even when the kept ones are still fresh.
    public var reissue: Bool = false
    /// The moment validity is relative to.
    public var now: Date = Date()
    /// Builds `.p12` files for leaves and clients; without one, none are written.
    public var pkcs12Encoder: (any PKCS12Encoder)?
    /// The password of every `.p12` file.
    public var pkcs12Password: String = "pinninglab"
    /// Roles whose `.p12` files are written with the certificates; others are made on demand by
    /// ``LabPKI/pkcs12File(for:)``.
    public var pkcs12Roles: Set<Role> = [.leaf, .client]
    /// Write every identity's files (PEM, DER, chain, key, pins) when certificates are issued. When false they are
    /// written on demand by ``LabPKI/materialize(_:)``: the state file alone carries every certificate.
    public var writeIdentityFiles: Bool = true
    /// Called before slow steps (RSA key generation) with a human line.
    public var progress: (@Sendable (String) -> Void)?
    /// The absolute path of the spec file of one's own `spec` was read from (`pinlab --spec`), recorded in the
    /// state file; nil for the built-in spec or one made in code. A folder made from a file of one's own is not
    /// re-issued from a spec opened without this path (``PKIError/Code/specReplaced``) unless ``regenerateKeys``.
    public var specFile: String?
    /// Keys read from another PKI's files (key name → its file) instead of this folder's `keys/`: never made,
    /// replaced, copied or linked (a timeline's scratch PKI shares the lab's keys this way).
    package var borrowedKeys: [String: URL] = [:]

    public init(directory: URL, seed: String? = nil) {
        self.directory = directory
        self.seed = seed
    }
}

/// What opening the PKI did.
public struct PKIRefresh: Sendable, Hashable {
    /// Keys created in this run.
    public var generatedKeys: [String] = []
    /// Whether certificates were issued in this run (false when the kept ones were fresh).
    public var reissued: Bool = false
    /// Why they were (or were not) re-issued.
    public var reason: String = ""
    /// What was found wrong and put right without re-issuing: per-identity files rewritten from the state
    /// (`certs/leaf-v1: chain.pem missing, cert.pem damaged: rewritten`), a missing key derived again or replaced.
    public var repaired: [String] = []
    /// Key names whose kept file was missing and which got a new random key in this run (every pin on them
    /// changed: for a CA's key, every certificate it signs and every device that trusts it).
    public var replacedMissingKeys: [String] = []
}

/// The spec file of one's own a PKI folder was made from, as its state file records it.
public struct PKISpecRecord: Sendable, Hashable, Codable {
    /// The file's absolute path.
    public var path: String
    /// SHA-256 (hex) of its text: ``PKISpec/fingerprint``.
    public var sha256: String

    public init(path: String, sha256: String) {
        self.path = path
        self.sha256 = sha256
    }
}

/// The lab PKI on disk: keys generated once and kept (stable pins), certificates issued fresh from the spec.
public final class LabPKI: Sendable {
    public let spec: PKISpec
    public let directory: URL
    /// Every identity, issuers before what they issue.
    public let identities: [Identity]
    public let refresh: PKIRefresh
    public let pkcs12Password: String
    private let pkcs12Encoder: (any PKCS12Encoder)?
    /// When the certificates were issued.
    public let issuedAt: Date
    /// Where each key came from, by key name: `random`, or `seed:` and the first 16 hex digits of the seed's
    /// fingerprint (the state file records it).
    public let keyOrigins: [String: String]
    private let byName: [String: Int]
    /// The lab's Certificate Transparency logs (`ctLogs:` of the spec), listed and unlisted.
    public let ctLogs: [CTLog]

    /// Google's log list v3 of the listed CT logs (`ct/log_list.json`), written with the certificates.
    public var ctLogListFile: URL { directory.appendingPathComponent("ct/log_list.json") }
    /// OpenSSL's CT log file of the listed logs (`ct/ctlogs.cnf`), for `openssl s_client -ct -ctlogfile`.
    public var ctLogOpenSSLFile: URL { directory.appendingPathComponent("ct/ctlogs.cnf") }

    /// The per-user default folder for library use: `$PINLAB_DIR`, else `~/.cache/pinninglab`
    /// (`~/Library/Caches/PinningLab` on macOS). `$PINNINGLAB_DIR`, the older name, works until the next release.
    public static var defaultDirectory: URL {
        if let d = PinlabEnvironment.value("DIR"), !d.isEmpty {
            return URL(fileURLWithPath: d, isDirectory: true)
        }
        #if os(macOS)
            let base = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first!
            return base.appendingPathComponent("PinningLab", isDirectory: true)
        #else
            if let x = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], !x.isEmpty {
                return URL(fileURLWithPath: x, isDirectory: true).appendingPathComponent(
                    "pinninglab", isDirectory: true)
            }
            return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(
                ".cache/pinninglab", isDirectory: true)
        #endif
    }

    /// The spec file of one's own the PKI folder `directory` was made from (`pinlab pki init --spec FILE`), or nil
    /// (the built-in spec, a state file of an earlier PinningLab, or no PKI there).
    public static func recordedSpec(in directory: URL) -> PKISpecRecord? {
        let url = directory.appendingPathComponent("state.json")
        guard let bytes = try? Storage.readFile(url) else { return nil }
        struct Recorded: Decodable { var spec: PKISpecRecord? }
        return (try? JSONDecoder().decode(Recorded.self, from: Data(bytes)))?.spec
    }

    public subscript(name: String) -> Identity? { byName[name].map { identities[$0] } }

    /// The identities above `identity` by issuer name, nearest first, ending with its root (empty for a root).
    public func issuers(of identity: Identity) -> [Identity] {
        issuerWalk(from: identity.name) { self[$0]?.issuerName }.compactMap { self[$0] }
    }

    /// The identity named `name`, or an error listing the names there are.
    public func identity(_ name: String) throws -> Identity {
        guard let i = self[name] else {
            throw PKIError(
                .unknownIdentity, "no identity named '\(name)'", entity: name,
                fix: [didYouMean(name, identities.map(\.name)), "`pinlab pki list` shows them all"].filter {
                    !$0.isEmpty
                }.joined(separator: " "))
        }
        return i
    }

    public func files(for name: String) -> IdentityFiles { IdentityFiles(directory: directory, name: name) }

    /// The kept key file of a key name (`K1`) or an entity with its own key.
    public func keyFile(_ keyName: String) -> URL {
        directory.appendingPathComponent("keys", isDirectory: true).appendingPathComponent("\(keyName).pem")
    }

    init(
        spec: PKISpec, directory: URL, identities: [Identity], refresh: PKIRefresh, ctLogs: [CTLog] = [],
        keyOrigins: [String: String], password: String, issuedAt: Date, pkcs12Encoder: (any PKCS12Encoder)?
    ) {
        self.spec = spec
        self.ctLogs = ctLogs
        self.keyOrigins = keyOrigins
        self.pkcs12Encoder = pkcs12Encoder
        self.directory = directory
        self.identities = identities
        self.refresh = refresh
        self.pkcs12Password = password
        self.issuedAt = issuedAt
        var m: [String: Int] = [:]
        for (i, id) in identities.enumerated() { m[id.name] = i }
        self.byName = m
    }

    private var writer: IdentityWriter {
        IdentityWriter(
            directory: directory, pkcs12Encoder: pkcs12Encoder, pkcs12Password: pkcs12Password, pkcs12Roles: [])
    }

    /// A short name-safe tag of `bytes` (the first 12 hex digits of their SHA-256), for file names that must change
    /// whenever their contents do.
    package static func contentTag(_ bytes: [UInt8]) -> String {
        String(Array(SHA256.hash(data: bytes)).hexString.prefix(12))
    }

    /// Whether ``pkcs12File(for:)`` can make a `.p12` (the PKI was opened with a ``PKCS12Encoder``).
    public var makesPKCS12: Bool { pkcs12Encoder != nil }

    /// The files of an identity, written now if they do not hold its current certificate (a PKI opened with
    /// `writeIdentityFiles: false`, as library use does, writes them only on demand).
    @discardableResult
    public func materialize(_ name: String) throws -> IdentityFiles {
        let id = try identity(name)
        let w = writer
        if !w.isCurrent(id) {
            let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
            defer { lock.unlock() }
            if !w.isCurrent(id) { try w.write(id) }
        }
        return files(for: name)
    }

    /// The `.p12` file of an identity (key, certificate, chain; password ``pkcs12Password``), written now if it is
    /// missing or older than the certificate.
    public func pkcs12File(for name: String) throws -> URL {
        let id = try identity(name)
        // Every rewrite of an identity's files rewrites or removes its .p12: one that exists is current.
        let f = try materialize(name)
        if IdentityWriter.isWholeDER(f.pkcs12) { return f.pkcs12 }
        guard let enc = pkcs12Encoder else {
            throw PKIError(
                .pkcs12Failed, "this PKI was opened without a PKCS#12 encoder", entity: name,
                fix: "open it with Lab.pki(), which uses OpenSSL for PKCS#12")
        }
        let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        // Where a killed writer of this file left its half (library use never runs `pki init`'s sweep).
        Storage.removeStaleTemporaryFiles(in: f.folder)
        try Storage.writeAtomically(try writer.pkcs12(id, enc), to: f.pkcs12, mode: 0o600)
        return f.pkcs12
    }

    /// Opens (creating or refreshing as needed) the PKI described by `spec` in `options.directory`.
    /// Holds an exclusive lock on the folder while it works, so concurrent runs take turns.
    public static func open(spec: PKISpec, options: PKIOptions) throws -> LabPKI {
        let dir = options.directory
        // ML-DSA before macOS 26: an error naming the entity, before the folder is made or touched.
        try MLDSAAvailability.check(spec)
        try Storage.makeOwnDirectory(dir, mode: 0o700, what: "the PKI folder")
        let lock = try DirectoryLock(dir.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        try Storage.ignoreInGit(dir)
        return try Builder(spec: spec, options: options).run()
    }
}

/// The environment variables PinningLab reads: one prefix, `PINLAB_`. The names of 0.9.0 with the prefix
/// `PINNINGLAB_` (`PINNINGLAB_DIR`, `PINNINGLAB_TRACE`) are read for one more release, with a line on stderr.
package enum PinlabEnvironment {
    private static let warned = Locked<Set<String>>([])

    /// `PINLAB_NAME`, else the deprecated `PINNINGLAB_NAME` (said once per process on stderr).
    package static func value(_ name: String) -> String? {
        let env = ProcessInfo.processInfo.environment
        if let v = env["PINLAB_" + name] { return v }
        guard let v = env["PINNINGLAB_" + name] else { return nil }
        let first = warned.withLock { $0.insert(name).inserted }
        if first {
            FileHandle.standardError.write(
                Data(
                    "pinlab: PINNINGLAB_\(name) is deprecated and will stop working in the next release: name it PINLAB_\(name)\n"
                        .utf8))
        }
        return v
    }
}
