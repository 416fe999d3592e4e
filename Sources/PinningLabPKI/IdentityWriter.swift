// The files a PKI folder holds for each identity.
internal import Foundation
import PinningLabBase

/// Writes the files of identities: PEM, DER, chains, root, key, pins and, for some roles, PKCS#12.
struct IdentityWriter: Sendable {
    let directory: URL
    let pkcs12Encoder: (any PKCS12Encoder)?
    let pkcs12Password: String
    let pkcs12Roles: Set<Role>

    func files(_ name: String) -> IdentityFiles { IdentityFiles(directory: directory, name: name) }

    /// One file of an identity with the exact bytes it must hold.
    struct Expected {
        var url: URL
        var bytes: [UInt8]
        var mode: mode_t
    }

    /// Every file of `id` but the `.p12` (whose salt is random) with its exact contents, `cert.cer` last: it is
    /// written last, so a crash half-way leaves a folder that the next check finds damaged.
    func expected(_ id: Identity) -> [Expected] {
        let f = files(id.name)
        let certPEM = PEM.encode(id.certificateDER, label: "CERTIFICATE")
        var chainPEM = certPEM
        for der in id.issuerChainDER { chainPEM += PEM.encode(der, label: "CERTIFICATE") }
        let rootPEM = id.isSelfSigned ? certPEM : PEM.encode(id.rootDER, label: "CERTIFICATE")
        return [
            Expected(url: f.certificatePEM, bytes: Array(certPEM.utf8), mode: 0o644),
            Expected(url: f.chainPEM, bytes: Array(chainPEM.utf8), mode: 0o644),
            Expected(
                url: f.fullChainPEM, bytes: Array((id.isSelfSigned ? chainPEM : chainPEM + rootPEM).utf8), mode: 0o644),
            Expected(url: f.rootPEM, bytes: Array(rootPEM.utf8), mode: 0o644),
            Expected(
                url: f.keyPEM, bytes: Array(PEM.encode(id.privateKeyPKCS8DER, label: "PRIVATE KEY").utf8), mode: 0o600),
            Expected(url: f.pinsJSON, bytes: Array(PinFormat.json([id]).utf8), mode: 0o644),
            Expected(url: f.certificateDER, bytes: id.certificateDER, mode: 0o644),
        ]
    }

    /// What is wrong with the files of `id`, one line per file (`chain.pem missing`, `cert.pem damaged`); empty
    /// when every file holds exactly what the state says. One read and compare per file (no certificate is
    /// decoded); the `.p12`, whose bytes are not reproducible, must be one whole DER structure.
    func problems(_ id: Identity) -> [String] {
        var out: [String] = []
        for e in expected(id) {
            let bytes: [UInt8]?
            do { bytes = try Storage.readFile(e.url) } catch {
                out.append("\(e.url.lastPathComponent) unreadable")
                continue
            }
            if let bytes {
                if bytes != e.bytes { out.append("\(e.url.lastPathComponent) damaged") }
            } else {
                out.append("\(e.url.lastPathComponent) missing")
                continue
            }
            if e.mode == 0o600, let m = Storage.mode(e.url), m & 0o077 != 0 {
                out.append("\(e.url.lastPathComponent) readable by others")
            }
        }
        if pkcs12Encoder != nil && pkcs12Roles.contains(id.role) && !id.keyType.isMLDSA {
            let p12 = files(id.name).pkcs12
            if !Storage.exists(p12) {
                out.append("\(p12.lastPathComponent) missing")
            } else if !Self.isWholeDER(p12) {
                out.append("\(p12.lastPathComponent) damaged")
            }
        }
        return out
    }

    /// Whether the files of `id` hold exactly its current certificate, chain, key and pins (and `.p12` when its
    /// role wants one).
    func isCurrent(_ id: Identity) -> Bool { problems(id).isEmpty }

    /// Whether `url` holds one DER SEQUENCE whose length is the file's: a truncated or overwritten `.p12` is not.
    static func isWholeDER(_ url: URL) -> Bool {
        guard let b = try? Storage.readFile(url), b.count >= 2, b[0] == 0x30 else { return false }
        let first = Int(b[1])
        if first < 0x80 { return b.count == 2 + first }
        let n = first & 0x7F
        guard n >= 1, n <= 4, b.count >= 2 + n else { return false }
        let length = b[2..<(2 + n)].reduce(0) { $0 << 8 | Int($1) }
        return b.count == 2 + n + length
    }

    /// Writes every identity's files (`onlyStale`: only those not current, after a check of each file); identities
    /// are spread over the cores, each has its own folder. Returns what was repaired: `NAME: chain.pem missing, …`.
    @discardableResult
    func write(_ identities: [Identity], onlyStale: Bool) throws -> [String] {
        try Storage.makeDirectory(directory.appendingPathComponent("certs", isDirectory: true), mode: 0o755)
        let errors = ErrorBox()
        let repaired = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: identities.count) { i in
            do {
                // A folder never written (a PKI that library use or `pinlab demo` made) is written, not "repaired".
                if onlyStale && Storage.exists(files(identities[i].name).folder) {
                    let problems = problems(identities[i])
                    if problems.isEmpty { return }
                    repaired.withLock { $0.append("\(identities[i].name): \(problems.joined(separator: ", "))") }
                }
                try write(identities[i])
            } catch { errors.record(error) }
        }
        if let e = errors.first { throw e }
        return repaired.withLock { $0 }.sorted()
    }

    /// Removes what a process that died mid-write left in the identities' folders (``Storage/removeStaleTemporaryFiles(in:)``):
    /// `certs/NAME/.tmp-…` of a `.p12`. Returns them as `certs/NAME/FILE`.
    func removeLeftovers(names: [String]) -> [String] {
        let removed = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: names.count) { i in
            let name = names[i]
            let gone = Storage.removeStaleTemporaryFiles(in: files(name).folder)
            if !gone.isEmpty { removed.withLock { $0 += gone.map { "certs/\(name)/\($0)" } } }
        }
        return removed.withLock { $0 }.sorted()
    }

    func write(_ id: Identity) throws {
        let f = files(id.name)
        try Storage.makeDirectory(f.folder, mode: 0o755)
        let all = expected(id)
        // Last: cert.cer is what the check compares first.
        for e in all.dropLast() { try rewrite(e) }
        // No .p12 of an ML-DSA identity: the PKCS#12 encoder (OpenSSL 3.0 here) cannot read the key; the PEM files are
        // written, and LabPKI.pkcs12File(for:) says why there is none.
        if let enc = pkcs12Encoder, pkcs12Roles.contains(id.role), !id.keyType.isMLDSA {
            try Storage.write(try pkcs12(id, enc), to: f.pkcs12, mode: 0o600)
        } else if Storage.exists(f.pkcs12) {
            unlink(f.pkcs12.path)  // stale: made on demand again by LabPKI.pkcs12File(for:)
        }
        try rewrite(all[all.count - 1])
    }

    /// Writes one file in place; a file that is not a regular file (a folder or a link someone put there) is
    /// removed first, and a key file readable by others gets its mode back.
    private func rewrite(_ e: Expected) throws {
        var st = stat()
        if lstat(e.url.path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG {
            try? FileManager.default.removeItem(at: e.url)
        }
        try Storage.write(e.bytes, to: e.url, mode: e.mode)
        if e.mode == 0o600, let m = Storage.mode(e.url), m & 0o077 != 0 { chmod(e.url.path, e.mode) }
    }

    func pkcs12(_ id: Identity, _ enc: any PKCS12Encoder) throws -> [UInt8] {
        if id.keyType.isMLDSA {
            throw PKIError(
                .pkcs12Failed,
                "no PKCS#12 file of a \(id.keyType.displayName) identity: the encoder's "
                    + "library cannot read ML-DSA keys (OpenSSL 3.5 or later can)", file: files(id.name).pkcs12.path,
                entity: id.name, fix: "use its key.pem and chain.pem")
        }
        do {
            return try enc.encode(
                privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateDER: id.certificateDER,
                chainDER: id.issuerChainDER, friendlyName: id.name, password: pkcs12Password)
        } catch {
            throw PKIError(
                .pkcs12Failed, "cannot build the PKCS#12 file: \(error)", file: files(id.name).pkcs12.path,
                entity: id.name)
        }
    }
}
