import Foundation
public import PinningLabPKI
import PinningLabTLSTypes

/// One hash a client holds in one cell, and the identity it was taken from.
public struct PinEntry: Sendable, Hashable, Codable {
    /// The identity the hash was computed from (`leaf-v1`, `leaf-v3-rekey`, `lab-intermediate-a`, …).
    public var identity: String
    /// The kept key's name (`K1`, `K2`, …).
    public var keyName: String
    public var kind: PinSet.Kind
    public var sha256: [UInt8]
    public var base64: String { Data(sha256).base64EncodedString() }
    public var hex: String { sha256.hexString }
    public init(identity: String, keyName: String, kind: PinSet.Kind, sha256: [UInt8]) {
        self.identity = identity
        self.keyName = keyName
        self.kind = kind
        self.sha256 = sha256
    }
}

extension Scenario {
    /// The identities whose hashes a client built for this scenario's `client.pinned` identity holds under
    /// `profile` (DESIGN.md, "Pin profile"): the leaf's certificate, the leaf's key (with the backup key), the
    /// key of its issuing intermediate, or the key of its root. Empty for `none`.
    public func pinnedIdentities(for profile: PinProfile, in pki: LabPKI) throws -> [Identity] {
        let leaf = try pki.identity(client.pinned)
        switch profile {
        case .none:
            return []
        case .leafCert, .leafSPKI:
            return [leaf]
        case .leafSPKIBackup:
            return [leaf, try pki.identity(client.backup)]
        case .intermediateSPKI:
            return [try pki.identity(leaf.issuerName)]
        case .rootSPKI:
            return [try pki.identity(leaf.rootName)]
        default:
            throw ScenarioError(
                .unknownProfile, file: source ?? id, field: "profile",
                problem: "'\(profile)' is not a pin profile.",
                fix: "use one of \(PinProfile.all.map(\.rawValue).joined(separator: ", ")).")
        }
    }

    /// The pins of one cell, each with the identity it came from.
    public func pinEntries(for profile: PinProfile, in pki: LabPKI) throws -> [PinEntry] {
        try pinnedIdentities(for: profile, in: pki).map { id in
            profile.pinsCertificates
                ? PinEntry(
                    identity: id.name, keyName: id.keyName, kind: .certificateSHA256, sha256: id.pins.certificateSHA256)
                : PinEntry(identity: id.name, keyName: id.keyName, kind: .spkiSHA256, sha256: id.pins.spkiSHA256)
        }
    }

    /// The pins a client holds in one cell.
    public func pinSet(for profile: PinProfile, in pki: LabPKI) throws -> PinSet {
        let entries = try pinEntries(for: profile, in: pki)
        var hashes: [[UInt8]] = []
        for e in entries where !hashes.contains(e.sha256) { hashes.append(e.sha256) }
        return PinSet(kind: profile.pinsCertificates ? .certificateSHA256 : .spkiSHA256, hashes: hashes)
    }

    /// The roots of the client's trust store.
    public func trustRoots(in pki: LabPKI) throws -> [Identity] {
        try client.trust.roots.map { try pki.identity($0) }
    }

    /// The certificates on the wire, in order.
    public func servedChain(in pki: LabPKI) throws -> [Identity] {
        try server.chain.map { try pki.identity($0) }
    }

    /// The client identity to present, if any.
    public func clientIdentity(in pki: LabPKI) throws -> Identity? {
        try client.present.map { try pki.identity($0) }
    }
}
