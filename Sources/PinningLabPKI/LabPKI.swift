public import Foundation
import Crypto
import _CryptoExtras
import X509
import SwiftASN1

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
        folder = directory.appendingPathComponent("certs", isDirectory: true).appendingPathComponent(name, isDirectory: true)
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
    /// Derive EC and Ed25519 keys from this text, so pins are the same on every machine. RSA keys stay random.
    public var seed: String?
    /// Replace every key (all pins change) and re-issue everything.
    public var regenerateKeys: Bool = false
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
    private let byName: [String: Int]

    /// The per-user default folder for library use: `$PINNINGLAB_DIR`, else `~/.cache/pinninglab`
    /// (`~/Library/Caches/PinningLab` on macOS).
    public static var defaultDirectory: URL {
        if let d = ProcessInfo.processInfo.environment["PINNINGLAB_DIR"], !d.isEmpty {
            return URL(fileURLWithPath: d, isDirectory: true)
        }
        #if os(macOS)
        let base = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first!
        return base.appendingPathComponent("PinningLab", isDirectory: true)
        #else
        if let x = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], !x.isEmpty {
            return URL(fileURLWithPath: x, isDirectory: true).appendingPathComponent("pinninglab", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/pinninglab", isDirectory: true)
        #endif
    }

    public subscript(name: String) -> Identity? { byName[name].map { identities[$0] } }

    /// The identity named `name`, or an error listing the names there are.
    public func identity(_ name: String) throws -> Identity {
        guard let i = self[name] else {
            throw PKIError(.unknownIdentity, "no identity named '\(name)'", entity: name,
                           fix: "\(didYouMean(name, identities.map(\.name))) `pinlab pki list` shows them all")
        }
        return i
    }

    public func files(for name: String) -> IdentityFiles { IdentityFiles(directory: directory, name: name) }

    /// The kept key file of a key name (`K1`) or an entity with its own key.
    public func keyFile(_ keyName: String) -> URL {
        directory.appendingPathComponent("keys", isDirectory: true).appendingPathComponent("\(keyName).pem")
    }

    init(
        spec: PKISpec, directory: URL, identities: [Identity], refresh: PKIRefresh, password: String, issuedAt: Date,
        pkcs12Encoder: (any PKCS12Encoder)?
    ) {
        self.spec = spec
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
        IdentityWriter(directory: directory, pkcs12Encoder: pkcs12Encoder, pkcs12Password: pkcs12Password, pkcs12Roles: [])
    }

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
        if Storage.exists(f.pkcs12) { return f.pkcs12 }
        guard let enc = pkcs12Encoder else {
            throw PKIError(.pkcs12Failed, "this PKI was opened without a PKCS#12 encoder", entity: name,
                           fix: "open it with Lab.pki(), which uses OpenSSL for PKCS#12")
        }
        let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        try Storage.writeAtomically(try writer.pkcs12(id, enc), to: f.pkcs12, mode: 0o600)
        return f.pkcs12
    }

    /// Opens (creating or refreshing as needed) the PKI described by `spec` in `options.directory`.
    /// Holds an exclusive lock on the folder while it works, so concurrent runs take turns.
    public static func open(spec: PKISpec, options: PKIOptions) throws -> LabPKI {
        let dir = options.directory
        try Storage.makeDirectory(dir, mode: 0o700)
        let lock = try DirectoryLock(dir.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        return try Builder(spec: spec, options: options).run()
    }
}

// MARK: - State file

struct StateFile: Codable {
    struct Key: Codable { var type: String; var origin: String }
    struct Entry: Codable {
        var name: String
        var role: String
        var issuerName: String
        var keyName: String
        var keyType: String
        var der: String
        var subject: String
        var issuer: String
        var serial: String
        var notBefore: Double
        var notAfter: Double
        var hosts: [String]
        var spki: String
        var cert: String
        var raw: String
    }
    var version: Int = 1
    var specFingerprint: String
    var seedFingerprint: String?
    var issuedAt: Double
    var reissueBy: Double
    var pkcs12Password: String?
    var keys: [String: Key]
    var identities: [Entry]
}

// MARK: - Builder

struct Builder {
    let spec: PKISpec
    let options: PKIOptions
    var dir: URL { options.directory }
    var keysDir: URL { dir.appendingPathComponent("keys", isDirectory: true) }
    var stateURL: URL { dir.appendingPathComponent("state.json") }

    func keyFile(_ name: String) -> URL { keysDir.appendingPathComponent("\(name).pem") }

    var seedFingerprint: String? {
        options.seed.map { Array(SHA256.hash(data: Data("PinningLab seed|\($0)".utf8))).hexString }
    }

    func run() throws -> LabPKI {
        let trace = ProcessInfo.processInfo.environment["PINNINGLAB_TRACE"] != nil
        var t0 = DispatchTime.now().uptimeNanoseconds
        func mark(_ what: String) {
            guard trace else { return }
            let t = DispatchTime.now().uptimeNanoseconds
            FileHandle.standardError.write(Data("pki: \(what) \(Double(t - t0) / 1e6) ms\n".utf8))
            t0 = t
        }
        try Storage.makeDirectory(keysDir, mode: 0o700)
        let oldState: StateFile? = try? Storage.readFile(stateURL).flatMap { try JSONDecoder().decode(StateFile.self, from: Data($0)) }
        var refresh = PKIRefresh()

        // Keys: every key name used by an entity.
        var keyTypes: [String: KeyType] = [:]
        for e in spec.entities { keyTypes[e.keyName] = e.keyType }
        var keys: [String: LabKey] = [:]
        var keyOrigins: [String: StateFile.Key] = [:]
        let wantedOrigin = seedFingerprint.map { "seed:" + $0.prefix(16) }
        // Keys are read or made concurrently (RSA generation and file creation dominate); results keep name order.
        let work = keyTypes.sorted(by: { $0.key < $1.key })
        let keySlots = ResultSlots<(LabKey, StateFile.Key, Bool)>(count: work.count)
        DispatchQueue.concurrentPerform(iterations: work.count) { i in
            let (name, type) = work[i]
            keySlots.set(i) {
                let url = keyFile(name)
                let derivedOrigin = type.isDeterministic ? wantedOrigin : nil
                let previous = oldState?.keys[name]
                // A seeded key whose seed changed is re-derived; everything else kept is read.
                if !options.regenerateKeys, Storage.exists(url), derivedOrigin == nil || previous?.origin == derivedOrigin {
                    return (try readKey(url, name: name, type: type),
                            previous ?? StateFile.Key(type: type.rawValue, origin: "random"), false)
                }
                let key: LabKey
                let origin: StateFile.Key
                if let seed = options.seed, type.isDeterministic {
                    key = try LabKey.derive(type, seed: seed, name: name)
                    origin = StateFile.Key(type: type.rawValue, origin: derivedOrigin!)
                } else {
                    if type.isRSA, let p = options.progress { p("generating \(type.displayName) key \(name)…") }
                    key = try LabKey.generate(type)
                    origin = StateFile.Key(type: type.rawValue, origin: "random")
                }
                try Storage.writeAtomically(PEM.encode(key.pkcs8DER, label: "PRIVATE KEY"), to: url, mode: 0o600)
                return (key, origin, true)
            }
        }
        for (i, result) in try keySlots.values().enumerated() {
            let name = work[i].key
            keys[name] = result.0
            keyOrigins[name] = result.1
            if result.2 { refresh.generatedKeys.append(name) }
        }

        mark("keys")
        // Are the kept certificates still good?
        let now = options.now
        var reason: String? = nil
        if options.reissue || options.regenerateKeys { reason = "asked to re-issue" }
        else if oldState == nil { reason = "no certificates yet" }
        else if oldState!.specFingerprint != spec.fingerprint { reason = "the spec changed" }
        else if oldState!.seedFingerprint != seedFingerprint { reason = "the seed changed" }
        else if !refresh.generatedKeys.isEmpty { reason = "new keys" }
        else if now.timeIntervalSince1970 >= oldState!.reissueBy { reason = "validity windows moved" }
        else if now.timeIntervalSince1970 < oldState!.issuedAt - 300 { reason = "the clock went back" }
        else if oldState!.pkcs12Password != (options.pkcs12Encoder == nil ? oldState!.pkcs12Password : options.pkcs12Password) {
            reason = "the PKCS#12 password changed"
        } else if Set(oldState!.identities.map(\.name)) != Set(spec.names) { reason = "the entities changed" }

        let identities: [Identity]
        let state: StateFile
        if let reason {
            refresh.reissued = true
            refresh.reason = reason
            mark("check")
            (identities, state) = try issueAll(keys: keys, keyOrigins: keyOrigins, now: now)
            mark("issue")
            // Files are rewritten in place under the lock; without a state file a crash half-way means
            // "no certificates yet" to the next run, never a mix of old and new.
            unlink(stateURL.path)
            if options.writeIdentityFiles { try writer.write(identities, onlyStale: false) }
            mark("outputs")
            let json = try JSONEncoder().encode(state)
            try Storage.writeAtomically(Array(json), to: stateURL, mode: 0o600)
            mark("state")
        } else {
            refresh.reason = "kept certificates are fresh"
            state = oldState!
            identities = try assemble(state: state, keys: keys)
            if options.writeIdentityFiles { try writer.write(identities, onlyStale: true) }
        }
        return LabPKI(spec: spec, directory: dir, identities: identities, refresh: refresh,
                      password: state.pkcs12Password ?? options.pkcs12Password,
                      issuedAt: Date(timeIntervalSince1970: state.issuedAt), pkcs12Encoder: options.pkcs12Encoder)
    }

    var writer: IdentityWriter {
        IdentityWriter(directory: dir, pkcs12Encoder: options.pkcs12Encoder, pkcs12Password: options.pkcs12Password,
                       pkcs12Roles: options.pkcs12Roles)
    }

    func readKey(_ url: URL, name: String, type: KeyType) throws -> LabKey {
        if let m = Storage.mode(url), m & 0o077 != 0 {
            throw PKIError(.keyFileTooOpen,
                           "the private key is readable by others (mode \(String(m, radix: 8)))", file: url.path,
                           entity: name, fix: "run `chmod 600 \(url.path)`")
        }
        guard let bytes = try Storage.readFile(url) else {
            throw PKIError(.keyFileUnreadable, "the key file disappeared", file: url.path, entity: name)
        }
        guard let der = PEM.decode(String(decoding: bytes, as: UTF8.self), label: "PRIVATE KEY") else {
            throw PKIError(.keyFileCorrupt, "not a PKCS#8 PEM private key", file: url.path, entity: name,
                           fix: "delete it to generate a new key (its pins will change), or restore it from a backup")
        }
        do {
            return try LabKey.read(pkcs8: der, type: type)
        } catch let e as PKIError where e.code == .keyTypeChanged {
            throw PKIError(.keyTypeChanged, "the kept key is \(LabKey.sniffType(pkcs8: der)) but the spec says \(type.displayName)",
                           file: url.path, entity: name,
                           fix: "run `pinlab pki init --force` to replace keys (pins change), or restore the spec")
        } catch {
            let actual = LabKey.sniffType(pkcs8: der)
            if actual != "unreadable" && actual != type.displayName {
                throw PKIError(.keyTypeChanged, "the kept key is \(actual) but the spec says \(type.displayName)",
                               file: url.path, entity: name,
                               fix: "run `pinlab pki init --force` to replace keys (pins change), or restore the spec")
            }
            throw PKIError(.keyFileCorrupt, "the key cannot be read as \(type.displayName): \(error)", file: url.path,
                           entity: name, fix: "delete it to generate a new key (its pins will change)")
        }
    }

    // MARK: Issuance

    func distinguishedName(_ attrs: [SubjectAttribute]) throws -> DistinguishedName {
        var rdns: [RelativeDistinguishedName] = []
        for a in attrs {
            let attr: RelativeDistinguishedName.Attribute
            switch a.type {
            case "C": attr = try .init(type: .RDNAttributeType.countryName, printableString: a.value)
            case "CN": attr = .init(type: .RDNAttributeType.commonName, utf8String: a.value)
            case "O": attr = .init(type: .RDNAttributeType.organizationName, utf8String: a.value)
            case "OU": attr = .init(type: .RDNAttributeType.organizationalUnitName, utf8String: a.value)
            case "L": attr = .init(type: .RDNAttributeType.localityName, utf8String: a.value)
            case "ST": attr = .init(type: .RDNAttributeType.stateOrProvinceName, utf8String: a.value)
            default: attr = try .init(type: .RDNAttributeType.emailAddress, ia5String: a.value)
            }
            rdns.append(RelativeDistinguishedName(attr))
        }
        return DistinguishedName(rdns)
    }

    static func signatureAlgorithm(signer: KeyType, hash: SignatureHash?) -> Certificate.SignatureAlgorithm {
        switch signer {
        case .p256: return hash == .sha384 ? .ecdsaWithSHA384 : hash == .sha512 ? .ecdsaWithSHA512 : .ecdsaWithSHA256
        case .p384: return hash == .sha256 ? .ecdsaWithSHA256 : hash == .sha512 ? .ecdsaWithSHA512 : .ecdsaWithSHA384
        case .ed25519: return .ed25519
        default:
            switch hash {
            case .sha1: return .sha1WithRSAEncryption
            case .sha384: return .sha384WithRSAEncryption
            case .sha512: return .sha512WithRSAEncryption
            default: return .sha256WithRSAEncryption
            }
        }
    }

    static func der(_ value: some DERSerializable) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.serialize(value)
        return s.serializedBytes
    }

    func issueAll(keys: [String: LabKey], keyOrigins: [String: StateFile.Key], now: Date) throws -> ([Identity], StateFile) {
        var subjects: [String: DistinguishedName] = [:]
        var skis: [String: [UInt8]] = [:]
        var publicKeys: [String: Certificate.PublicKey] = [:]
        var reissueBy = now.timeIntervalSince1970 + 86400
        // Names and key identifiers first (an issuer's follow from the spec and its key alone), then every
        // certificate is built and signed concurrently.
        for e in spec.entities {
            let publicKey = keys[e.keyName]!.publicKey
            publicKeys[e.name] = publicKey
            let ownSKI = Array(Insecure.SHA1.hash(data: Array(publicKey.subjectPublicKeyInfoBytes)))
            skis[e.name] = e.twinOf.map { skis[$0]! } ?? ownSKI
            subjects[e.name] = try e.twinOf.map { subjects[$0]! } ?? distinguishedName(e.subject)
            for offset in [e.validity.notBefore.seconds, e.validity.notAfter.seconds] where offset > 0 {
                reissueBy = min(reissueBy, now.timeIntervalSince1970 + TimeInterval(offset) - 600)
            }
        }
        let slots = ResultSlots<StateFile.Entry>(count: spec.entities.count)
        let names = (subjects: subjects, skis: skis, publicKeys: publicKeys)
        DispatchQueue.concurrentPerform(iterations: spec.entities.count) { i in
            let (subjects, skis, publicKeys) = names
            slots.set(i) {
                let e = spec.entities[i]
                let publicKey = publicKeys[e.name]!
                let spkiDER = try Self.der(publicKey)
                let ski = skis[e.name]!
                let subject = subjects[e.name]!
                let issuerSpec = spec.entity(e.issuer)!
                let signer = keys[issuerSpec.keyName]!
                let issuerDN = e.isSelfSigned ? subject : subjects[e.issuer]!
                let aki = e.isSelfSigned ? ski : skis[e.issuer]!

                var serial = (0..<16).map { _ in UInt8.random(in: 0...255) }
                serial[0] = (serial[0] & 0x7f) | 0x40
                let notBefore = now.addingTimeInterval(TimeInterval(e.validity.notBefore.seconds))
                let notAfter = now.addingTimeInterval(TimeInterval(e.validity.notAfter.seconds))

                var ext = Certificate.Extensions()
                try ext.append(Certificate.Extension(
                    e.isCA ? BasicConstraints.isCertificateAuthority(maxPathLength: e.pathLength) : .notCertificateAuthority,
                    critical: true))
                let usage = e.isCA
                    ? KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true)
                    : KeyUsage(digitalSignature: true, keyEncipherment: e.keyType.isRSA)
                try ext.append(Certificate.Extension(usage, critical: true))
                if !e.usages.isEmpty {
                    let eku = try ExtendedKeyUsage(e.usages.map { u -> ExtendedKeyUsage.Usage in
                        switch u {
                        case .serverAuth: return .serverAuth
                        case .clientAuth: return .clientAuth
                        case .codeSigning: return .codeSigning
                        default: return .emailProtection
                        }
                    })
                    try ext.append(Certificate.Extension(eku, critical: false))
                }
                if !e.hosts.isEmpty {
                    let names = e.hosts.map { h -> GeneralName in
                        if let ip = parseIP(h) { return .ipAddress(ASN1OctetString(contentBytes: ip[...])) }
                        return .dnsName(h)
                    }
                    try ext.append(Certificate.Extension(SubjectAlternativeNames(names), critical: false))
                }
                if !e.permitted.isEmpty || !e.excluded.isEmpty {
                    func general(_ items: [NameConstraintItem]) -> [GeneralName] {
                        items.map {
                            switch $0 {
                            case .dns(let d): return .dnsName(d)
                            case .ip(let a, let m): return .ipAddress(ASN1OctetString(contentBytes: (a + m)[...]))
                            }
                        }
                    }
                    try ext.append(Certificate.Extension(
                        NameConstraints(permittedSubtrees: general(e.permitted), excludedSubtrees: general(e.excluded)),
                        critical: true))
                }
                try ext.append(Certificate.Extension(SubjectKeyIdentifier(keyIdentifier: ski[...]), critical: false))
                if !e.isSelfSigned {
                    try ext.append(Certificate.Extension(AuthorityKeyIdentifier(keyIdentifier: aki[...]), critical: false))
                }

                let cert: Certificate
                do {
                    cert = try Certificate(
                        version: .v3, serialNumber: .init(bytes: serial), publicKey: publicKey,
                        notValidBefore: notBefore, notValidAfter: notAfter, issuer: issuerDN, subject: subject,
                        signatureAlgorithm: Self.signatureAlgorithm(signer: signer.type, hash: e.signature),
                        extensions: ext, issuerPrivateKey: signer.certificatePrivateKey)
                } catch {
                    throw PKIError(.issuanceFailed, "cannot issue the certificate: \(error)", file: spec.file,
                                   line: e.line, entity: e.name)
                }
                let certDER = try Self.der(cert)
                return StateFile.Entry(
                    name: e.name, role: e.role.rawValue, issuerName: e.issuer, keyName: e.keyName,
                    keyType: e.keyType.rawValue, der: Data(certDER).base64EncodedString(),
                    subject: cert.subject.description, issuer: cert.issuer.description, serial: serial.hexString,
                    notBefore: notBefore.timeIntervalSince1970.rounded(.down),
                    notAfter: notAfter.timeIntervalSince1970.rounded(.down), hosts: e.hosts,
                    spki: Array(SHA256.hash(data: spkiDER)).hexString,
                    cert: Array(SHA256.hash(data: certDER)).hexString,
                    raw: Array(SHA256.hash(data: Array(publicKey.subjectPublicKeyInfoBytes))).hexString)
            }
        }
        let entries = try slots.values()
        let state = StateFile(
            specFingerprint: spec.fingerprint, seedFingerprint: seedFingerprint,
            issuedAt: now.timeIntervalSince1970, reissueBy: reissueBy,
            pkcs12Password: options.pkcs12Encoder == nil ? nil : options.pkcs12Password,
            keys: keyOrigins, identities: entries)
        return (try assemble(state: state, keys: keys), state)
    }

    /// Identities from a state file and the kept keys.
    func assemble(state: StateFile, keys: [String: LabKey]) throws -> [Identity] {
        var byName: [String: StateFile.Entry] = [:]
        var ders: [String: [UInt8]] = [:]
        for e in state.identities {
            byName[e.name] = e
            guard let d = Data(base64Encoded: e.der) else {
                throw PKIError(.keyFileCorrupt, "the state file is damaged", file: stateURL.path,
                               fix: "delete it; certificates will be issued again")
            }
            ders[e.name] = Array(d)
        }
        return try state.identities.map { e in
            guard let key = keys[e.keyName] else {
                throw PKIError(.keyFileCorrupt, "the state names a key \(e.keyName) the spec does not", file: stateURL.path,
                               fix: "delete it; certificates will be issued again")
            }
            var chain: [[UInt8]] = []
            var top = e
            var guardCount = 0
            while top.issuerName != top.name, let up = byName[top.issuerName], guardCount < 16 {
                top = up
                guardCount += 1
                if top.issuerName != top.name { chain.append(ders[top.name]!) }
            }
            return Identity(
                name: e.name, role: Role(rawValue: e.role), issuerName: e.issuerName, keyName: e.keyName,
                keyType: KeyType(rawValue: e.keyType), certificateDER: ders[e.name]!, privateKeyPKCS8DER: key.pkcs8DER,
                issuerChainDER: chain, rootDER: ders[top.name]!, rootName: top.name, subject: e.subject,
                issuer: e.issuer, serialHex: e.serial, notBefore: Date(timeIntervalSince1970: e.notBefore),
                notAfter: Date(timeIntervalSince1970: e.notAfter), hosts: e.hosts,
                pins: Pins(spkiSHA256: hexBytes(e.spki), certificateSHA256: hexBytes(e.cert), rawKeySHA256: hexBytes(e.raw)))
        }
    }

    // MARK: Outputs

}

/// Writes the files of identities: PEM, DER, chains, root, key, pins and, for some roles, PKCS#12.
struct IdentityWriter: Sendable {
    let directory: URL
    let pkcs12Encoder: (any PKCS12Encoder)?
    let pkcs12Password: String
    let pkcs12Roles: Set<Role>

    func files(_ name: String) -> IdentityFiles { IdentityFiles(directory: directory, name: name) }

    /// Whether the files of `id` already hold its current certificate (and `.p12` when its role wants one).
    func isCurrent(_ id: Identity) -> Bool {
        guard let der = try? Storage.readFile(files(id.name).certificateDER), der == id.certificateDER else { return false }
        return pkcs12Encoder == nil || !pkcs12Roles.contains(id.role) || Storage.exists(files(id.name).pkcs12)
    }

    /// Writes every identity's files (`onlyStale`: only those not current); identities are spread over the cores,
    /// each has its own folder.
    func write(_ identities: [Identity], onlyStale: Bool) throws {
        try Storage.makeDirectory(directory.appendingPathComponent("certs", isDirectory: true), mode: 0o755)
        let errors = ErrorBox()
        DispatchQueue.concurrentPerform(iterations: identities.count) { i in
            do {
                if onlyStale && isCurrent(identities[i]) { return }
                try write(identities[i])
            } catch { errors.record(error) }
        }
        if let e = errors.first { throw e }
    }

    func write(_ id: Identity) throws {
        let f = files(id.name)
        try Storage.makeDirectory(f.folder, mode: 0o755)
        let certPEM = PEM.encode(id.certificateDER, label: "CERTIFICATE")
        var chainPEM = certPEM
        for der in id.issuerChainDER { chainPEM += PEM.encode(der, label: "CERTIFICATE") }
        let rootPEM = id.isSelfSigned ? certPEM : PEM.encode(id.rootDER, label: "CERTIFICATE")
        try Storage.write(certPEM, to: f.certificatePEM)
        try Storage.write(chainPEM, to: f.chainPEM)
        try Storage.write(id.isSelfSigned ? chainPEM : chainPEM + rootPEM, to: f.fullChainPEM)
        try Storage.write(rootPEM, to: f.rootPEM)
        try Storage.write(PEM.encode(id.privateKeyPKCS8DER, label: "PRIVATE KEY"), to: f.keyPEM, mode: 0o600)
        try Storage.write(PinFormat.json([id]), to: f.pinsJSON)
        if let enc = pkcs12Encoder, pkcs12Roles.contains(id.role) {
            try Storage.write(try pkcs12(id, enc), to: f.pkcs12, mode: 0o600)
        } else if Storage.exists(f.pkcs12) {
            unlink(f.pkcs12.path)  // stale: made on demand again by LabPKI.pkcs12File(for:)
        }
        // Last: cert.cer is what `isCurrent` compares.
        try Storage.write(id.certificateDER, to: f.certificateDER)
    }

    func pkcs12(_ id: Identity, _ enc: any PKCS12Encoder) throws -> [UInt8] {
        do {
            return try enc.encode(privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateDER: id.certificateDER,
                                  chainDER: id.issuerChainDER, friendlyName: id.name, password: pkcs12Password)
        } catch {
            throw PKIError(.pkcs12Failed, "cannot build the PKCS#12 file: \(error)", file: files(id.name).pkcs12.path,
                           entity: id.name)
        }
    }
}

/// Results of concurrent work by index; `values()` rethrows the first error in index order.
final class ResultSlots<T>: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ body: () throws -> T) {
        let r = Result { try body() }
        lock.lock()
        slots[i] = r
        lock.unlock()
    }
    func values() throws -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return try slots.map { try $0!.get() }
    }
}

/// The first error of concurrent work.
final class ErrorBox: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var error: (any Error)?
    func record(_ e: any Error) {
        lock.lock()
        if error == nil { error = e }
        lock.unlock()
    }
    var first: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return error
    }
}

func hexBytes(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count / 2)
    var hi: UInt8? = nil
    for c in s.utf8 {
        let v: UInt8
        switch c {
        case 48...57: v = c - 48
        case 97...102: v = c - 87
        case 65...70: v = c - 55
        default: continue
        }
        if let h = hi { out.append(h << 4 | v); hi = nil } else { hi = v }
    }
    return out
}
