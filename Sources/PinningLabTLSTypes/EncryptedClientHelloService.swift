/// What a server does with an Encrypted Client Hello it holds the key for (RFC 9849): accept it (the handshake is
/// the inner ClientHello's, for the inner name), or reject it with retry configs (a server whose ECH key rotated).
/// Both need a TLS library with ECH server support (OpenSSL 4.0 and later); a server that holds no ECH key rejects
/// every offer without retry configs, which is what the lab's rejection scenarios are and every engine serves.
public enum EncryptedClientHelloService: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// Decrypts the offer and completes the handshake for the inner name.
    case accept
    /// Cannot decrypt the offer (a stale config) and answers with the public name's certificate and retry configs.
    case retryConfigs = "retry-configs"

    public var description: String { rawValue }

    /// Why an engine whose library has no ECH server support cannot serve it: names what is needed and what this
    /// build runs (`library`, e.g. `OpenSSL 3.0.19 …`).
    public func unsupportedReason(library: String) -> String {
        let what =
            self == .accept ? "accepting Encrypted Client Hello" : "rejecting Encrypted Client Hello with retry configs"
        return "\(what) needs an ECH-capable server (OpenSSL 4.0 or later); this build runs \(library)"
    }
}
