import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// Files and values shared by the cells of one run: trust stores per trust profile, client certificate files.
///
/// The folder may be shared by several runs and PKIs (`TestingLab.work`, a caller's `workDirectory`), and a file is
/// trusted once written: so each file's name carries a short hash of what it holds (`trust-lab-root-1a2b….pem`), and
/// different contents — another PKI, another seed, re-issued certificates — never reuse a stale file.
struct CellFiles: Sendable {
    let pki: LabPKI
    let directory: URL
    /// Client credentials per identity and certificate, made once per run: making the PKCS#12 file takes the PKI
    /// folder's lock, which no mutual-TLS cell should wait for again.
    private let credentialMemo = CredentialMemo()
    /// The trust store file and roots per trust profile, made once per run: every cell of the run asks for one.
    private let trustFiles = Locked<[TrustProfile: (path: String?, roots: [[UInt8]])]>([:])
    /// The run's revocation responders (`server.responder:`); nil where the files serve none (a batch document).
    let responders: CellResponders?
    /// Whether the trust store and client credential files are written. A run whose client reads certificates and
    /// keys only as bytes (the built-in reference clients) turns this off: its targets then name no file
    /// (`trustFile`, `certificateFile`, `keyFile`, `pkcs12File` are nil), and no file is written that no client reads.
    var writesFiles = true

    init(pki: LabPKI, directory: URL, servesResponders: Bool = true) throws {
        self.pki = pki
        self.directory = directory
        responders = servesResponders ? CellResponders() : nil
    }

    func pem(_ ders: [[UInt8]]) -> String { PEM.encode(ders) }

    /// Writes `contents` once as `STEM-HASH.EXT`, HASH from the contents (atomically, so concurrent writers of the
    /// same content are harmless), and returns its path.
    func file(_ stem: String, _ ext: String, _ contents: String, mode: Int = 0o644) throws -> String {
        let url = directory.appendingPathComponent("\(stem)-\(LabPKI.contentTag(Array(contents.utf8))).\(ext)")
        if !FileManager.default.fileExists(atPath: url.path) {
            try Storage.writePrivately(contents, to: url, mode: mode)
        }
        return url.path
    }

    /// The roots of the scenario's trust profile, and its trust store file where the run writes files.
    func trust(_ s: Scenario) throws -> (path: String?, roots: [[UInt8]]) {
        let trust = s.client.trust
        if let made = trustFiles.withLock({ $0[trust] }) { return made }
        let roots = try s.trustRoots(in: pki).map(\.certificateDER)
        let made = (path: writesFiles ? try file("trust-\(trust.rawValue)", "pem", pem(roots)) : nil, roots: roots)
        trustFiles.withLock { $0[trust] = made }
        return made
    }

    /// The trust store file of the scenario's trust profile (written now if it was not), and its roots.
    func trustFile(_ s: Scenario) throws -> (path: String, roots: [[UInt8]]) {
        let made = try trust(s)
        if let path = made.path { return (path, made.roots) }
        let path = try file("trust-\(s.client.trust.rawValue)", "pem", pem(made.roots))
        trustFiles.withLock { $0[s.client.trust] = (path, made.roots) }
        return (path, made.roots)
    }

    /// The client credentials of the scenario (`nil` when it presents none); made now if ``prepareCredentials(for:)``
    /// did not make them.
    func credentials(_ s: Scenario) throws -> ClientCredentials? {
        guard let id = try s.clientIdentity(in: pki) else { return nil }
        return try credentialMemo.value(for: memoKey(id)) { try makeCredentials(id) }
    }

    /// Makes the scenario's client credentials (files, PKCS#12 under the PKI folder's lock) on a thread of their
    /// own, never on Swift's cooperative pool; later ``credentials(_:)`` calls take them from the memo.
    func prepareCredentials(for s: Scenario) async throws {
        guard let id = try s.clientIdentity(in: pki) else { return }
        let key = memoKey(id)
        if credentialMemo.cached(key) != nil { return }
        let made = await onDedicatedThread(named: "pinlab.creds") { [self] in
            Result { try credentialMemo.value(for: key) { try makeCredentials(id) } }
        }
        _ = try made.get()
    }

    private func memoKey(_ id: Identity) -> String { "\(id.name) \(LabPKI.contentTag(id.certificateDER))" }

    private func makeCredentials(_ id: Identity) throws -> ClientCredentials {
        let chain = [id.certificateDER] + id.issuerChainDER
        guard writesFiles else {
            return ClientCredentials(certificateChainDER: chain, privateKeyPKCS8DER: id.privateKeyPKCS8DER)
        }
        let certFile = try file("client-\(id.name)", "pem", pem(chain))
        let keyFile = try file(
            "client-\(id.name)", "key", PEM.encode(id.privateKeyPKCS8DER, label: "PRIVATE KEY"), mode: 0o600)
        var p12: URL? = nil
        if pki.makesPKCS12 {
            do {
                p12 = try pki.pkcs12File(for: id.name)
            } catch let e as PKIError {
                throw PKIError(
                    e.code, "cannot make the PKCS#12 file of the client identity '\(id.name)': \(e.reason)",
                    file: e.file, entity: id.name,
                    fix: e.fix ?? "run `pinlab pki init` to check and repair the PKI folder")
            }
        }
        return ClientCredentials(
            certificateChainDER: chain, privateKeyPKCS8DER: id.privateKeyPKCS8DER, certificateFile: certFile,
            keyFile: keyFile, pkcs12File: p12?.path, pkcs12Password: p12 == nil ? nil : pki.pkcs12Password)
    }

    func target(for s: Scenario, profile: PinProfile, port: Int, timeout: Duration) throws -> ClientTarget {
        let trust = try trust(s)
        var target = ClientTarget(
            host: s.client.host, ip: "127.0.0.1", port: port, trustRootsDER: trust.roots, trustFile: trust.path,
            pins: try s.pinSet(for: profile, in: pki), clientCredentials: try credentials(s), scenario: s.id,
            profile: profile, timeout: timeout, pinScope: s.client.pinScope)
        target.certificateTransparency = try certificateTransparency(for: s)
        target.revocationResponder = try revocationResponder(for: s)
        return target
    }

    /// The catalogue's `ct` scenarios turn CT on for their host: the lab's listed logs, and lab-root as the one
    /// root whose chains need SCTs (a root the scenario's client trusts besides it counts as user-installed).
    func certificateTransparency(for s: Scenario) throws -> CertificateTransparencyPolicy? {
        guard s.tags.contains("ct") else { return nil }
        return CertificateTransparencyPolicy(
            logPublicKeysDER: pki.ctLogs.filter(\.listed).map(\.publicKeyDER),
            enforcedRootsDER: [try pki.identity("lab-root").certificateDER])
    }

    func context(for s: Scenario, profile: PinProfile, port: Int) throws -> CellContext {
        let trust = try trustFile(s)
        let creds = try credentials(s)
        var context = CellContext(
            scenario: s.id, profile: profile, host: s.client.host, ip: "127.0.0.1", port: port, caFile: trust.path,
            pins: try s.pinSet(for: profile, in: pki).hashes,
            certificatePins: try s.pinnedIdentities(for: profile, in: pki).map(\.pins.certificateSHA256),
            clientCertificateFile: creds?.certificateFile, clientKeyFile: creds?.keyFile,
            clientPKCS12File: creds?.pkcs12File, clientPKCS12Password: creds?.pkcs12Password,
            pinScope: s.client.pinScope)
        let responder = try revocationResponder(for: s)
        (context.ocspURL, context.crlURL) = revocationURLs(for: s, responder: responder)
        if s.tags.contains("ech") { context.echConfig = try pki.echConfiguration().configListBase64 }
        return context
    }
}
