internal import CPinningLabOpenSSL
internal import Foundation
internal import PinningLabCore
internal import PinningLabPKI  // PostQuantumKey
internal import PinningLabTLSTypes  // ClientHelloOffers

extension OpenSSLServerSession {
    /// The key-exchange group of the handshake (``TLSSessionDetails/negotiatedGroup``): `SSL_get_negotiated_group`
    /// (a macro over `SSL_ctrl`, called as such) named by `SSL_group_to_name`. OpenSSL 3.0 names the classical
    /// groups (`x25519`, `secp256r1`); OpenSSL 3.5, run by the same binary, names its hybrids (`X25519MLKEM768`).
    /// A group without a name is written as its IANA code point (`0x11ec`).
    func recordNegotiatedGroup() {
        let id = SSL_ctrl(ssl, SSL_CTRL_GET_NEGOTIATED_GROUP, 0, nil)
        guard id > 0, id <= Int(Int32.max) else { return }
        if let name = SSL_group_to_name(ssl, Int32(id)) {
            details.negotiatedGroup = String(cString: name)
        } else {
            details.negotiatedGroup = String(format: "0x%04x", Int(id) & 0xffff)
        }
    }
}

extension OpenSSLServerSession {
    /// A cell whose key this OpenSSL cannot load because it is ML-DSA (OpenSSL before 3.5) is `unsupported`, with a
    /// reason naming the library and version; nil for any other key (its failure is the key's).
    static func unsupportedKey(_ identity: ServerIdentity, label: String) -> TLSEngineError? {
        guard
            let why = PostQuantumKey.unsupportedReason(
                pkcs8: identity.privateKeyPKCS8DER, library: String(cString: OpenSSL_version(OPENSSL_VERSION)),
                needs: "OpenSSL 3.5 or later")
        else { return nil }
        ERR_clear_error()
        return TLSEngineError(.unsupported, "\(label): \(why)")
    }
}

extension OpenSSLServerSession {
    /// What the ClientHello offered (``TLSSessionDetails/offered``), read from the raw message the message callback
    /// hands over (OpenSSL 3.0 has no accessor for the offered groups): the first ClientHello's offers are kept; a
    /// second one (after a HelloRetryRequest) marks the retry.
    func recordOffers(clientHello bytes: UnsafeRawBufferPointer) {
        if details.offered != nil {
            details.helloRetryRequest = true
            return
        }
        details.offered = ClientHelloOffers.parse(bytes)
    }
}

extension OpenSSLServerSession {
    /// Restricts the context to `groups` (``ServerTLSConfiguration/groups``), by their IANA names, which OpenSSL
    /// takes as they are. A group this OpenSSL does not know (a hybrid before 3.5) makes the server `unsupported`.
    static func setGroups(_ groups: [TLSCodePoint], _ ctx: OpaquePointer) throws(TLSEngineError) {
        let library = String(cString: OpenSSL_version(OPENSSL_VERSION))
        let names = groups.map { $0.name ?? $0.hex }
        for (group, name) in zip(groups, names) where group.name == nil || cpl_srv_ctx_set1_groups_list(ctx, name) != 1
        {
            ERR_clear_error()
            let postQuantum = (0x0200...0x0202).contains(group.value) || (0x11eb...0x11ed).contains(group.value)
            throw TLSEngineError(
                .unsupported,
                postQuantum
                    ? "the key-exchange group \(group) needs OpenSSL 3.5 or later; this build runs \(library)"
                    : "\(library) cannot offer the key-exchange group \(group)")
        }
        guard cpl_srv_ctx_set1_groups_list(ctx, names.joined(separator: ":")) == 1 else {
            throw TLSEngineError(.library, "SSL_CTX_set1_groups_list: \(drainOpenSSLErrors())")
        }
    }
}
