public import PinningLabPKI

/// Which key types a pinning library can turn into an SPKI pin: the one table of the repository. The TrustKit
/// exports (`pinlab export trustkit-plist|trustkit-swift`), `pinlab pki pins --format trustkit` and `pinlab audit`
/// read it, so a pin that can never match is said where it is written and where it is audited.
///
/// A library listed here does not hash the SubjectPublicKeyInfo DER its certificate carries: it rebuilds the SPKI
/// from the bare key bytes and a header of its own per key type, so a key outside its table has no pin at all. A
/// library that is not listed hashes the certificate's SPKI DER as it stands, and so takes any key its TLS stack
/// accepts (whether the stack accepts an ML-DSA certificate is the engines' and judges' business, not this table's).
public struct PinningLibraryKeyTypes: Sendable {
    /// The library, as its exports are named: `TrustKit`.
    public var library: String
    /// The key types it hashes, each with the first release that does (`nil`: every release).
    public var hashes: [KeyType: String?]
    /// What it does with any other key.
    public var otherwise: String
    /// Where this is read: repository, file, lines and the release it was read at.
    public var source: String
    /// The same in a few words, for comments and warnings.
    public var shortSource: String

    /// TrustKit (datatheorem/TrustKit, iOS/macOS): `TSKSPKIHashCache.m` rebuilds the SPKI from
    /// `SecKeyCopyExternalRepresentation` and a table of ASN.1 headers.
    public static let trustKit = PinningLibraryKeyTypes(
        library: "TrustKit",
        hashes: [.rsa2048: nil, .rsa3072: "3.0.5", .rsa4096: nil, .p256: nil, .p384: nil],
        otherwise:
            "hashSubjectPublicKeyInfoFromCertificate: returns nil, and the pin check, which walks the chain from the "
            + "root down to the leaf, stops there with TSKTrustEvaluationErrorCouldNotGenerateSpkiHash: the connection "
            + "is refused unless a certificate above that one matched a pin first",
        source:
            "datatheorem/TrustKit 3.0.7 (a94f27b), TrustKit/Pinning/TSKSPKIHashCache.m lines 22-51 (the ASN.1 "
            + "headers: RSA-2048, RSA-3072, RSA-4096, EC P-256, P-384), 54-77 (isKeySupported) and 231-236 (an "
            + "unsupported key: nil); TrustKit/Pinning/ssl_pin_verifier.m lines 64-89 (the walk). RSA-3072 since commit 84508a8 "
            + "(2024-03-07), first released in 3.0.5",
        shortSource: "TrustKit 3.0.7: TSKSPKIHashCache.m lines 54-77, ssl_pin_verifier.m lines 64-89")

    /// Every library with a key-type table.
    public static let all: [PinningLibraryKeyTypes] = [.trustKit]

    /// Why this library cannot hash a key of type `type` (every release, or releases before some version), or nil
    /// when every release of it can.
    public func limitation(_ type: KeyType) -> Limitation? {
        switch hashes[type] {
        case .some(.none): return nil
        case .some(.some(let since)):
            return Limitation(
                everyRelease: false,
                text:
                    "\(library) before \(since) cannot hash \(type.displayName) keys (\(library) \(since) and later can)"
            )
        case .none:
            let known = hashes.keys.sorted { $0.rawValue < $1.rawValue }.map(\.displayName).joined(separator: ", ")
            return Limitation(
                everyRelease: true,
                text: "\(library) cannot hash \(type.displayName) keys: it rebuilds the SPKI of \(known) keys only, "
                    + "and for any other key \(otherwise)")
        }
    }

    /// A key type a library cannot hash.
    public struct Limitation: Sendable, Hashable {
        /// No release can (else only releases before some version).
        public var everyRelease: Bool
        /// The sentence, without the identity.
        public var text: String
    }
}

extension PinExport {
    /// One line per pinned lab key TrustKit cannot hash ("TrustKit cannot hash ML-DSA-65 keys … leaf-pq-rekey (key
    /// KPQ, ML-DSA-65)"): the TrustKit exports carry them as comments and `pinlab export` prints them on standard
    /// error. Pins read from a pins.json (hashes only) have no key type and no line.
    public var trustKitKeyTypeWarnings: [String] {
        var pins = spkiPins
        if let b = backup, Set(pins.map(\.spkiBase64)).count < 2,
            !pins.contains(where: { $0.spkiBase64 == b.pins.spkiBase64 })
        {
            pins.append(ExportPin(identity: b, reason: .addedBackup))
        }
        return pins.compactMap { p in
            guard let id = p.identity, let l = PinningLibraryKeyTypes.trustKit.limitation(id.keyType) else {
                return nil
            }
            return "WARNING: the pin of \(p.name) can never match"
                + (l.everyRelease ? "" : " on those releases") + ": \(l.text) ("
                + PinningLibraryKeyTypes.trustKit.shortSource + ")."
        }
    }
}
