import Foundation
import PinningLabPKI

/// The PKI of a timeline: a spec written from the plan (the pool's intermediates, the next root and its
/// cross-certificate, one leaf per renewal) and issued by the lab's own PKI builder in a scratch folder.
enum TimelinePKI {
    /// The lab's keys a timeline reuses, so that the lab's pins (and every export of them) apply to its chains.
    static let sharedKeys = ["K1", "K2", "lab-root", "lab-intermediate-a", "lab-intermediate-b"]
    static let permitted = #"[localhost, test, 127.0.0.0/8, "::1/128"]"#

    static func spec(policy: CAPolicy, renewals: [Renewal]) -> String {
        var keys = ["K1", "K2"]
        for r in renewals where !keys.contains(r.key) { keys.append(r.key) }
        var y = """
            version: 1
            defaults:
              keyType: p256
              leafValidity: { notBefore: -1h, notAfter: +30d }
              caValidity: { notBefore: -1h, notAfter: +3650d }
              hosts: [localhost, api.pinning.test]
            keys:

            """
        for k in keys { y += "  \(k): p256\n" }
        y += """
            entities:
              lab-root:
                role: root
                subject: { CN: PinningLab Root CA, O: PinningLab }
                nameConstraints: { permitted: \(permitted) }
                usages: [serverAuth, ocspSigning]

            """
        for (i, name) in policy.poolNames(root: 1).enumerated() {
            let cn =
                i == 0
                ? "PinningLab Intermediate A"
                : i == 1 ? "PinningLab Intermediate B" : "PinningLab Pool Intermediate \(i + 1)"
            y += intermediate(name, issuer: "lab-root", cn: cn)
        }
        if policy.hasRollover {
            let h = policy.nextHierarchy
            let rootCN = h?.rootCommonName ?? "PinningLab Root CA 2"
            let rootKey = h.map { "\n    keyType: \($0.rootKeyType)" } ?? ""
            y += """
                  lab-root-2:
                    role: root
                    subject: { CN: \(rootCN), O: PinningLab }\(rootKey)
                    nameConstraints: { permitted: \(permitted) }
                    usages: [serverAuth, ocspSigning]
                  lab-root-2-cross:
                    role: intermediate
                    issuer: lab-root
                    key: lab-root-2
                    subject: { CN: \(rootCN), O: PinningLab }
                    nameConstraints: { permitted: \(permitted) }
                    usages: [serverAuth, ocspSigning]

                """
            for (i, name) in policy.poolNames(root: 2).enumerated() {
                if let h {
                    // Generation Y's shape: its own key type, and serverAuth only (no clientAuth EKU).
                    let cn = "PinningLab " + name.replacingOccurrences(of: "lab-", with: "").uppercased()
                    y += intermediate(
                        name, issuer: "lab-root-2", cn: cn,
                        extra: [
                            "keyType: \(h.intermediateKeyType)",
                            "usages: [\(h.intermediateUsages.joined(separator: ", "))]",
                        ])
                } else {
                    y += intermediate(name, issuer: "lab-root-2", cn: "PinningLab Root 2 Intermediate \(i + 1)")
                }
            }
        }
        // K2's pin (the backup) needs a certificate that carries K2 even when the plan never re-keys.
        y += """
              backup-key-holder:
                role: leaf
                issuer: lab-intermediate-a
                key: K2

            """
        for r in renewals {
            y += """
                  leaf-\(r.index):
                    role: leaf
                    issuer: \(r.intermediate)
                    key: \(r.key)
                    validity: { notBefore: -1h, notAfter: +\(r.validityDays)d }

                """
        }
        return y
    }

    static func intermediate(_ name: String, issuer: String, cn: String, extra: [String] = []) -> String {
        """
          \(name):
            role: intermediate
            issuer: \(issuer)
            subject: { CN: \(cn), O: PinningLab }
            pathLength: 0
        \(extra.map { "    \($0)\n" }.joined())
        """
    }

    /// Issues the timeline's PKI in `folder`, with the lab's kept keys (when `labKeys` has them) read where they are:
    /// no copy or link of a CA key ever lands in the scratch folder, so an interrupted run leaves none in `$TMPDIR`
    /// and deleting the PKI folder still removes every lab key from the machine.
    static func issue(policy: CAPolicy, renewals: [Renewal], in folder: URL, labKeys: LabPKI?) throws -> LabPKI {
        var borrowed: [String: URL] = [:]
        if let labKeys {
            for name in sharedKeys where FileManager.default.fileExists(atPath: labKeys.keyFile(name).path) {
                borrowed[name] = labKeys.keyFile(name)
            }
        }
        let spec = try PKISpec.parse(yaml: spec(policy: policy, renewals: renewals), file: "<pinlab timeline>")
        var options = PKIOptions(directory: folder)
        options.writeIdentityFiles = false
        options.pkcs12Encoder = nil
        options.borrowedKeys = borrowed
        return try LabPKI.open(spec: spec, options: options)
    }
}
