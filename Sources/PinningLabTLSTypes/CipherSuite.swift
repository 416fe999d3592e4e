/// The TLS cipher suites a scenario can restrict a server to, by IANA name, with what each engine calls them.
///
/// OpenSSL takes suite names (`SSL_CTX_set_cipher_list` for TLS 1.2 and older, `SSL_CTX_set_ciphersuites` for
/// TLS 1.3). GnuTLS takes a priority string of key exchanges, ciphers and MACs, not suites: a list of suites becomes
/// the union of their parts, which also allows a combination of two listed suites' parts (listing
/// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256` and `TLS_RSA_WITH_AES_256_GCM_SHA384` also allows ECDHE-RSA with
/// AES-256-GCM on GnuTLS). Restrict TLS 1.3 by listing TLS 1.3 suites: on OpenSSL a TLS 1.2 list leaves TLS 1.3 alone.
public struct CipherSuite: Hashable, Sendable {
    /// e.g. `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`.
    public let ianaName: String
    /// e.g. `ECDHE-ECDSA-AES128-GCM-SHA256`, or the IANA name for TLS 1.3 suites.
    public let openSSLName: String
    public let isTLS13: Bool
    /// GnuTLS priority keywords: key exchange (none for TLS 1.3), cipher, MAC.
    package let gnuTLSKeyExchange: String?
    package let gnuTLSCipher: String
    package let gnuTLSMAC: String

    /// Every suite PinningLab can serve on both engines.
    public static let all: [CipherSuite] = [
        tls13("TLS_AES_128_GCM_SHA256", "AES-128-GCM"),
        tls13("TLS_AES_256_GCM_SHA384", "AES-256-GCM"),
        tls13("TLS_CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305"),
        tls12(
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA", "AES-128-GCM",
            "AEAD"),
        tls12(
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA", "AES-256-GCM",
            "AEAD"),
        tls12(
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"),
        tls12(
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"),
        tls12(
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA",
            "CHACHA20-POLY1305", "AEAD"),
        tls12(
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-RSA",
            "CHACHA20-POLY1305", "AEAD"),
        tls12("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"),
        tls12("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"),
        tls12("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"),
        tls12("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"),
        tls12(
            "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-ECDSA", "AES-128-CBC",
            "SHA256"),
        tls12("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256"),
        tls12(
            "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA", "AES-256-CBC",
            "SHA384"),
        tls12("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "ECDHE-RSA-AES256-SHA384", "ECDHE-RSA", "AES-256-CBC", "SHA384"),
        tls12("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA", "AES-128-GCM", "AEAD"),
        tls12("TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA", "AES-256-GCM", "AEAD"),
        // Static RSA key exchange: no forward secrecy (the ATS and OWASP downgrade lessons).
        tls12("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256", "RSA", "AES-128-GCM", "AEAD"),
        tls12("TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384", "RSA", "AES-256-GCM", "AEAD"),
        tls12("TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA", "RSA", "AES-128-CBC", "SHA1"),
        tls12("TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA", "RSA", "AES-256-CBC", "SHA1"),
        tls12("TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256", "RSA", "AES-128-CBC", "SHA256"),
        tls12("TLS_RSA_WITH_AES_256_CBC_SHA256", "AES256-SHA256", "RSA", "AES-256-CBC", "SHA256"),
        tls12("TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA", "RSA", "3DES-CBC", "SHA1"),
    ]

    private static let byName: [String: CipherSuite] = Dictionary(uniqueKeysWithValues: all.map { ($0.ianaName, $0) })

    /// The suite called `ianaName`, or `nil` when PinningLab does not know it.
    public static func named(_ ianaName: String) -> CipherSuite? { byName[ianaName] }

    private static func tls13(_ iana: String, _ cipher: String) -> CipherSuite {
        CipherSuite(
            ianaName: iana, openSSLName: iana, isTLS13: true, gnuTLSKeyExchange: nil, gnuTLSCipher: cipher,
            gnuTLSMAC: "AEAD")
    }

    private static func tls12(_ iana: String, _ openSSL: String, _ kx: String, _ cipher: String, _ mac: String)
        -> CipherSuite
    {
        CipherSuite(
            ianaName: iana, openSSLName: openSSL, isTLS13: false, gnuTLSKeyExchange: kx, gnuTLSCipher: cipher,
            gnuTLSMAC: mac)
    }
}
