internal import CPinningLabOpenSSL
internal import Foundation
internal import PinningLabCore
internal import PinningLabPKI  // PostQuantumKey

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
