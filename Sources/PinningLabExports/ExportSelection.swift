import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
public import PinningLabPKI

extension PinExport {
    /// The pins a client built for `scenario`'s pinned identity holds under `profile` (DESIGN.md, "Pin profile"),
    /// the root of that identity as its trust anchor, and the scenario's backup key for formats that need two pins.
    public init(
        scenario: Scenario, profile: PinProfile, in pki: LabPKI, host: String = "localhost",
        includeSubdomains: Bool = false
    ) throws(ExportError) {
        guard PinProfile.all.contains(profile) else {
            let names = PinProfile.all.map(\.rawValue)
            let hint = didYouMean(profile.rawValue, names)
            throw ExportError(
                .unknownProfile, argument: "--profile", problem: "'\(profile)' is not a pin profile.",
                fix: "use one of \(names.joined(separator: ", ")). \(hint)")
        }
        let ids: [Identity]
        let leaf: Identity
        let backup: Identity?
        do {
            ids = try scenario.pinnedIdentities(for: profile, in: pki)
            leaf = try pki.identity(scenario.client.pinned)
            backup = pki[scenario.client.backup]
        } catch {
            throw ExportError(
                .unknownIdentity, argument: "--scenario",
                problem: "scenario '\(scenario.id)' names an identity the PKI does not have: \(error)",
                fix: "open the PKI its spec was written for (--dir, --spec).")
        }
        let pins = ids.enumerated().map { i, id in
            ExportPin(identity: id, reason: profile == .leafSPKIBackup && i > 0 ? .backup : .pinned)
        }
        let anchor = pki[leaf.rootName].map { [$0] } ?? []
        self.init(
            host: host, includeSubdomains: includeSubdomains, pins: pins,
            pinsCertificates: profile.pinsCertificates, backup: backup, trustAnchors: anchor,
            origin: "scenario \(scenario.id), profile \(profile)")
        if scenario.client.trust.roots.count > 1 {
            let others = scenario.client.trust.roots.filter { $0 != leaf.rootName }
            deviceRoots = others.compactMap { pki[$0] }
            notes.append(
                "In this scenario the device also trusts \(others.joined(separator: ", ")) (a user-installed CA); "
                    + "the app itself trusts only \(anchor.map(\.name).joined(separator: ", ")).")
        }
    }

    /// The SPKI pins of the named identities (duplicate keys once), their roots as trust anchors, and the lab's
    /// backup key `backupName` (`leaf-v3-rekey`, K2) for formats that need two pins. No names: `leaf-v1` and
    /// `leaf-v3-rekey`, the pin set an app ships.
    public init(
        identities names: [String], in pki: LabPKI, host: String = "localhost", includeSubdomains: Bool = false,
        backupName: String = Scenario.defaultBackupIdentity
    ) throws(ExportError) {
        let chosen = names.isEmpty ? [Scenario.defaultPinnedIdentity, Scenario.defaultBackupIdentity] : names
        var ids: [Identity] = []
        for n in chosen {
            guard let id = pki[n] else {
                let hint = didYouMean(n, pki.identities.map(\.name))
                throw ExportError(
                    .unknownIdentity, argument: "NAMES",
                    problem: "'\(n)' is not an identity of the PKI in \(pki.directory.path).",
                    fix: "`pinlab pki list` shows the names. \(hint)")
            }
            ids.append(id)
        }
        var roots: [Identity] = []
        for id in ids { if let r = pki[id.rootName], !roots.contains(r) { roots.append(r) } }
        let isDefault = names.isEmpty
        let pins = ids.enumerated().map { i, id in
            ExportPin(identity: id, reason: isDefault && i == 1 ? .backup : .pinned)
        }
        self.init(
            host: host, includeSubdomains: includeSubdomains, pins: pins, backup: pki[backupName],
            trustAnchors: roots,
            origin: isDefault
                ? "default pin set: leaf-v1 and the backup leaf-v3-rekey"
                : "identities \(chosen.joined(separator: ", "))")
    }
}

extension Catalogue {
    /// The scenario `id` for an export, or an error naming `--scenario` and the closest id.
    public func exportScenario(_ id: String) throws(ExportError) -> Scenario {
        if let s = self[id] { return s }
        let hint = didYouMean(id, ids)
        throw ExportError(
            .unknownScenario, argument: "--scenario", problem: "'\(id)' is not a scenario of the catalogue.",
            fix: "`pinlab scenarios list` shows the \(scenarios.count) ids. \(hint)")
    }
}
