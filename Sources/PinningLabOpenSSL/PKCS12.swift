internal import CPinningLabOpenSSL
public import PinningLabPKI

/// Drains OpenSSL's per-thread error queue into one line. Call in the same synchronous call that failed.
func drainOpenSSLErrors() -> String {
    var parts: [String] = []
    while true {
        let e = ERR_get_error()
        if e == 0 { break }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        parts.append(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return parts.isEmpty ? "unknown OpenSSL error" : parts.joined(separator: "; ")
}

/// What a PKCS#12 file holds.
public struct PKCS12Contents: Sendable, Hashable {
    public var privateKeyPKCS8DER: [UInt8]
    public var certificateDER: [UInt8]
    /// The other certificates in the file.
    public var chainDER: [[UInt8]]
}

/// PKCS#12 files built and read with OpenSSL, in the form Apple's `SecPKCS12Import` and every `openssl pkcs12`
/// read: key and certificates encrypted with PBE-SHA1-3DES, MAC with SHA-1, 2048 iterations.
public struct OpenSSLPKCS12: PKCS12Encoder {
    public init() {}

    public func encode(
        privateKeyPKCS8DER: [UInt8], certificateDER: [UInt8], chainDER: [[UInt8]], friendlyName: String,
        password: String
    ) throws -> [UInt8] {
        ERR_clear_error()
        guard let key = decodeKey(privateKeyPKCS8DER) else {
            throw PKIError(.pkcs12Failed, "the private key is not PKCS#8 DER: \(drainOpenSSLErrors())")
        }
        defer { EVP_PKEY_free(key) }
        guard let cert = decodeCertificate(certificateDER) else {
            throw PKIError(.pkcs12Failed, "the certificate is not DER: \(drainOpenSSLErrors())")
        }
        defer { X509_free(cert) }
        guard let stack = cpl_p12_sk_X509_new_null() else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        defer { cpl_p12_sk_X509_pop_free(stack) }
        for der in chainDER {
            guard let c = decodeCertificate(der) else {
                throw PKIError(.pkcs12Failed, "a chain certificate is not DER: \(drainOpenSSLErrors())")
            }
            if cpl_p12_sk_X509_push(stack, c) <= 0 {
                X509_free(c)
                throw PKIError(.pkcs12Failed, drainOpenSSLErrors())
            }
        }
        let nid = NID_pbe_WithSHA1And3_Key_TripleDES_CBC
        guard let p12 = PKCS12_create(password, friendlyName, key, cert, stack, nid, nid, 2048, -1, 0) else {
            throw PKIError(.pkcs12Failed, "PKCS12_create failed: \(drainOpenSSLErrors())")
        }
        defer { PKCS12_free(p12) }
        guard PKCS12_set_mac(p12, password, -1, nil, 0, 2048, EVP_sha1()) == 1 else {
            throw PKIError(.pkcs12Failed, "PKCS12_set_mac failed: \(drainOpenSSLErrors())")
        }
        let len = i2d_PKCS12(p12, nil)
        guard len > 0 else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        var out = [UInt8](repeating: 0, count: Int(len))
        let written = out.withUnsafeMutableBufferPointer { buf -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            return i2d_PKCS12(p12, &p)
        }
        guard written == len else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        return out
    }

    /// Opens a PKCS#12 file; a wrong password is a `.wrongPassword` error.
    public static func open(_ data: [UInt8], password: String, file: String? = nil) throws -> PKCS12Contents {
        ERR_clear_error()
        let p12: OpaquePointer? = data.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            return d2i_PKCS12(nil, &p, buf.count)
        }
        guard let p12 else {
            throw PKIError(.pkcs12Failed, "not a PKCS#12 file: \(drainOpenSSLErrors())", file: file,
                           fix: "export it again with `pinlab pki export NAME --format p12`")
        }
        defer { PKCS12_free(p12) }
        guard PKCS12_verify_mac(p12, password, Int32(password.utf8.count)) == 1 else {
            _ = drainOpenSSLErrors()
            throw PKIError(.wrongPassword, "the PKCS#12 password is wrong (the MAC does not verify)", file: file,
                           fix: "use the password it was exported with (the lab default is 'pinninglab')")
        }
        var key: OpaquePointer? = nil
        var cert: OpaquePointer? = nil
        var ca: OpaquePointer? = nil
        // Whatever PKCS12_parse returned is freed, including when only a key or only a certificate came back.
        defer {
            if let key { EVP_PKEY_free(key) }
            if let cert { X509_free(cert) }
            if let ca { cpl_p12_sk_X509_pop_free(ca) }
        }
        guard PKCS12_parse(p12, password, &key, &cert, &ca) == 1, let key, let cert else {
            throw PKIError(.pkcs12Failed, "cannot read the PKCS#12 contents (a key and a certificate are both needed): \(drainOpenSSLErrors())", file: file)
        }
        var chain: [[UInt8]] = []
        if let ca {
            for i in 0..<cpl_p12_sk_X509_num(ca) { chain.append(encodeCertificate(cpl_p12_sk_X509_value(ca, i))) }
        }
        guard let p8 = EVP_PKEY2PKCS8(key) else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors(), file: file) }
        defer { PKCS8_PRIV_KEY_INFO_free(p8) }
        let len = i2d_PKCS8_PRIV_KEY_INFO(p8, nil)
        var keyDER = [UInt8](repeating: 0, count: Int(max(len, 0)))
        _ = keyDER.withUnsafeMutableBufferPointer { buf -> Int32 in
            var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
            return i2d_PKCS8_PRIV_KEY_INFO(p8, &p)
        }
        return PKCS12Contents(privateKeyPKCS8DER: keyDER, certificateDER: encodeCertificate(cert), chainDER: chain)
    }
}

/// Caller owns the result (EVP_PKEY_free).
func decodeKey(_ der: [UInt8]) -> OpaquePointer? {
    der.withUnsafeBufferPointer { buf in
        var p: UnsafePointer<UInt8>? = buf.baseAddress
        return d2i_AutoPrivateKey(nil, &p, buf.count)
    }
}

/// Caller owns the result (X509_free).
func decodeCertificate(_ der: [UInt8]) -> OpaquePointer? {
    der.withUnsafeBufferPointer { buf in
        var p: UnsafePointer<UInt8>? = buf.baseAddress
        return d2i_X509(nil, &p, buf.count)
    }
}

func encodeCertificate(_ cert: OpaquePointer?) -> [UInt8] {
    let len = i2d_X509(cert, nil)
    guard len > 0 else { return [] }
    var out = [UInt8](repeating: 0, count: Int(len))
    _ = out.withUnsafeMutableBufferPointer { buf -> Int32 in
        var p: UnsafeMutablePointer<UInt8>? = buf.baseAddress
        return i2d_X509(cert, &p)
    }
    return out
}
