internal import CPinningLabGnuTLS
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)
internal import PinningLabCore

/// The one owner of a `gnutls_priority_t`.
final class GnuTLSPriority {
    let pointer: gnutls_priority_t

    /// Parses `text`; on failure, the GnuTLS error code and the part of `text` where parsing stopped.
    init(_ text: String) throws(GnuTLSPriorityError) {
        var priority: gnutls_priority_t? = nil
        var errorPosition: UnsafePointer<CChar>? = nil
        let rc = gnutls_priority_init(&priority, text, &errorPosition)
        guard rc >= 0, let priority else {
            throw GnuTLSPriorityError(code: rc, at: errorPosition.map { String(cString: $0) } ?? "")
        }
        pointer = priority
    }

    deinit { gnutls_priority_deinit(pointer) }
}

struct GnuTLSPriorityError: Error {
    var code: Int32
    var at: String
}
