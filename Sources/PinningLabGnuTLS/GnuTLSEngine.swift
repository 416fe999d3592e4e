internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
public import PinningLabCore

/// The GnuTLS (3.7) fixture engine.
///
/// Importing a chain into GnuTLS credentials sorts and checks it, so this engine never does: a certificate
/// retrieve callback (`gnutls_certificate_set_retrieve_function2`) hands GnuTLS, per handshake, the
/// `gnutls_pcert_st` list of the identity chosen by SNI, exactly in the configured order, and the key. A handshake
/// hook records the Certificate messages that cross the wire; client certificates are verified in a session
/// verify function (trust list + TLS client EKU) that also picks the alert to send.
public struct GnuTLSEngine: TLSEngine {
    public init() {}
    public var name: String { "gnutls" }
    public var libraryVersion: String {
        "GnuTLS " + (gnutls_check_version(nil).map { String(cString: $0) } ?? "?")
    }

    public func makeContext(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext {
        try GnuTLSServerContext(configuration)
    }
}

func gnutlsErrorText(_ code: Int32) -> String {
    let name = gnutls_strerror_name(code).map { String(cString: $0) } ?? "\(code)"
    let text = gnutls_strerror(code).map { String(cString: $0) } ?? ""
    return "\(name): \(text)"
}
