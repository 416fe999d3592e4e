internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
internal import PinningLabCore

/// The one owner of a `gnutls_certificate_credentials_t`.
final class GnuTLSCredentials {
    let pointer: gnutls_certificate_credentials_t

    init() throws(TLSEngineError) {
        var credentials: gnutls_certificate_credentials_t? = nil
        let rc = gnutls_certificate_allocate_credentials(&credentials)
        guard rc >= 0, let credentials else {
            throw TLSEngineError(.library, "gnutls_certificate_allocate_credentials: \(gnutlsErrorText(rc))")
        }
        pointer = credentials
    }

    deinit { gnutls_certificate_free_credentials(pointer) }
}
