// The reference clients' revocation decision (RFC 6960 for OCSP, RFC 5280 section 6.3 for CRLs), in Swift: what a
// stapled or fetched OCSP response, or a fetched CRL, says about one certificate of the chain, and what a client
// that checks revocation concludes from it. The C shim only wraps what Swift cannot call (OpenSSL's macros and its
// STACK_OF accessors); every object decoded here has one owner (`OpenSSLObject`) that frees it.
internal import CPinningLabOpenSSL
internal import PinningLabModel
internal import PinningLabOpenSSL  // decodeDER, encodeDER

/// The one owner of an OpenSSL object of a type without a handle class of its own (an OCSP response, a CRL, a
/// stack of URLs …): `free` releases it when the owner goes, unless ownership was handed to OpenSSL first
/// (``handOver()``, for the `add0` calls that take it).
final class OpenSSLObject {
    let pointer: OpaquePointer
    private let free: (OpaquePointer) -> Void
    private var owned = true

    /// Adopts `pointer` (nil when OpenSSL made none).
    init?(_ pointer: OpaquePointer?, free: @escaping (OpaquePointer) -> Void) {
        guard let pointer else { return nil }
        self.pointer = pointer
        self.free = free
    }

    /// OpenSSL took the object (an `add0` call succeeded): this owner no longer frees it.
    func handOver() { owned = false }

    deinit { if owned { free(pointer) } }
}

/// What one piece of revocation evidence says about one certificate: the outcome of checking it as RFC 6960
/// section 3.2 (OCSP) and RFC 5280 section 6.3 (CRL) ask.
enum RevocationEvidence: Equatable, Sendable {
    /// A current, validly signed response says good; or a current CRL signed by the issuer does not list it.
    case good
    /// A current, validly signed response says revoked, or a current CRL signed by the issuer lists it.
    case revoked
    /// Nothing stapled; the leaf names an OCSP responder (its status can be fetched).
    case notStapled
    /// Nothing stapled, and the leaf names no OCSP responder.
    case notStapledNoResponder
    /// Nothing stapled though the leaf demands a staple (TLS feature status_request, RFC 7633: Must-Staple).
    case mustStapleMissing
    /// Not DER of a response or CRL, or an OCSP response whose status is not "successful".
    case unreadable
    /// The OCSP signature does not verify or its signer may not speak for the issuer; a CRL not issued or not
    /// signed by the certificate's issuer.
    case badSignature
    /// Outside thisUpdate..nextUpdate (OCSP: 5 minutes of leeway); a CRL whose thisUpdate is ahead or nextUpdate
    /// past (stale) or missing.
    case notCurrent
    /// The response is about another certificate, or says "unknown".
    case unknown
    /// The chain has no issuer for the certificate, so nothing can be checked against it.
    case noIssuer

    /// Why a stapled response did not say good, in the words of the refusal.
    var stapleProblem: String {
        switch self {
        case .unreadable: return "the stapled OCSP response is unreadable or not successful"
        case .badSignature:
            return "the stapled OCSP response's signature does not verify or its signer may not speak for the issuer"
        case .notCurrent: return "the stapled OCSP response is not current (outside thisUpdate..nextUpdate)"
        case .revoked: return "the stapled OCSP response says the certificate is revoked"
        case .noIssuer: return "the certificate's issuer is unknown, so the stapled OCSP response cannot be checked"
        case .mustStapleMissing:
            return "the certificate demands a stapled OCSP response (Must-Staple) and none was stapled"
        default: return "the stapled OCSP response does not say the certificate is good (unknown)"
        }
    }

    /// Why a fetched OCSP response did not decide.
    var fetchedOCSPProblem: String {
        switch self {
        case .unreadable: return "the response is unreadable or not successful"
        case .badSignature: return "the response's signature does not verify or its signer may not speak for the issuer"
        case .notCurrent: return "the response is not current"
        case .noIssuer: return "the certificate's issuer is unknown"
        default: return "the response does not say the certificate is good (unknown)"
        }
    }

    /// Why a fetched CRL did not decide.
    var fetchedCRLProblem: String {
        switch self {
        case .unreadable: return "unreadable"
        case .badSignature: return "not signed by the certificate's issuer"
        case .notCurrent: return "not current (its nextUpdate has passed: stale)"
        default: return "the certificate's issuer is unknown"
        }
    }
}

/// The chain a connection's status is judged against, borrowed from its `SSL*`: the verified chain when there is
/// one (its last certificate is then the trust anchor), else the chain the server sent. Valid only while the
/// connection's `SSL*` is, during its status callback.
struct RevocationChain {
    let ssl: OpaquePointer
    /// A `STACK_OF(X509)*` the `SSL*` owns, or nil.
    let stack: OpaquePointer?

    init(_ ssl: OpaquePointer) {
        self.ssl = ssl
        stack = SSL_get0_verified_chain(ssl) ?? SSL_get_peer_cert_chain(ssl)
    }

    var count: Int { stack.map { Int(cpl_client_sk_X509_num($0)) } ?? 0 }

    /// How many certificates status is judged for: every one below the last, which in the verified chain is the
    /// trust anchor (its status is the trust store's business, not a CRL's).
    var certificatesBelowAnchor: Int { max(0, count - 1) }

    func certificate(_ index: Int) -> OpaquePointer? {
        guard let stack, index >= 0, index < count else { return nil }
        return cpl_client_sk_X509_value(stack, Int32(index))
    }

    /// The certificate at `index` (0: the leaf) and the one after it, its issuer; nil when there is no issuer.
    func certificateAndIssuer(_ index: Int) -> (certificate: OpaquePointer, issuer: OpaquePointer)? {
        guard index >= 0, count >= index + 2, let subject = certificate(index), let issuer = certificate(index + 1)
        else { return nil }
        return (subject, issuer)
    }

    /// What the stapled OCSP response says about the leaf (`notStapled…`/`mustStapleMissing` when none came).
    func stapleEvidence() -> RevocationEvidence {
        var der: UnsafePointer<UInt8>? = nil
        let length = cpl_client_ocsp_staple(ssl, &der)
        guard length > 0, let der else {
            // The leaf as the server sent it: what it demands and names does not depend on validation.
            let peer = SSL_get_peer_cert_chain(ssl)
            let leaf = peer.flatMap { cpl_client_sk_X509_num($0) > 0 ? cpl_client_sk_X509_value($0, 0) : nil }
            if let leaf, X509_get_ext_by_NID(leaf, NID_tlsfeature, -1) >= 0 { return .mustStapleMissing }
            return leaf.flatMap(Self.ocspResponderURL) == nil ? .notStapledNoResponder : .notStapled
        }
        return ocspEvidence(Array(UnsafeBufferPointer(start: der, count: length)), index: 0)
    }

    /// What an OCSP response (DER, stapled or fetched) says about the certificate at `index`, issued by the next.
    func ocspEvidence(_ der: [UInt8], index: Int) -> RevocationEvidence {
        defer { ERR_clear_error() }
        guard
            let response = OpenSSLObject(
                decodeDER(der, { d2i_OCSP_RESPONSE(nil, $0, $1) }), free: { OCSP_RESPONSE_free($0) })
        else { return .unreadable }
        guard OCSP_response_status(response.pointer) == OCSP_RESPONSE_STATUS_SUCCESSFUL,
            let basic = OpenSSLObject(OCSP_response_get1_basic(response.pointer), free: { OCSP_BASICRESP_free($0) })
        else { return .unreadable }
        guard let stack, let (certificate, issuer) = certificateAndIssuer(index) else { return .noIssuer }
        // The signer must be the issuer, or a responder it delegated to (id-kp-OCSPSigning), chaining to the store.
        let store = SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl))
        guard OCSP_basic_verify(basic.pointer, stack, store, 0) > 0 else { return .badSignature }
        guard let id = OpenSSLObject(OCSP_cert_to_id(nil, certificate, issuer), free: { OCSP_CERTID_free($0) }) else {
            return .noIssuer
        }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        guard
            OCSP_resp_find_status(basic.pointer, id.pointer, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate)
                == 1
        else { return .unknown }
        // The times point into the basic response: it must outlive their use.
        let current = withExtendedLifetime(basic) { OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) == 1 }
        guard current else { return .notCurrent }
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: return .good
        case V_OCSP_CERTSTATUS_REVOKED: return .revoked
        default: return .unknown
        }
    }

    /// What a CRL (DER) says about the certificate at `index`: issued and signed by its issuer (the next in the
    /// chain), current, and listing it or not.
    func crlEvidence(_ der: [UInt8], index: Int) -> RevocationEvidence {
        guard let (certificate, issuer) = certificateAndIssuer(index) else { return .noIssuer }
        defer { ERR_clear_error() }
        guard let crl = OpenSSLObject(decodeDER(der, { d2i_X509_CRL(nil, $0, $1) }), free: { X509_CRL_free($0) }) else {
            return .unreadable
        }
        guard X509_NAME_cmp(X509_CRL_get_issuer(crl.pointer), X509_get_subject_name(issuer)) == 0,
            let key = X509_get0_pubkey(issuer), X509_CRL_verify(crl.pointer, key) == 1
        else { return .badSignature }
        guard X509_cmp_current_time(X509_CRL_get0_lastUpdate(crl.pointer)) <= 0,
            let next = X509_CRL_get0_nextUpdate(crl.pointer), X509_cmp_current_time(next) >= 0
        else { return .notCurrent }
        var entry: OpaquePointer? = nil
        return X509_CRL_get0_by_cert(crl.pointer, &entry, certificate) == 1 ? .revoked : .good
    }

    /// The DER OCSP request for the certificate at `index` (SHA-1 CertID, no nonce), or nil.
    func ocspRequest(index: Int) -> [UInt8]? {
        guard let (certificate, issuer) = certificateAndIssuer(index) else { return nil }
        defer { ERR_clear_error() }
        guard let request = OpenSSLObject(OCSP_REQUEST_new(), free: { OCSP_REQUEST_free($0) }),
            let id = OpenSSLObject(OCSP_cert_to_id(nil, certificate, issuer), free: { OCSP_CERTID_free($0) }),
            OCSP_request_add0_id(request.pointer, id.pointer) != nil
        else { return nil }
        id.handOver()  // the request owns it now
        return encodeDER { i2d_OCSP_REQUEST(request.pointer, $0) }
    }

    /// The first OCSP responder URL the certificate at `index` names (Authority Information Access).
    func ocspURL(index: Int) -> String? { certificate(index).flatMap(Self.ocspResponderURL) }

    /// The first URI of a full-name distribution point of the certificate at `index`.
    func crlURL(index: Int) -> String? {
        guard let certificate = certificate(index) else { return nil }
        defer { ERR_clear_error() }
        let extensionValue = X509_get_ext_d2i(certificate, NID_crl_distribution_points, nil, nil)
        guard let points = OpenSSLObject(extensionValue.map(OpaquePointer.init), free: { CRL_DIST_POINTS_free($0) })
        else {
            return nil
        }
        // Every pointer below points into `points`: it must outlive their use.
        return withExtendedLifetime(points) { () -> String? in
            for i in 0..<cpl_client_sk_DIST_POINT_num(points.pointer) {
                guard let name = cpl_client_sk_DIST_POINT_value(points.pointer, i)?.pointee.distpoint?.pointee,
                    name.type == 0, let names = name.name.fullname  // 0: fullName
                else { continue }
                for j in 0..<cpl_client_sk_GENERAL_NAME_num(names) {
                    guard let general = cpl_client_sk_GENERAL_NAME_value(names, j)?.pointee, general.type == GEN_URI,
                        let uri = general.d.uniformResourceIdentifier
                    else { continue }
                    return Self.text(ASN1_STRING_get0_data(uri), Int(ASN1_STRING_length(uri)))
                }
            }
            return nil
        }
    }

    /// The first OCSP responder URL `certificate` names, or nil.
    private static func ocspResponderURL(_ certificate: OpaquePointer) -> String? {
        guard let urls = OpenSSLObject(X509_get1_ocsp(certificate), free: { X509_email_free($0) }) else { return nil }
        return withExtendedLifetime(urls) {  // `url` points into `urls`
            guard cpl_client_sk_string_num(urls.pointer) > 0, let url = cpl_client_sk_string_value(urls.pointer, 0)
            else { return nil }
            return text(UnsafeRawPointer(url).assumingMemoryBound(to: UInt8.self), strlen(url))
        }
    }

    /// A URL's bytes as text; nil when empty or longer than any the lab names (1 KiB).
    private static func text(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> String? {
        guard let bytes, count > 0, count < 1024 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
}

extension ClientVerifyState {
    /// The revocation decision of a client that checks revocation, inside the handshake (its status callback):
    /// `nil` trusts, otherwise why it refuses. The leaf's status may come stapled; without a staple, and for every
    /// CA certificate below the trust anchor (a staple speaks for the leaf alone), the client fetches the status
    /// the certificate names (its OCSP responder, then its CRL). Hard-fail refuses unless validly signed, current
    /// evidence shows each certificate good (one that names neither responder nor CRL has no status to demand);
    /// soft-fail refuses only validly signed, current proof that one is revoked, or a Must-Staple leaf served
    /// without a staple (RFC 7633).
    func revocationRefusal(_ ssl: OpaquePointer) -> String? {
        let revocation = policy.revocation
        guard revocation != .none else { return nil }
        // trusts-revoked-backup-pin: a pin match stands in for the revocation check (of the whole chain).
        if policy.traits.revocationSkippedWhenPinned && pinMatch != nil { return nil }
        let chain = RevocationChain(ssl)
        /// Fetches the status of the certificate at `index`: a reason to refuse, or nil.
        func fetched(_ index: Int, _ prefix: String) -> String? {
            switch ClientRevocationFetch.decide(
                chain, index: index, responder: revocationResponder, deadline: fetchDeadline)
            {
            case nil: return nil  // it names no OCSP responder and no CRL: there is no status to demand
            case .good?: return nil
            case .revoked(let why)?: return "\(prefix)\(why)"
            case .unavailable(let why)?:
                guard revocation == .hard else { return nil }
                return "\(prefix)no status could be fetched (\(why))"
            }
        }
        var refusal: String?
        switch chain.stapleEvidence() {
        case .good: break
        case .notStapled, .notStapledNoResponder:
            // None stapled: fetch the status the leaf names (OCSP, then its CRL). Soft-fail refuses only proof of
            // revocation; hard-fail also refuses when no current, validly signed status says good.
            refusal = fetched(0, "no OCSP response was stapled, and ")
        case let evidence:
            if evidence == .revoked || evidence == .mustStapleMissing || revocation == .hard {
                refusal = evidence.stapleProblem
            }
        }
        // The leaf passed: every CA certificate between it and the trust anchor, from the leaf's issuer up.
        var index = 1
        while refusal == nil && index < chain.certificatesBelowAnchor {
            refusal = fetched(index, "the issuing CA certificate at depth \(index): ")
            index += 1
        }
        return refusal.map { "certificate revocation check (\(revocation)-fail): \($0)" }
    }
}
