// Trust, pin and certificate handling of the reference clients: the per-run SSL_CTX, the certificate verify
// callback where every trust decision (chain, hostname, pins) is taken inside the handshake, and pin hashing.
internal import CPinningLabOpenSSL
internal import Foundation
import PinningLabBase
internal import PinningLabCore
internal import PinningLabModel
internal import PinningLabOpenSSL  // the handle owners (Handles.swift)
internal import PinningLabPKI

/// A refusal or failure of one reference-client run, already classified. OpenSSL's error queue is drained into
/// `detail` in the same synchronous call that failed.
struct ClientFailure: Error {
    var category: RefusalCategory
    var detail: String
}

/// A certificate the run was handed, parsed; `what` names the field for the error.
func clientCertificate(_ der: [UInt8], what: String) throws(ClientFailure) -> X509Handle {
    ERR_clear_error()
    guard let certificate = X509Handle(der: der) else {
        throw ClientFailure(
            category: .other, detail: "\(what): not a DER certificate (\(der.count) bytes): \(openSSLErrorQueue())")
    }
    return certificate
}

/// SHA-256 of `bytes` with OpenSSL's EVP interface.
func clientSHA256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
        EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
    }
    precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
    return digest
}

/// DER encodings of a certificate's parts; `x509` is borrowed, never freed here.
enum ClientCertificateBytes {
    /// The whole certificate (i2d_X509).
    static func certificate(_ x509: OpaquePointer) -> [UInt8] {
        encode { i2d_X509(x509, $0) }
    }

    /// The DER of the SubjectPublicKeyInfo (i2d_X509_PUBKEY of X509_get_X509_PUBKEY): what SPKI pins hash.
    static func subjectPublicKeyInfo(_ x509: OpaquePointer) -> [UInt8] {
        guard let publicKey = X509_get_X509_PUBKEY(x509) else { return [] }
        return encode { i2d_X509_PUBKEY(publicKey, $0) }
    }

    /// The contents of the SPKI's BIT STRING: EC X9.63 point, RSA PKCS#1 RSAPublicKey DER, Ed25519 raw bytes.
    /// This is what `SecKeyCopyExternalRepresentation` returns on Apple platforms.
    static func bareKey(_ x509: OpaquePointer) -> [UInt8] {
        guard let publicKey = X509_get_X509_PUBKEY(x509) else { return [] }
        var keyBytes: UnsafePointer<UInt8>? = nil
        var keyLength: Int32 = 0
        guard X509_PUBKEY_get0_param(nil, &keyBytes, &keyLength, nil, publicKey) == 1, let keyBytes, keyLength > 0
        else { return [] }
        return Array(UnsafeBufferPointer(start: keyBytes, count: Int(keyLength)))
    }

    private static func encode(_ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        let length = i2d(nil)
        guard length > 0 else { return [] }
        var output = [UInt8](repeating: 0, count: Int(length))
        let written = output.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d(&cursor)
        }
        return written == length ? output : []
    }
}

/// How one reference client decides on one connection: its traits (its row of `Mistake.all`), and the pins in force.
struct ClientPolicy {
    var mistake: ReferenceClient.Mistake
    var pins: PinSet
    /// What the client does with revocation status: a stapled OCSP response, or else the status it fetches from the
    /// OCSP responder and CRL the leaf names (``ClientTarget/revocationResponder``); then the fetched status of every
    /// CA certificate below the trust anchor.
    var revocation: ClientChecks.Revocation = .none
    /// What a client that requires CT enforces for this host (`nil`: it checks no SCT here).
    var certificateTransparency: CertificateTransparencyPolicy? = nil

    /// Whether `X509_VERIFY_PARAM`'s host check is configured.
    var checksHostname: Bool {
        traits.checksHostname && !pinReplacesValidation
    }

    /// Whether a pin match stands in for chain validation.
    var pinReplacesValidation: Bool { traits.pinReplacesValidation && !pins.isEmpty }

    var traits: ClientTraits { mistake.traits }

    var checksPins: Bool { !pins.isEmpty && traits.checksPins }

    /// Whether pins are checked again on a resumed connection (every client but `skips-pins-on-resumption`).
    var checksPinsOnResumption: Bool { traits.checksPinsOnResumption }

    /// The pin hash this client computes for `x509`.
    func pinHash(of x509: OpaquePointer) -> [UInt8] {
        switch pins.kind {
        case .certificateSHA256:
            return clientSHA256(ClientCertificateBytes.certificate(x509))
        case .spkiSHA256:
            if traits.hashesBareKey { return clientSHA256(ClientCertificateBytes.bareKey(x509)) }
            return clientSHA256(ClientCertificateBytes.subjectPublicKeyInfo(x509))
        }
    }

    /// The index in `chain` (a borrowed `STACK_OF(X509)*`) of the first certificate matching a pin.
    func firstPinnedIndex(in chain: OpaquePointer?) -> Int? {
        guard let chain else { return nil }
        return firstPinnedIndex(
            in: (0..<Int(cpl_client_sk_X509_num(chain))).compactMap {
                cpl_client_sk_X509_value(chain, Int32($0))
            })
    }

    /// The index in `certificates` (borrowed `X509*`) of the first certificate matching a pin.
    func firstPinnedIndex(in certificates: [OpaquePointer]) -> Int? {
        let wanted = Set(pins.hashes)
        return certificates.firstIndex { wanted.contains(pinHash(of: $0)) }
    }

    /// The `pins-by-issuer-name` mistake: from `leaf`, repeatedly take the first certificate among `presented`
    /// (then `roots`) whose subject name equals the current certificate's issuer name, until a self-issued
    /// certificate or no match. Names only: no signature or key identifier is looked at. Pointers are borrowed.
    static func pathByIssuerName(leaf: OpaquePointer, presented: OpaquePointer?, roots: [OpaquePointer])
        -> [OpaquePointer]
    {
        let sent: [OpaquePointer] =
            presented.map { stack in
                (0..<Int(cpl_client_sk_X509_num(stack))).compactMap { cpl_client_sk_X509_value(stack, Int32($0)) }
            } ?? []
        var path = [leaf]
        var current = leaf
        while path.count < 10, X509_NAME_cmp(X509_get_issuer_name(current), X509_get_subject_name(current)) != 0 {
            let issuerName = X509_get_issuer_name(current)
            let candidates = sent + roots
            guard
                let next = candidates.first(where: { candidate in
                    !path.contains(candidate) && X509_NAME_cmp(X509_get_subject_name(candidate), issuerName) == 0
                })
            else { break }
            path.append(next)
            current = next
        }
        return path
    }
}

/// What the callbacks of one connection learned. Created, mutated and read on the single thread that runs the
/// connection (OpenSSL calls the callbacks synchronously from `SSL_connect`/`SSL_read`), so it is never shared.
final class ClientVerifyState {
    /// The client's ex_data index, obtained once from OpenSSL (never slot 0, never the server session's).
    static let exDataIndex: Int32 = cpl_ssl_ex_new_index()

    let policy: ClientPolicy
    /// The trusted roots, kept for the `pins-by-issuer-name` walk (the store owns its own references).
    var trustRoots: [X509Handle] = []
    var verifyCallbackRan = false
    /// Set when the stapled OCSP response (or its absence) made the client refuse.
    var revocationFailure: String?
    /// Where the lab's revocation hosts lead (`IP:PORT`), and until when status may be fetched.
    var revocationResponder: String?
    var fetchDeadline = ClientDeadline(after: .seconds(5))
    /// Set when the SCTs were not enough for the client's CT policy.
    var ctFailure: String?
    /// Set when the chain was acceptable but no pin matched.
    var pinFailure: String?
    /// Which certificate matched, for the outcome's detail.
    var pinMatch: String?
    var presentedChainLength = 0
    /// The certificates the server sent (in order), captured before any decision: references to the handshake's
    /// own certificates, never decoded again (a resumed connection checks them, `ClientSessionEntry`).
    var presentedChain: [X509Handle] = []
    /// The validated chain, leaf to trusted root, when validation ran and succeeded.
    var verifiedChain: [X509Handle] = []
    /// The `pins-by-issuer-name` path, for that client only.
    var issuerPath: [X509Handle] = []
    /// The certificates the server sent, in DER.
    var presentedChainDER: [[UInt8]] { presentedChain.map(\.der) }
    /// The alert the server sent us (`SSL_CB_READ_ALERT`), as OpenSSL's long description, and its code.
    var alertReceived: (code: Int32, text: String)?
    /// Whether the server sent a CertificateRequest.
    var certificateRequested = false

    init(policy: ClientPolicy) {
        self.policy = policy
    }

    /// The whole trust decision, run by OpenSSL in place of `X509_verify_cert` during the handshake, so that a
    /// refusal aborts the handshake with an alert before any application data can be written.
    ///
    /// `X509_STORE_CTX_get0_untrusted` is the chain exactly as the server sent it (what `SSL_get_peer_cert_chain`
    /// returns on a client); after a successful `X509_verify_cert`, `X509_STORE_CTX_get0_chain` is the validated
    /// chain, up to and including the trusted root (what `SSL_get0_verified_chain` returns afterwards).
    func verify(_ storeContext: OpaquePointer) -> Bool {
        verifyCallbackRan = true
        let presented = X509_STORE_CTX_get0_untrusted(storeContext)
        presentedChainLength = presented.map { Int(cpl_client_sk_X509_num($0)) } ?? 0
        if let presented {
            presentedChain = (0..<Int32(presentedChainLength)).compactMap { i in
                cpl_client_sk_X509_value(presented, i).map(X509Handle.init(retaining:))
            }
        }

        if policy.pinReplacesValidation {
            if let index = policy.firstPinnedIndex(in: presented) {
                pinMatch = "presented certificate #\(index) matched a pin (chain not validated)"
                X509_STORE_CTX_set_error(storeContext, X509_V_OK)
                return true
            }
            return failPins(storeContext, chainName: "presented chain", length: presentedChainLength)
        }

        guard X509_verify_cert(storeContext) == 1 else {
            if X509_STORE_CTX_get_error(storeContext) == X509_V_OK {
                X509_STORE_CTX_set_error(storeContext, X509_V_ERR_UNSPECIFIED)
            }
            return false
        }
        if let verified = X509_STORE_CTX_get0_chain(storeContext) {
            verifiedChain = (0..<cpl_client_sk_X509_num(verified)).compactMap { i in
                cpl_client_sk_X509_value(verified, i).map(X509Handle.init(retaining:))
            }
        }
        if policy.traits.pinnedChain == .issuerNamePath, let leaf = X509_STORE_CTX_get0_cert(storeContext) {
            let path = ClientPolicy.pathByIssuerName(leaf: leaf, presented: presented, roots: trustRoots.map(\.pointer))
            issuerPath = path.map(X509Handle.init(retaining:))
        }
        guard policy.checksPins else { return true }

        if policy.traits.pinnedChain == .issuerNamePath, let leaf = X509_STORE_CTX_get0_cert(storeContext) {
            let path = ClientPolicy.pathByIssuerName(leaf: leaf, presented: presented, roots: trustRoots.map(\.pointer))
            if let index = policy.firstPinnedIndex(in: path) {
                pinMatch = "certificate #\(index) of the path built by issuer names matched a pin"
                return true
            }
            return failPins(storeContext, chainName: "path built by issuer names", length: path.count)
        }

        let chainName = policy.traits.pinnedChain == .presented ? "presented chain" : "verified chain"
        let chain = policy.traits.pinnedChain == .presented ? presented : X509_STORE_CTX_get0_chain(storeContext)
        if let index = policy.firstPinnedIndex(in: chain) {
            pinMatch = "\(chainName) certificate #\(index) matched a pin"
            return true
        }
        return failPins(storeContext, chainName: chainName, length: chain.map { Int(cpl_client_sk_X509_num($0)) } ?? 0)
    }

    /// The trust decision on a resumed connection, where OpenSSL sends no certificate and runs no verification:
    /// the host name and the pins are checked again against what the full handshake that created the session
    /// validated (`entry`), under this connection's host and pins. `nil` when the client trusts the server.
    /// `reuse`: the decision is for a request sent on a connection kept open (HTTP/2), not for a resumed session:
    /// the pins are checked whatever the client does on resumption, and the words say so.
    func recheckResumed(_ entry: ClientSessionEntry, host: String, reuse: Bool = false) -> ClientFailure? {
        let what = reuse ? "reused connection" : "resumed session"
        let of = reuse ? "connection" : "session"
        if policy.checksHostname {
            guard entry.covers(host) else {
                return ClientFailure(
                    category: .hostname,
                    detail:
                        "\(what): the certificate of the \(of) is not valid for \(host) (checked again without a handshake)"
                )
            }
        }
        guard policy.checksPins else { return nil }
        guard reuse || policy.checksPinsOnResumption else {
            pinMatch = "resumed session: pins not checked (they are checked on full handshakes only)"
            return nil
        }
        let (chainName, handles): (String, [X509Handle])
        if policy.pinReplacesValidation || policy.traits.pinnedChain == .presented {
            (chainName, handles) = ("presented chain", entry.presentedChain)
        } else if policy.traits.pinnedChain == .issuerNamePath {
            (chainName, handles) = ("path built by issuer names", entry.issuerPath)
        } else {
            (chainName, handles) = ("verified chain", entry.verifiedChain)
        }
        // The handles own the certificates: they must outlive every use of their pointers.
        let matched = withExtendedLifetime(handles) { policy.firstPinnedIndex(in: handles.map(\.pointer)) }
        if let index = matched {
            pinMatch = "\(what): \(chainName) certificate #\(index) matched a pin (checked again without a handshake)"
            return nil
        }
        let kind =
            policy.traits.hashesBareKey && policy.pins.kind == .spkiSHA256 ? "bare-key" : policy.pins.kind.rawValue
        return ClientFailure(
            category: .pinMismatch,
            detail:
                "\(what): no certificate of the \(chainName) of the \(of) (\(handles.count) certificates) matches any of \(policy.pins.hashes.count) \(kind) pins (checked again without a handshake)"
        )
    }

    private func failPins(_ storeContext: OpaquePointer, chainName: String, length: Int) -> Bool {
        let kind =
            policy.traits.hashesBareKey && policy.pins.kind == .spkiSHA256 ? "bare-key" : policy.pins.kind.rawValue
        pinFailure =
            "no certificate of the \(chainName) (\(length) certificates) matches any of \(policy.pins.hashes.count) \(kind) pins"
        X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
        return false
    }
}

/// A resumable session in a cell's `ClientSessionCache`, with what the full handshake that made it validated (the
/// handshake's own certificates, held by reference: a resumed connection checks them without decoding them again).
final class ClientSessionEntry: Sendable {
    let session: SSLSessionHandle
    let presentedChain: [X509Handle]
    let verifiedChain: [X509Handle]
    let issuerPath: [X509Handle]
    /// The host name (normal form) the session's certificate was checked for when it was made.
    let host: String

    init(
        session: SSLSessionHandle, presentedChain: [X509Handle], verifiedChain: [X509Handle], issuerPath: [X509Handle],
        host: String
    ) {
        self.session = session
        self.host = host
        self.presentedChain = presentedChain
        self.verifiedChain = verifiedChain
        self.issuerPath = issuerPath
    }

    /// The same decision's certificates for a new session (`session`) made by resuming this one.
    func resumed(as session: SSLSessionHandle) -> ClientSessionEntry {
        ClientSessionEntry(
            session: session, presentedChain: presentedChain, verifiedChain: verifiedChain, issuerPath: issuerPath,
            host: host)
    }

    /// Whether the session's certificate is valid for `host`.
    func covers(_ host: String) -> Bool {
        guard let leaf = verifiedChain.first ?? presentedChain.first else { return false }
        defer { ERR_clear_error() }
        return withExtendedLifetime(leaf) { X509_check_host(leaf.pointer, host, host.utf8.count, 0, nil) == 1 }
    }
}

/// OpenSSL's certificate verification callback (`SSL_CTX_set_cert_verify_callback`). The context is shared by runs
/// (``ClientContext/shared(for:)``), so the run's `ClientVerifyState` comes from the connection: the store context
/// names its `SSL*`, whose ex_data holds the state, kept alive by the connection while it runs.
private let clientCertVerifyCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = {
    storeContext, _ in
    guard let storeContext,
        let ssl = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let argument = SSL_get_ex_data(OpaquePointer(ssl), ClientVerifyState.exDataIndex)
    else { return 0 }
    let state = Unmanaged<ClientVerifyState>.fromOpaque(argument).takeUnretainedValue()
    return state.verify(storeContext) ? 1 : 0
}

/// OpenSSL's status callback (a client that asked for a staple): the revocation decision
/// (``ClientVerifyState/revocationRefusal(_:)``, RevocationDecision.swift), inside the handshake. Refusing makes
/// OpenSSL send bad_certificate_status_response.
private let clientStatusCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
    guard let ssl, let argument = SSL_get_ex_data(ssl, ClientVerifyState.exDataIndex) else { return 0 }
    let state = Unmanaged<ClientVerifyState>.fromOpaque(argument).takeUnretainedValue()
    guard let refusal = state.revocationRefusal(ssl) else { return 1 }
    state.revocationFailure = refusal
    return 0
}

/// Where an SCT reached the client, and so what its signature covers.
enum ClientSCTSource: Sendable {
    /// In the certificate (a precertificate entry: the TBSCertificate without the SCT list, and the issuer key hash).
    case embedded
    /// In the TLS extension or a stapled OCSP response (an x509 entry: the certificate itself).
    case tlsExtension, ocspResponse
}

extension ClientVerifyState {
    /// The CT decision of a client that requires CT, once the chain verified: `nil` accepts. A chain ending at a
    /// root the policy does not enforce (one the user installed) is exempt; otherwise valid SCTs — from a listed
    /// log, signature verified over what they cover, not dated in the future — must come from at least the
    /// policy's minimum of distinct logs.
    func ctDecision(
        leafDER: [UInt8], issuerDER: [UInt8], scts: [(SignedCertificateTimestamp, ClientSCTSource)],
        now: Date = Date()
    ) -> String? {
        guard let policy = policy.certificateTransparency else { return nil }
        guard let anchor = verifiedChain.last?.der, policy.enforcedRootsDER.contains(anchor) else { return nil }
        let keysByID = Dictionary(
            policy.logPublicKeysDER.map { (clientSHA256($0), $0) }, uniquingKeysWith: { a, _ in a })
        let precert = try? SignedCertificateTimestamp.Entry.precert(
            reconstructedFrom: leafDER, issuerCertificateDER: issuerDER)
        var validLogs: Set<[UInt8]> = []
        var verdicts: [String] = []
        for (sct, source) in scts {
            let entry = source == .embedded ? precert : .x509(certificateDER: leafDER)
            let verdict: String
            if let key = keysByID[sct.logID] {
                if let entry, sct.verifies(logPublicKeyDER: key, for: entry) {
                    // A log cannot have seen the certificate later than now (a minute's clock skew allowed).
                    if sct.date > now.addingTimeInterval(60) {
                        verdict = "dated in the future"
                    } else {
                        validLogs.insert(sct.logID)
                        verdict = "valid"
                    }
                } else {
                    verdict = "signature does not verify"
                }
            } else {
                verdict = "from a log not on the list"
            }
            verdicts.append("\(source): \(verdict)")
        }
        guard validLogs.count < policy.minimumDistinctLogs else { return nil }
        let seen = verdicts.isEmpty ? "no SCT at all" : verdicts.joined(separator: ", ")
        return
            "certificate transparency: valid SCTs from \(validLogs.count) distinct listed log(s), fewer than the \(policy.minimumDistinctLogs) required (\(seen))"
    }
}

/// OpenSSL's CT validation callback (`SSL_set_ct_validation_callback`, set only for a client that requires CT
/// where the target turns it on): called during the handshake once the chain verified, with every SCT the server
/// delivered and the leaf and issuer of the verified chain. Returning 0 aborts the handshake.
let clientCTCallback: @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = {
    context, list, argument in
    guard let context, let argument else { return 0 }
    let state = Unmanaged<ClientVerifyState>.fromOpaque(argument).takeUnretainedValue()
    guard let leaf = CT_POLICY_EVAL_CTX_get0_cert(context), let issuer = CT_POLICY_EVAL_CTX_get0_issuer(context) else {
        state.ctFailure = "certificate transparency: OpenSSL gave no leaf or issuer to check SCTs against"
        return 0
    }
    var scts: [(SignedCertificateTimestamp, ClientSCTSource)] = []
    if let list {
        for i in 0..<cpl_ct_sk_SCT_num(list) {
            guard let sct = cpl_ct_sk_SCT_value(list, i) else { continue }
            let source: ClientSCTSource
            switch SCT_get_source(sct) {
            case SCT_SOURCE_X509V3_EXTENSION: source = .embedded
            case SCT_SOURCE_OCSP_STAPLED_RESPONSE: source = .ocspResponse
            default: source = .tlsExtension
            }
            // The SCT as sent (RFC 6962's TLS encoding), read back by the lab's own parser as a one-item list.
            let length = i2o_SCT(sct, nil)
            guard length > 0 else { continue }
            var bytes = [UInt8](repeating: 0, count: Int(length))
            let written = bytes.withUnsafeMutableBufferPointer { buffer in
                var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                return i2o_SCT(sct, &cursor)
            }
            let item = [UInt8(length >> 8), UInt8(length & 0xff)] + bytes
            let listBytes = [UInt8(item.count >> 8), UInt8(item.count & 0xff)] + item
            guard written == length, let parsed = SignedCertificateTimestamp.parseList(listBytes)?.first else {
                state.ctFailure = "certificate transparency: an SCT (\(source)) cannot be read"
                return 0
            }
            scts.append((parsed, source))
        }
    }
    ERR_clear_error()
    let failure = state.ctDecision(
        leafDER: ClientCertificateBytes.certificate(leaf), issuerDER: ClientCertificateBytes.certificate(issuer),
        scts: scts)
    state.ctFailure = failure
    return failure == nil ? 1 : 0
}

/// OpenSSL's info callback: records alerts received and whether a client certificate was requested.
// swift-format-ignore: AlwaysUseLowerCamelCase
private let clientInfoCallback: @convention(c) (OpaquePointer?, Int32, Int32) -> Void = { ssl, where_, value in
    guard let ssl, let argument = SSL_get_ex_data(ssl, ClientVerifyState.exDataIndex) else { return }
    let state = Unmanaged<ClientVerifyState>.fromOpaque(argument).takeUnretainedValue()
    if where_ & SSL_CB_ALERT != 0 && where_ & SSL_CB_READ != 0 {
        let text =
            (value & 0xff) == 116
            ? "certificate required"  // TLS 1.3; OpenSSL 3.0's table says "unknown"
            : SSL_alert_desc_string_long(value).map { String(cString: $0) } ?? "unknown"
        if state.alertReceived == nil { state.alertReceived = (value & 0xff, text) }
    }
    if where_ & SSL_CB_LOOP != 0 && SSL_get_state(ssl) == TLS_ST_CR_CERT_REQ {
        state.certificateRequested = true
    }
}

/// An `SSL_CTX*` (which owns its `X509_STORE`) configured for a set of trust roots and client credentials.
/// Configured once, then only read, so runs with the same roots and credentials share it (``shared(for:)``):
/// making a context costs OpenSSL 3 an algorithm fetch per call, more than the client's half of a handshake.
final class ClientContext: @unchecked Sendable {  // immutable after init; OpenSSL allows SSL_new on a shared SSL_CTX
    private let handle: SSLContextHandle
    var pointer: OpaquePointer { handle.pointer }
    /// The roots the store trusts, for the checks that walk issuer names themselves.
    let trustRoots: [X509Handle]

    private struct Key: Hashable {
        var roots: [[UInt8]]
        var chain: [[UInt8]]?
        var key: [UInt8]?

        // Every run looks its context up: hashed as byte buffers (a few kilobytes), not byte by byte.
        func hash(into hasher: inout Hasher) {
            func combine(_ bytes: [UInt8]) {
                hasher.combine(bytes.count)
                bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
            hasher.combine(roots.count)
            roots.forEach(combine)
            hasher.combine(chain?.count ?? -1)
            chain?.forEach(combine)
            hasher.combine(key == nil)
            key.map(combine)
        }
    }
    private static let cache = Locked<[Key: ClientContext]>([:])
    private static let capacity = 64

    /// The context for `target`'s trust roots and client credentials, made once and kept (the table starts afresh
    /// when full); the run's state is attached to its connection, never to the context.
    static func shared(for target: ClientTarget) throws(ClientFailure) -> ClientContext {
        let key = Key(
            roots: target.trustRootsDER, chain: target.clientCredentials?.certificateChainDER,
            key: target.clientCredentials?.privateKeyPKCS8DER)
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let made = try ClientContext(target: target)
        return cache.withLock { table in
            if let other = table[key] { return other }
            if table.count >= capacity { table.removeAll() }
            table[key] = made
            return made
        }
    }

    /// A context of its own (never shared) that also holds the CT logs of `ctLogFile` (OpenSSL's log-list format),
    /// for a connection that lets OpenSSL's own CT code validate SCTs (``OpenSSLCTCheck``): the file is read now, so
    /// an unreadable one fails here, before any connection.
    static func withCTLogs(for target: ClientTarget, ctLogFile: String) throws(ClientFailure) -> ClientContext {
        let made = try ClientContext(target: target)
        ERR_clear_error()
        guard SSL_CTX_set_ctlog_list_file(made.pointer, ctLogFile) == 1 else {
            throw ClientFailure(
                category: .other, detail: "\(ctLogFile): not a CT log file OpenSSL can read: \(openSSLErrorQueue())")
        }
        return made
    }

    /// Attaches the context's roots to a run's state.
    func prepare(_ state: ClientVerifyState) { state.trustRoots = trustRoots }

    private init(target: ClientTarget) throws(ClientFailure) {
        ERR_clear_error()
        guard let handle = SSLContextHandle(server: false) else {
            throw ClientFailure(category: .other, detail: "SSL_CTX_new failed: \(openSSLErrorQueue())")
        }
        self.handle = handle  // from here on the handle frees it, whatever fails below
        let context = handle.pointer
        SSL_CTX_set_security_level(context, 2)
        guard cpl_client_ctx_set_min_proto_version(context, cpl_client_tls1_2_version()) == 1 else {
            throw ClientFailure(category: .other, detail: "cannot require TLS 1.2: \(openSSLErrorQueue())")
        }
        // App Transport Security's floor: forward secrecy (ECDHE) in TLS 1.2; TLS 1.3 suites are all forward-secret.
        guard SSL_CTX_set_cipher_list(context, "ECDHE+AESGCM:ECDHE+CHACHA20:ECDHE+AES") == 1 else {
            throw ClientFailure(category: .other, detail: "cannot restrict to ECDHE suites: \(openSSLErrorQueue())")
        }

        // Trust exactly the target's roots.
        guard let store = X509_STORE_new() else {
            throw ClientFailure(category: .other, detail: "X509_STORE_new failed: \(openSSLErrorQueue())")
        }
        SSL_CTX_set_cert_store(context, store)  // the context owns the store now
        // Any certificate of the store is an anchor, a trusted intermediate included — as on Apple platforms,
        // Android, the JDK and Go, and in curl (which sets this flag by default). Without it OpenSSL would insist on
        // a self-signed root beyond a trusted intermediate.
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        var roots: [X509Handle] = []
        for (index, der) in target.trustRootsDER.enumerated() {
            let root = try clientCertificate(der, what: "trustRootsDER[\(index)]")
            roots.append(root)
            guard X509_STORE_add_cert(store, root.pointer) == 1 else {
                let errors = openSSLErrorQueue()
                if errors.contains("cert already in hash table") { continue }
                throw ClientFailure(category: .other, detail: "trustRootsDER[\(index)]: X509_STORE_add_cert: \(errors)")
            }
        }

        trustRoots = roots
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        SSL_CTX_set_cert_verify_callback(context, clientCertVerifyCallback, nil)
        SSL_CTX_set_info_callback(context, clientInfoCallback)
        cpl_client_ctx_set_status_callback(context, clientStatusCallback)

        if let credentials = target.clientCredentials {
            try Self.useCredentials(credentials, in: context)
        }
    }

    private static func useCredentials(_ credentials: ClientCredentials, in context: OpaquePointer)
        throws(ClientFailure)
    {
        guard let leafDER = credentials.certificateChainDER.first else {
            throw ClientFailure(category: .other, detail: "clientCredentials.certificateChainDER is empty")
        }
        let leaf = try clientCertificate(leafDER, what: "clientCredentials.certificateChainDER[0]")
        guard SSL_CTX_use_certificate(context, leaf.pointer) == 1 else {
            throw ClientFailure(category: .other, detail: "SSL_CTX_use_certificate: \(openSSLErrorQueue())")
        }
        for (index, der) in credentials.certificateChainDER.enumerated().dropFirst() {
            let issuer = try clientCertificate(der, what: "clientCredentials.certificateChainDER[\(index)]")
            guard cpl_client_ctx_add1_chain_cert(context, issuer.pointer) == 1 else {
                throw ClientFailure(
                    category: .other,
                    detail: "clientCredentials.certificateChainDER[\(index)]: \(openSSLErrorQueue())")
            }
        }
        ERR_clear_error()
        guard let key = PrivateKeyHandle(der: credentials.privateKeyPKCS8DER) else {
            throw ClientFailure(
                category: .other,
                detail: "clientCredentials.privateKeyPKCS8DER: not a DER PKCS#8 private key: \(openSSLErrorQueue())")
        }
        guard SSL_CTX_use_PrivateKey(context, key.pointer) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw ClientFailure(
                category: .other,
                detail: "clientCredentials.privateKeyPKCS8DER does not fit the client certificate: "
                    + openSSLErrorQueue())
        }
    }

}
