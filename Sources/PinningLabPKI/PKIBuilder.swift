internal import Crypto
// Opening a PKI folder: the state file, keys kept or generated, certificates issued afresh when stale.
internal import Foundation
import PinningLabBase
internal import SwiftASN1
internal import X509
internal import _CryptoExtras

// MARK: - State file

struct StateFile: Codable {
    struct Key: Codable {
        var type: String
        var origin: String
    }
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
        /// Base64 of the TLS-encoded SCT list over the certificate (`tlsSCTs:`), for the TLS extension and OCSP.
        var tlsSCTList: String? = nil
        /// Base64 DER of the precertificate the embedded SCTs were issued for (`scts:`).
        var precertificate: String? = nil
    }
    var version: Int = 1
    var specFingerprint: String
    var seedFingerprint: String?
    var issuedAt: Double
    var reissueBy: Double
    var pkcs12Password: String?
    var keys: [String: Key]
    var identities: [Entry]
    /// The log ID (hex) of each CT log whose SCTs the certificates carry: a replaced log key re-issues them.
    var ctLogIDs: [String: String]? = nil
    /// The spec file of one's own the folder was made from (``PKIOptions/specFile``), nil for the built-in spec
    /// (or one made in code): an opening without it must not replace the folder's PKI.
    var spec: PKISpecRecord? = nil
}

// MARK: - Builder

struct Builder {
    let spec: PKISpec
    let options: PKIOptions
    var dir: URL { options.directory }
    var keysDir: URL { dir.appendingPathComponent("keys", isDirectory: true) }
    var stateURL: URL { dir.appendingPathComponent("state.json") }

    func keyFile(_ name: String) -> URL { options.borrowedKeys[name] ?? keysDir.appendingPathComponent("\(name).pem") }

    /// What the state file records of the spec: the file of one's own it came from, else what an earlier opening
    /// recorded for the same text (an opening by the library, without the file's path, keeps it).
    func specRecord(keeping old: PKISpecRecord?) -> PKISpecRecord? {
        if let path = options.specFile {
            // `builtin:pki/lab.yaml`: the built-in spec alone, asked for by name; nothing to record.
            if path.hasPrefix("builtin:") && !path.contains("+") { return nil }
            return PKISpecRecord(path: path, sha256: spec.fingerprint)
        }
        // The built-in spec with a part of its own (`builtin:…`), opened again by a later pinlab with other text.
        if let old, isBuiltInWithPart(old) { return PKISpecRecord(path: old.path, sha256: spec.fingerprint) }
        return old?.sha256 == spec.fingerprint ? old : nil
    }

    /// Whether `record` names the built-in spec with a part (`builtin:pki/lab.yaml+pki/post-quantum.yaml`) and this
    /// opening's spec is that spec (`… + pki/post-quantum.yaml`), whatever its text (a later pinlab's).
    func isBuiltInWithPart(_ record: PKISpecRecord) -> Bool {
        guard record.path.hasPrefix("builtin:"), let part = record.path.split(separator: "+").last else { return false }
        return spec.file.hasSuffix(" + " + part)
    }

    /// Refuses to replace a PKI made from a spec of one's own with another spec the caller did not name (the
    /// built-in one, when `pinlab` runs without --spec): its identities, keys and pins would be gone without a word.
    func refuseSpecReplacement(_ old: StateFile?) throws {
        guard let old, let record = old.spec, options.specFile == nil, !options.regenerateKeys,
            record.sha256 != spec.fingerprint, !isBuiltInWithPart(record)
        else { return }
        let state: String
        if record.path.hasPrefix("builtin:") {
            // `pinlab pki init --post-quantum`: the built-in spec with a part of its own, not a file.
            let pq = old.identities.map(\.name).filter { !spec.names.contains($0) }
            throw PKIError(
                .specReplaced,
                "this PKI folder was made from the built-in lab PKI with its post-quantum part (\(record.path)); "
                    + "opening it with the built-in spec alone would drop \(pq.count) identities "
                    + "(\(pq.prefix(4).joined(separator: ", "))\(pq.count > 4 ? ", …" : ""))",
                file: dir.path,
                fix: "open it with that spec (pinlab commands do; in code: BuiltInLab.spec(postQuantum: true)), or run "
                    + "`pinlab pki init --dir \(dir.path) --force` to replace it with the built-in lab PKI (every key changes)"
            )
        } else if let bytes = try? Storage.readFile(URL(fileURLWithPath: record.path)) {
            state =
                Array(SHA256.hash(data: bytes)).hexString == record.sha256
                ? "" : " (that file has changed since: its SHA-256 is no longer \(record.sha256.prefix(16))…)"
        } else {
            state = " (that file is gone)"
        }
        let names = old.identities.map(\.name)
        let shown = names.prefix(4).joined(separator: ", ") + (names.count > 4 ? ", …" : "")
        throw PKIError(
            .specReplaced,
            "this PKI folder was made from the spec \(record.path)\(state); opening it with another spec (the built-in "
                + "lab PKI when no --spec is given) would replace its \(names.count) identities (\(shown)) and their pins",
            file: dir.path,
            fix: "pass --spec \(record.path) (or the spec you mean: `pinlab pki init --dir \(dir.path) --spec FILE` "
                + "re-issues it, and later commands use that file), or run `pinlab pki init --dir \(dir.path) --force` "
                + "to replace it with the built-in lab PKI (every key changes)")
    }

    var seedFingerprint: String? {
        options.seed.map { Array(SHA256.hash(data: Data("PinningLab seed|\($0)".utf8))).hexString }
    }

    func run() throws -> LabPKI {
        let trace = PinlabEnvironment.value("TRACE") != nil
        var t0 = DispatchTime.now().uptimeNanoseconds
        func mark(_ what: String) {
            guard trace else { return }
            let t = DispatchTime.now().uptimeNanoseconds
            FileHandle.standardError.write(Data("pki: \(what) \(Double(t - t0) / 1e6) ms\n".utf8))
            t0 = t
        }
        let oldState: StateFile? = try? Storage.readFile(stateURL).flatMap {
            try JSONDecoder().decode(StateFile.self, from: Data($0))
        }
        // Before anything in the folder is touched.
        try refuseSpecReplacement(oldState)
        try Storage.makeOwnDirectory(keysDir, mode: 0o700, what: "the keys folder")
        // Half-made files of a process that died mid-write (a key among them) go before anything is read.
        var leftovers =
            Storage.removeStaleTemporaryFiles(in: dir)
            + Storage.removeStaleTemporaryFiles(in: keysDir).map { "keys/" + $0 }
            + Storage.removeStaleTemporaryFiles(in: dir.appendingPathComponent("ct", isDirectory: true)).map {
                "ct/" + $0
            }
        if options.writeIdentityFiles { leftovers += writer.removeLeftovers(names: spec.names) }
        var refresh = PKIRefresh()

        // Keys: every key name used by an entity.
        var keyTypes: [String: KeyType] = [:]
        for e in spec.entities { keyTypes[e.keyName] = e.keyType }
        // CT log keys are P-256 and, not being a leaf's or client's, never derived from a seed (seedableKeys).
        for l in spec.ctLogs { keyTypes[l.name] = .p256 }
        let seedable = Self.seedableKeys(spec)
        var keys: [String: LabKey] = [:]
        var keyOrigins: [String: StateFile.Key] = [:]
        let wantedOrigin = seedFingerprint.map { "seed:" + $0.prefix(16) }
        // Keys are read or made concurrently (RSA generation and file creation dominate); results keep name order.
        let work = keyTypes.sorted(by: { $0.key < $1.key })
        let keySlots = ResultSlots<(LabKey, StateFile.Key, Bool)>(count: work.count)
        let keyNotes = Locked<[String]>([])
        let replacedKeys = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: work.count) { i in
            let (name, type) = work[i]
            keySlots.set(i) {
                let url = keyFile(name)
                let derivedOrigin = type.isDeterministic && seedable.contains(name) ? wantedOrigin : nil
                let previous = oldState?.keys[name]
                // Another PKI's key is read where it is, never made, replaced or copied.
                if options.borrowedKeys[name] != nil {
                    guard Storage.exists(url) else {
                        throw PKIError(
                            .keyFileUnreadable, "the key file is gone", file: url.path, entity: name,
                            fix: "run `pinlab pki init` on its PKI folder")
                    }
                    return (
                        try readKey(url, name: name, type: type),
                        StateFile.Key(type: type.rawValue, origin: "borrowed"), false
                    )
                }
                // A seeded key whose seed changed is re-derived; everything else kept is read.
                let present = Storage.exists(url)
                if !options.regenerateKeys, !options.rekey.contains(name), present,
                    derivedOrigin == nil || previous?.origin == derivedOrigin
                {
                    return (
                        try readKey(url, name: name, type: type),
                        previous ?? StateFile.Key(type: type.rawValue, origin: "random"), false
                    )
                }
                let key: LabKey
                let origin: StateFile.Key
                if let seed = options.seed, derivedOrigin != nil {
                    key = try LabKey.derive(type, seed: seed, name: name)
                    origin = StateFile.Key(type: type.rawValue, origin: derivedOrigin!)
                } else {
                    if type.isRSA, let p = options.progress { p("generating \(type.displayName) key \(name)…") }
                    key = try LabKey.generate(type)
                    origin = StateFile.Key(type: type.rawValue, origin: "random")
                }
                // A key the state knows but whose file is gone: a random one cannot come back (its pins change,
                // which `pki init` says); a seeded one is derived again, the same key.
                if !present, let previous, !options.regenerateKeys, !options.rekey.contains(name) {
                    let rederived = previous.origin == origin.origin && origin.origin != "random"
                    let what =
                        rederived
                        ? "derived again from the seed (same pins)" : "replaced by a new random key (its pins changed)"
                    keyNotes.withLock { $0.append("keys/\(name).pem was missing: \(what)") }
                    if !rederived { replacedKeys.withLock { $0.append(name) } }
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
        refresh.replacedMissingKeys = replacedKeys.withLock { $0 }.sorted()
        refresh.repaired =
            keyNotes.withLock { $0 }.sorted()
            + leftovers.map { "\($0): removed (a temporary file of a process that died while writing)" }

        mark("keys")
        let ctLogs = try spec.ctLogs.map { try CTLogSigner(spec: $0, key: keys[$0.name]!) }
        let ctLogIDs = Dictionary(uniqueKeysWithValues: ctLogs.map { ($0.log.name, $0.log.logID.hexString) })
        // Are the kept certificates still good?
        let now = options.now
        var reason: String? = nil
        if options.reissue || options.regenerateKeys {
            reason = "asked to re-issue"
        } else if oldState == nil {
            reason = "no certificates yet"
        } else if oldState!.specFingerprint != spec.fingerprint {
            reason = "the spec changed"
        } else if oldState!.seedFingerprint != seedFingerprint {
            reason = "the seed changed"
        } else if !refresh.generatedKeys.isEmpty {
            reason = "new keys"
        } else if now.timeIntervalSince1970 >= oldState!.reissueBy {
            reason = "validity windows moved"
        } else if now.timeIntervalSince1970 < oldState!.issuedAt - 300 {
            reason = "the clock went back"
        } else if oldState!.pkcs12Password
            != (options.pkcs12Encoder == nil ? oldState!.pkcs12Password : options.pkcs12Password)
        {
            reason = "the PKCS#12 password changed"
        } else if Set(oldState!.identities.map(\.name)) != Set(spec.names) {
            reason = "the entities changed"
        } else if let stranger = try keyNotMatchingState(oldState!, keys: keys) {
            reason = "the key \(stranger) is not the key of its certificates"
        } else if (oldState!.ctLogIDs ?? [:]) != ctLogIDs {
            reason = "the CT log keys changed"
        }

        let identities: [Identity]
        var state: StateFile
        if let reason {
            refresh.reissued = true
            refresh.reason = reason
            mark("check")
            (identities, state) = try issueAll(keys: keys, keyOrigins: keyOrigins, ctLogs: ctLogs, now: now)
            state.spec = specRecord(keeping: oldState?.spec)
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
            mark("check")
            state = oldState!
            // The same text read from another file (a spec moved, or named for the first time): the record follows.
            if let record = specRecord(keeping: state.spec), record != state.spec {
                state.spec = record
                try Storage.writeAtomically(Array(try JSONEncoder().encode(state)), to: stateURL, mode: 0o600)
            }
            identities = try assemble(state: state, keys: keys)
            if options.writeIdentityFiles {
                let repaired = try writer.write(identities, onlyStale: true)
                refresh.repaired += repaired.map { "certs/\($0): rewritten" }
                mark("files checked")
            }
        }
        if !ctLogs.isEmpty {
            try writeCTLogLists(ctLogs.map(\.log), since: Date(timeIntervalSince1970: state.issuedAt))
            mark("ct log lists")
        }
        return LabPKI(
            spec: spec, directory: dir, identities: identities, refresh: refresh,
            ctLogs: ctLogs.map(\.log),
            keyOrigins: state.keys.mapValues(\.origin),
            password: state.pkcs12Password ?? options.pkcs12Password,
            issuedAt: Date(timeIntervalSince1970: state.issuedAt), pkcs12Encoder: options.pkcs12Encoder)
    }

    /// The keys a seed may derive: those every entity using them is a leaf or client certificate (not a CA).
    /// A CA key derived from a seed would let whoever knows the seed mint certificates a device trusting that CA
    /// accepts (for lab-root: any localhost or .test name; for proxy-root: every site), so every key a root or
    /// intermediate uses is random on every machine, whatever the seed.
    static func seedableKeys(_ spec: PKISpec) -> Set<String> {
        var seedable: [String: Bool] = [:]
        for e in spec.entities {
            let endEntity = !e.isCA && (e.role == .leaf || e.role == .client)
            seedable[e.keyName] = (seedable[e.keyName] ?? true) && endEntity
        }
        return Set(seedable.filter(\.value).keys)
    }

    var writer: IdentityWriter {
        IdentityWriter(
            directory: dir, pkcs12Encoder: options.pkcs12Encoder, pkcs12Password: options.pkcs12Password,
            pkcs12Roles: options.pkcs12Roles)
    }

    func readKey(_ url: URL, name: String, type: KeyType) throws -> LabKey {
        // One stat for both checks (it follows a link, as reading the key does).
        var st = stat()
        if stat(url.path, &st) == 0 {
            if st.st_mode & S_IFMT != S_IFREG {
                let what = st.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
                throw PKIError(
                    .keyFileUnreadable, "\(what) where the private key file belongs", file: url.path,
                    entity: name,
                    fix: "the key must be a file (PKCS#8 PEM, mode 0600): move \(url.path) away "
                        + "and put the key file there, or let `pinlab pki init` make a new key (pins on it change)")
            }
            let m = st.st_mode & 0o7777
            if m & 0o077 != 0 {
                throw PKIError(
                    .keyFileTooOpen,
                    "the private key is readable by others (mode \(String(m, radix: 8)))", file: url.path,
                    entity: name, fix: "run `chmod 600 \(url.path)`")
            }
            try Storage.requireOwnPrivate(st, url, what: "the private key")
        }
        guard let bytes = try Storage.readFile(url) else {
            throw PKIError(.keyFileUnreadable, "the key file disappeared", file: url.path, entity: name)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let der = PEM.decode(text, label: "PRIVATE KEY") else {
            if let (label, form) = [("EC PRIVATE KEY", "SEC1"), ("RSA PRIVATE KEY", "PKCS#1")].first(where: {
                text.contains("-----BEGIN \($0.0)-----")
            }) {
                throw PKIError(
                    .keyFileCorrupt, "a \(form) key (BEGIN \(label)); the lab keeps PKCS#8 keys (BEGIN PRIVATE KEY)",
                    file: url.path, entity: name,
                    fix: "convert it (the key and its pins stay the same): "
                        + "`openssl pkcs8 -topk8 -nocrypt -in \(url.path) -out \(url.path).p8 && "
                        + "chmod 600 \(url.path).p8 && mv \(url.path).p8 \(url.path)`")
            }
            throw PKIError(
                .keyFileCorrupt, "not a PKCS#8 PEM private key (damaged or truncated)", file: url.path,
                entity: name, fix: Self.damagedKeyFix(url))
        }
        do {
            return try LabKey.read(pkcs8: der, type: type)
        } catch let e as PKIError where e.code == .keyTypeChanged {
            throw PKIError(
                .keyTypeChanged,
                "the kept key is \(LabKey.sniffType(pkcs8: der)) but the spec says \(type.displayName)",
                file: url.path, entity: name,
                fix: "run `pinlab pki init --force` to replace keys (pins change), or restore the spec")
        } catch {
            let actual = LabKey.sniffType(pkcs8: der)
            if actual != "unreadable" && actual != type.displayName {
                throw PKIError(
                    .keyTypeChanged, "the kept key is \(actual) but the spec says \(type.displayName)",
                    file: url.path, entity: name,
                    fix: "run `pinlab pki init --force` to replace keys (pins change), or restore the spec")
            }
            throw PKIError(
                .keyFileCorrupt, "the key cannot be read as \(type.displayName): \(error)", file: url.path,
                entity: name, fix: Self.damagedKeyFix(url))
        }
    }

    /// The first kept key whose public key is not the one the state's certificates carry (a key file replaced by
    /// another valid key), or nil. One SPKI serialization and hash per key; no certificate is decoded.
    func keyNotMatchingState(_ state: StateFile, keys: [String: LabKey]) throws -> String? {
        var checked: Set<String> = []
        for e in state.identities where !checked.contains(e.keyName) {
            checked.insert(e.keyName)
            guard let key = keys[e.keyName] else { continue }
            if Array(SHA256.hash(data: try key.spkiDER)).hexString != e.spki { return e.keyName }
        }
        return nil
    }

    /// The fix for a kept key that cannot be read: it is never replaced silently, since a new key changes every pin
    /// on it.
    static func damagedKeyFix(_ url: URL) -> String {
        "restore it from a backup; or run `pinlab pki init --force` to replace every key, or delete it to replace "
            + "this one (pins on it change)"
    }

    /// Identities from a state file and the kept keys.
    func assemble(state: StateFile, keys: [String: LabKey]) throws -> [Identity] {
        var byName: [String: StateFile.Entry] = [:]
        var ders: [String: [UInt8]] = [:]
        for e in state.identities {
            byName[e.name] = e
            guard let d = Data(base64Encoded: e.der) else {
                throw PKIError(
                    .keyFileCorrupt, "the state file is damaged", file: stateURL.path,
                    fix: "delete it; certificates will be issued again")
            }
            ders[e.name] = Array(d)
        }
        return try state.identities.map { e in
            guard let key = keys[e.keyName] else {
                throw PKIError(
                    .keyFileCorrupt, "the state names a key \(e.keyName) the spec does not", file: stateURL.path,
                    fix: "delete it; certificates will be issued again")
            }
            let above = issuerWalk(from: e.name) { byName[$0]?.issuerName }
            let top = above.last.flatMap { byName[$0] } ?? e
            let chain = above.dropLast().map { ders[$0]! }
            var identity = Identity(
                name: e.name, role: Role(rawValue: e.role), issuerName: e.issuerName, keyName: e.keyName,
                keyType: KeyType(rawValue: e.keyType), certificateDER: ders[e.name]!, privateKeyPKCS8DER: key.pkcs8DER,
                issuerChainDER: chain, rootDER: ders[top.name]!, rootName: top.name, subject: e.subject,
                issuer: e.issuer, serialHex: e.serial, notBefore: Date(timeIntervalSince1970: e.notBefore),
                notAfter: Date(timeIntervalSince1970: e.notAfter), hosts: e.hosts,
                pins: Pins(
                    spkiSHA256: hexBytes(e.spki), certificateSHA256: hexBytes(e.cert), rawKeySHA256: hexBytes(e.raw)))
            identity.signedCertificateTimestampList = e.tlsSCTList.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
            identity.precertificateDER = e.precertificate.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
            return identity
        }
    }
}
