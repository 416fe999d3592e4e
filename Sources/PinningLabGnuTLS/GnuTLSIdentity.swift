internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
internal import PinningLabCore

/// The parsed chain and key of one identity: a C array of `gnutls_pcert_st` and a `gnutls_privkey_t`.
final class GnuTLSIdentity {
    let pcerts: UnsafeMutablePointer<gnutls_pcert_st>
    let count: Int
    private var imported = 0
    var key: gnutls_privkey_t? = nil

    init(_ identity: ServerIdentity) throws(TLSEngineError) {
        let label = identity.name.isEmpty ? "the identity" : "identity '\(identity.name)'"
        // GnuTLS has no hook for an extension in a TLS 1.3 certificate entry (where signed_certificate_timestamp
        // goes); gnutls_session_ext_register reaches the TLS 1.2 ServerHello only. Saying so beats serving a
        // certificate without the SCTs the scenario is about.
        if identity.signedCertificateTimestampList != nil {
            throw TLSEngineError(
                .unsupported,
                "\(label): GnuTLS cannot send signed certificate timestamps in the TLS extension (no API for TLS 1.3 certificate-entry extensions); use the OpenSSL engine"
            )
        }
        count = identity.chainDER.count
        pcerts = .allocate(capacity: count)
        for (i, der) in identity.chainDER.enumerated() {
            let rc = der.withUnsafeBufferPointer { buf -> Int32 in
                var datum = gnutls_datum_t(
                    data: UnsafeMutablePointer(mutating: buf.baseAddress), size: UInt32(buf.count))
                return gnutls_pcert_import_x509_raw(pcerts + i, &datum, GNUTLS_X509_FMT_DER, 0)
            }
            guard rc >= 0 else {
                if let unsupported = GnuTLSServerSession.unsupportedKey(identity, label: label) { throw unsupported }
                throw TLSEngineError(
                    .invalidConfiguration, "\(label): certificate \(i + 1) is not DER: \(gnutlsErrorText(rc))")
            }
            imported += 1
        }
        var k: gnutls_privkey_t? = nil
        guard gnutls_privkey_init(&k) >= 0, let k else { throw TLSEngineError(.library, "gnutls_privkey_init failed") }
        key = k
        let rc = identity.privateKeyPKCS8DER.withUnsafeBufferPointer { buf -> Int32 in
            var datum = gnutls_datum_t(data: UnsafeMutablePointer(mutating: buf.baseAddress), size: UInt32(buf.count))
            return gnutls_privkey_import_x509_raw(k, &datum, GNUTLS_X509_FMT_DER, nil, 0)
        }
        guard rc >= 0 else {
            if let unsupported = GnuTLSServerSession.unsupportedKey(identity, label: label) { throw unsupported }
            throw TLSEngineError(
                .invalidConfiguration, "\(label): the private key is not PKCS#8 DER: \(gnutlsErrorText(rc))")
        }
    }

    deinit {
        for i in 0..<imported { gnutls_pcert_deinit(pcerts + i) }
        pcerts.deallocate()
        if let key { gnutls_privkey_deinit(key) }
    }
}
