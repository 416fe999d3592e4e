import Crypto
import Foundation
import X509

extension Pins {
    /// The pins of a DER certificate that is not part of the lab PKI (a chain read from a PEM file:
    /// `pinlab audit --against CHAIN.pem`).
    public init(certificateDER der: [UInt8]) throws {
        guard let cert = try? Certificate(derEncoded: der) else {
            // A key swift-certificates cannot decode (ML-DSA): the SPKI is hashed as it stands in the DER.
            let spki = try DERBytes.spki(certificate: der)
            self.init(
                spkiSHA256: Array(SHA256.hash(data: spki)), certificateSHA256: Array(SHA256.hash(data: der)),
                rawKeySHA256: Array(SHA256.hash(data: try DERBytes.subjectPublicKey(spki: spki))))
            return
        }
        let spki = try Builder.der(cert.publicKey)
        self.init(
            spkiSHA256: Array(SHA256.hash(data: spki)), certificateSHA256: Array(SHA256.hash(data: der)),
            rawKeySHA256: Array(SHA256.hash(data: Array(cert.publicKey.subjectPublicKeyInfoBytes))))
    }
}
