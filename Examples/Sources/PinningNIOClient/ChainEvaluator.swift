import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import SwiftASN1
import X509
import _CryptoExtras

/// Validates the presented chain, then matches pins. Runs inside swift-nio-ssl's custom verification callback,
/// which replaces BoringSSL's own checks: so everything a browser checks is checked here.
final class ChainEvaluator: Sendable {
    let host: String
    let roots: [Certificate]
    let pins: Set<PinningHTTPSClient.Pin>
    let pinMatching: PinningHTTPSClient.PinMatching
    private let recorded = NIOLockedValueBox<PinningClientError?>(nil)

    init(
        host: String, roots: [Certificate], pins: Set<PinningHTTPSClient.Pin>,
        pinMatching: PinningHTTPSClient.PinMatching
    ) {
        self.host = host
        self.roots = roots
        self.pins = pins
        self.pinMatching = pinMatching
    }

    /// The reason of the last refusal, if this evaluator refused.
    var refusal: PinningClientError? { recorded.withLockedValue { $0 } }

    func evaluate(_ presentedNIO: [NIOSSLCertificate]) async -> NIOSSLVerificationResultWithMetadata {
        do {
            let validated = try await validatedChain(presentedNIO)
            return .certificateVerified(
                VerificationMetadata(
                    ValidatedCertificateChain(
                        try validated.map { try NIOSSLCertificate(bytes: try derBytes($0), format: .der) })))
        } catch let e as PinningClientError {
            recorded.withLockedValue { $0 = e }
            return .failed
        } catch {
            recorded.withLockedValue { $0 = PinningClientError(.untrusted, "\(error)") }
            return .failed
        }
    }

    private func validatedChain(_ presentedNIO: [NIOSSLCertificate]) async throws -> [Certificate] {
        let presented = try presentedNIO.map { try Certificate(derEncoded: $0.toDERBytes()) }
        guard let leaf = presented.first else { throw PinningClientError(.untrusted, "the server sent no certificate") }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: host, serverIP: nil)
            ModernCryptoPolicy()
        }
        let chain: [Certificate]
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore(presented.dropFirst())) {
        case .validCertificate(let valid):
            chain = Array(valid)
        case .couldNotValidate(let failures):
            let why = failures.map { "\($0.policyFailureReason)" }
            throw PinningClientError(
                .untrusted, why.isEmpty ? "no path from the leaf to a trusted root" : why.joined(separator: "; "))
        }
        guard !pins.isEmpty else { return chain }
        let candidates = pinMatching == .validatedChain ? chain : presented
        for certificate in candidates where try matches(certificate) { return chain }
        throw PinningClientError(
            .pinMismatch,
            "no pinned key or certificate in the \(pinMatching == .validatedChain ? "validated" : "presented") chain (\(chain.count) certificates)"
        )
    }

    private func matches(_ c: Certificate) throws -> Bool {
        let spki = Array(SHA256.hash(data: try spkiBytes(c)))
        let cert = Array(SHA256.hash(data: try derBytes(c)))
        return pins.contains(.spkiSHA256(spki)) || pins.contains(.certificateSHA256(cert))
    }
}

/// The DER of a certificate's whole SubjectPublicKeyInfo: what SPKI pins hash (not the bare key bits).
func spkiBytes(_ c: Certificate) throws -> [UInt8] {
    var s = DER.Serializer()
    try s.serialize(c.publicKey)
    return s.serializedBytes
}

func derBytes(_ c: Certificate) throws -> [UInt8] {
    var s = DER.Serializer()
    try s.serialize(c)
    return s.serializedBytes
}

/// The floor App Transport Security and today's browsers apply: no SHA-1 signatures, RSA keys of 2048 bits or
/// more. RFC 5280 alone allows both.
struct ModernCryptoPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        for (i, c) in chain.enumerated() {
            // The root's self-signature is not relied on.
            if i < chain.count - 1 {
                switch c.signatureAlgorithm {
                case .sha1WithRSAEncryption:
                    return .failsToMeetPolicy(reason: "\(c.subject) is signed with SHA-1")
                default: break
                }
            }
            if let rsa = _RSA.Signing.PublicKey(c.publicKey), rsa.keySizeInBits < 2048 {
                return .failsToMeetPolicy(reason: "\(c.subject) has a \(rsa.keySizeInBits)-bit RSA key (2048 at least)")
            }
        }
        return .meetsPolicy
    }
}
