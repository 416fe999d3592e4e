internal import CPinningLabGnuTLS
internal import PinningLabCore
internal import PinningLabPKI  // PostQuantumKey

extension GnuTLSServerSession {
    /// The key-exchange group of the handshake (``TLSSessionDetails/negotiatedGroup``): `gnutls_group_get`, named by
    /// `gnutls_group_get_name` (`X25519`, `SECP256R1`; GnuTLS 3.8 built with ML-KEM: `X25519-MLKEM768`). Nothing for a
    /// key exchange without a group (TLS 1.2 RSA, a TLS 1.3 resumption by PSK alone).
    func recordNegotiatedGroup() {
        let group = gnutls_group_get(session)
        guard group.rawValue != 0, let name = gnutls_group_get_name(group) else { return }
        details.negotiatedGroup = String(cString: name)
    }
}

extension GnuTLSServerSession {
    /// A cell whose key this GnuTLS cannot load because it is ML-DSA (GnuTLS 3.7, or 3.8 built without ML-DSA) is
    /// `unsupported`, with a reason naming the library and version; nil for any other key.
    static func unsupportedKey(_ identity: ServerIdentity, label: String) -> TLSEngineError? {
        guard
            let why = PostQuantumKey.unsupportedReason(
                pkcs8: identity.privateKeyPKCS8DER, library: "GnuTLS " + String(cString: gnutls_check_version(nil)),
                needs: "a GnuTLS built with ML-DSA")
        else { return nil }
        return TLSEngineError(.unsupported, "\(label): \(why)")
    }
}
