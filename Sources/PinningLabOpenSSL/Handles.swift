// The one owner class per OpenSSL handle, shared by the fixture server, PKCS#12 and the reference clients
// (PinningLabReferenceClients, hence `package`: never `public`, no public API names a C type): each wraps one
// pointer, frees it in `deinit`, and hands `pointer` to OpenSSL calls that take their own reference
// (`SSL_CTX_use_certificate`, `X509_STORE_add_cert`, `sk_X509_push` after an up-ref …).
internal import CPinningLabOpenSSL

/// Drains this thread's OpenSSL error queue into one line ("" when the queue is empty). Call it in the same
/// synchronous call that failed: the queue is per thread and the next OpenSSL call may clear it.
package func openSSLErrorQueue() -> String {
    var parts: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return parts.joined(separator: "; ")
}

/// The drained error queue, or "unknown OpenSSL error" when OpenSSL left nothing in it.
package func drainOpenSSLErrors() -> String {
    let text = openSSLErrorQueue()
    return text.isEmpty ? "unknown OpenSSL error" : text
}

/// Runs an OpenSSL `d2i_*` decoder over all of `der`; nil when it fails (the reason is on the error queue).
package func decodeDER(
    _ der: [UInt8], _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
) -> OpaquePointer? {
    der.withUnsafeBufferPointer { buffer in
        var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
        return d2i(&cursor, buffer.count)
    }
}

/// Runs an OpenSSL `i2d_*` encoder twice (length, then bytes); nil when it fails or the lengths disagree.
package func encodeDER(_ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
    let length = i2d(nil)
    guard length > 0 else { return nil }
    var out = [UInt8](repeating: 0, count: Int(length))
    let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return i2d(&cursor)
    }
    return written == length ? out : nil
}

/// The one owner of an `X509*`. Certificates are not modified once parsed, and OpenSSL's reference counts are
/// atomic, so a handle may be shared between threads (the decoded-object cache does).
package final class X509Handle: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Parses DER; nil when `der` is not a certificate (the reason is on the error queue).
    package init?(der: [UInt8]) {
        guard let parsed = decodeDER(der, { d2i_X509(nil, $0, $1) }) else { return nil }
        pointer = parsed
    }

    /// Adopts a certificate the caller owned; this handle frees it.
    package init(adopting owned: OpaquePointer) { pointer = owned }

    /// Takes a reference: `borrowed` stays owned by whoever held it, this handle holds one more.
    package init(retaining borrowed: OpaquePointer) {
        X509_up_ref(borrowed)
        pointer = borrowed
    }

    deinit { X509_free(pointer) }

    /// The certificate in DER.
    package var der: [UInt8] { encodeDER { i2d_X509(pointer, $0) } ?? [] }
}

/// The one owner of an `EVP_PKEY*`. Not modified once parsed; shareable like `X509Handle`.
package final class PrivateKeyHandle: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Parses a PKCS#8 (or traditional) DER private key; nil when it is not one.
    package init?(der: [UInt8]) {
        guard let parsed = decodeDER(der, { d2i_AutoPrivateKey(nil, $0, $1) }) else { return nil }
        pointer = parsed
    }

    /// Adopts a key the caller owned; this handle frees it.
    package init(adopting owned: OpaquePointer) { pointer = owned }

    deinit { EVP_PKEY_free(pointer) }

    /// The key as PKCS#8 DER, or nil when OpenSSL cannot encode it.
    package var pkcs8DER: [UInt8]? {
        guard let info = EVP_PKEY2PKCS8(pointer) else { return nil }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return encodeDER { i2d_PKCS8_PRIV_KEY_INFO(info, $0) }
    }
}

/// The one owner of an `SSL_CTX*` (which owns its `X509_STORE`). Configured on one thread, then only read:
/// `SSL_new` on a shared context is thread-safe.
/// The one owner of a reference to an `SSL_SESSION` (a client's resumable session). Sessions are reference-counted
/// and not changed once a handshake has produced them, so a handle may be kept in a cell's session cache and used
/// by the next connection on another thread.
package final class SSLSessionHandle: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Adopts a reference the caller owned (`SSL_get1_session`); this handle frees it.
    package init(adopting owned: OpaquePointer) { pointer = owned }

    deinit { SSL_SESSION_free(pointer) }
}

/// The one owner of an `SSL_CTX*`. A class, not a `Locked` value: the pointer must be freed exactly once, when the
/// last holder lets go. Configured before it is shared and only read afterwards (`SSL_new` on a shared context is
/// thread-safe), so it is `Sendable` on that promise.
package final class SSLContextHandle: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// A new context for the server or the client side; nil when OpenSSL cannot allocate one.
    package init?(server: Bool) {
        guard let context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else { return nil }
        pointer = context
    }

    deinit { SSL_CTX_free(pointer) }
}

/// The one owner of a `STACK_OF(X509)` and of the references it holds.
package final class X509StackHandle {
    package let pointer: OpaquePointer

    package init?() {
        guard let stack = cpl_p12_sk_X509_new_null() else { return nil }
        pointer = stack
    }

    /// Adopts a stack the caller owned (with its certificates).
    package init(adopting owned: OpaquePointer) { pointer = owned }

    deinit { cpl_p12_sk_X509_pop_free(pointer) }

    /// Pushes one more reference to `certificate`; false when OpenSSL could not grow the stack.
    package func push(_ certificate: X509Handle) -> Bool {
        X509_up_ref(certificate.pointer)
        guard cpl_p12_sk_X509_push(pointer, certificate.pointer) > 0 else {
            X509_free(certificate.pointer)
            return false
        }
        return true
    }

    /// Each certificate, as a handle of its own.
    package var certificates: [X509Handle] {
        (0..<cpl_p12_sk_X509_num(pointer)).compactMap { i in
            cpl_p12_sk_X509_value(pointer, i).map { X509Handle(retaining: $0) }
        }
    }
}

/// The one owner of a `PKCS12*`.
package final class PKCS12Handle {
    package let pointer: OpaquePointer

    package init?(der: [UInt8]) {
        guard let parsed = decodeDER(der, { d2i_PKCS12(nil, $0, $1) }) else { return nil }
        pointer = parsed
    }

    package init(adopting owned: OpaquePointer) { pointer = owned }

    deinit { PKCS12_free(pointer) }

    package var der: [UInt8]? { encodeDER { i2d_PKCS12(pointer, $0) } }
}
