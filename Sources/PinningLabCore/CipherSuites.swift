import PinningLabTLSTypes

extension CipherPreferences {
    /// A restriction to the suites named by IANA, for both engines. Every name must be known (``CipherSuite/all``):
    /// an unknown one is an error rather than a restriction that silently disappears.
    public init(ianaSuites names: [String]) throws(TLSEngineError) {
        var suites: [CipherSuite] = []
        for name in names {
            guard let s = CipherSuite.named(name) else {
                throw TLSEngineError(
                    .invalidConfiguration,
                    "'\(name)' is not a cipher suite PinningLab can serve on both engines; known IANA names: \(CipherSuite.all.map(\.ianaName).joined(separator: ", "))"
                )
            }
            if !suites.contains(s) { suites.append(s) }
        }
        guard !suites.isEmpty else {
            self.init()
            return
        }
        let tls12 = suites.filter { !$0.isTLS13 }
        let tls13 = suites.filter(\.isTLS13)
        func unique(_ xs: [String]) -> [String] { xs.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        var gnutls = ["NORMAL", "-CIPHER-ALL", "-MAC-ALL"]
        if !tls12.isEmpty { gnutls += ["-KX-ALL"] + unique(tls12.compactMap(\.gnuTLSKeyExchange)).map { "+" + $0 } }
        gnutls += unique(suites.map(\.gnuTLSCipher)).map { "+" + $0 }
        gnutls += unique(suites.map(\.gnuTLSMAC)).map { "+" + $0 }
        self.init(
            openSSLCipherList: tls12.isEmpty ? nil : tls12.map(\.openSSLName).joined(separator: ":"),
            openSSLCipherSuites: tls13.isEmpty ? nil : tls13.map(\.openSSLName).joined(separator: ":"),
            gnuTLSPriority: gnutls.joined(separator: ":"))
    }
}
