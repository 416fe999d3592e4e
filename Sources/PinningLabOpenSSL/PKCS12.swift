internal import CPinningLabOpenSSL
public import PinningLabPKI

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
        guard let key = PrivateKeyHandle(der: privateKeyPKCS8DER) else {
            throw PKIError(.pkcs12Failed, "the private key is not PKCS#8 DER: \(drainOpenSSLErrors())")
        }
        guard let cert = X509Handle(der: certificateDER) else {
            throw PKIError(.pkcs12Failed, "the certificate is not DER: \(drainOpenSSLErrors())")
        }
        guard let stack = X509StackHandle() else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        for (i, der) in chainDER.enumerated() {
            guard let c = X509Handle(der: der) else {
                throw PKIError(.pkcs12Failed, "chain certificate \(i + 1) is not DER: \(drainOpenSSLErrors())")
            }
            guard stack.push(c) else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        }
        let nid = NID_pbe_WithSHA1And3_Key_TripleDES_CBC
        guard
            let created = PKCS12_create(
                password, friendlyName, key.pointer, cert.pointer, stack.pointer, nid, nid, 2048, -1, 0)
        else {
            throw PKIError(.pkcs12Failed, "PKCS12_create failed: \(drainOpenSSLErrors())")
        }
        let p12 = PKCS12Handle(adopting: created)
        guard PKCS12_set_mac(p12.pointer, password, -1, nil, 0, 2048, EVP_sha1()) == 1 else {
            throw PKIError(.pkcs12Failed, "PKCS12_set_mac failed: \(drainOpenSSLErrors())")
        }
        guard let out = p12.der else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors()) }
        return out
    }

    /// Opens a PKCS#12 file; a wrong password is a `.wrongPassword` error.
    public static func open(_ data: [UInt8], password: String, file: String? = nil) throws -> PKCS12Contents {
        ERR_clear_error()
        guard let p12 = PKCS12Handle(der: data) else {
            throw PKIError(
                .pkcs12Failed, "not a PKCS#12 file: \(drainOpenSSLErrors())", file: file,
                fix: "export it again with `pinlab pki export NAME --format p12`")
        }
        guard PKCS12_verify_mac(p12.pointer, password, Int32(password.utf8.count)) == 1 else {
            _ = openSSLErrorQueue()
            throw PKIError(
                .wrongPassword, "the PKCS#12 password is wrong (the MAC does not verify)", file: file,
                fix: "use the password it was exported with (the lab default is 'pinninglab')")
        }
        var rawKey: OpaquePointer? = nil
        var rawCert: OpaquePointer? = nil
        var rawCA: OpaquePointer? = nil
        let parsed = PKCS12_parse(p12.pointer, password, &rawKey, &rawCert, &rawCA)
        // Whatever PKCS12_parse returned gets its owner at once, including when only a key or only a
        // certificate came back.
        let key = rawKey.map(PrivateKeyHandle.init(adopting:))
        let cert = rawCert.map { owned in X509Handle(adopting: owned) }
        let ca = rawCA.map(X509StackHandle.init(adopting:))
        guard parsed == 1, let key, let cert else {
            throw PKIError(
                .pkcs12Failed,
                "cannot read the PKCS#12 contents (a key and a certificate are both needed): \(drainOpenSSLErrors())",
                file: file)
        }
        guard let keyDER = key.pkcs8DER else { throw PKIError(.pkcs12Failed, drainOpenSSLErrors(), file: file) }
        return PKCS12Contents(
            privateKeyPKCS8DER: keyDER, certificateDER: cert.der,
            chainDER: ca?.certificates.map(\.der) ?? [])
    }
}
