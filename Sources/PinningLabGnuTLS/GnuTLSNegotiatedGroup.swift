internal import CPinningLabGnuTLS
internal import PinningLabCore
internal import PinningLabPKI  // PostQuantumKey
internal import PinningLabTLSTypes  // ClientHelloOffers

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

extension GnuTLSServerSession {
    /// What the ClientHello offered (``TLSSessionDetails/offered``), from the message the handshake hook hands over
    /// before GnuTLS processes it: the first ClientHello's offers are kept; a second one (after a HelloRetryRequest)
    /// marks the retry.
    func recordOffers(clientHello message: UnsafePointer<gnutls_datum_t>?) {
        guard let message, let data = message.pointee.data else { return }
        if details.offered != nil {
            details.helloRetryRequest = true
            return
        }
        details.offered = ClientHelloOffers.parse(UnsafeRawBufferPointer(start: data, count: Int(message.pointee.size)))
    }
}

extension GnuTLSServerContext {
    /// GnuTLS's priority keywords of the groups it may know (the hybrids from 3.8 built with ML-KEM).
    static let groupKeywords: [UInt16: String] = [
        0x0017: "SECP256R1", 0x0018: "SECP384R1", 0x0019: "SECP521R1", 0x001d: "X25519", 0x001e: "X448",
        0x0100: "FFDHE2048", 0x0101: "FFDHE3072", 0x0102: "FFDHE4096", 0x0103: "FFDHE6144", 0x0104: "FFDHE8192",
        0x11eb: "SECP256R1-MLKEM768", 0x11ec: "X25519-MLKEM768", 0x11ed: "SECP384R1-MLKEM1024",
    ]

    /// The part of the priority string that restricts the groups to `groups` (``ServerTLSConfiguration/groups``),
    /// in order. A group this GnuTLS cannot name makes the server `unsupported`; one it names but was not built with
    /// is refused by `gnutls_priority_init`, also as `unsupported`.
    static func groupPriority(_ groups: [TLSCodePoint]) throws(TLSEngineError) -> String {
        var out = ":-GROUP-ALL"
        for group in groups {
            guard let keyword = groupKeywords[group.value], gnutls_group_get_id("\(keyword)") != GNUTLS_GROUP_INVALID
            else {
                throw TLSEngineError(
                    .unsupported,
                    "GnuTLS \(String(cString: gnutls_check_version(nil))) cannot offer the key-exchange group \(group)")
            }
            out += ":+GROUP-" + keyword
        }
        return out
    }
}
