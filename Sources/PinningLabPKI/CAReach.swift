// What a CA can vouch for, read from its certificate: the one source of every text that describes a root or CA to
// a user (the .mobileconfig payloads, the README beside an export, `pinlab pki show`, the export warnings).
import Foundation
import SwiftASN1
import X509

/// The reach of a certificate as a CA, decoded from its own extensions (basicConstraints and nameConstraints),
/// never from the spec or a name: what a holder of its key could make a device that trusts it accept.
///
/// Name constraints follow RFC 5280 §4.2.1.10: a DNS subtree `example.com` permits `example.com` itself and every
/// name with more labels on the left (`api.example.com`, `a.b.example.com`); an IP subtree is an address and a mask.
public struct CAReach: Sendable, Hashable {
    /// Whether basicConstraints says CA.
    public var isCA: Bool
    /// Permitted subtrees as text: DNS names as written, IP ranges as `address/prefix` (`127.0.0.0/8`, `::1/128`).
    public var permitted: [String]
    /// Excluded subtrees, in the same form.
    public var excluded: [String]
    /// Whether ``permitted`` and ``excluded`` are an issuer's (the certificate itself carries none, but the chain
    /// above it does: an intermediate under lab-root reaches only what lab-root permits).
    public var inherited: Bool = false
    /// Whether more than one certificate of the chain carries constraints (then they all apply, and the reach is
    /// narrower than ``permitted`` alone).
    public var furtherLimited: Bool = false

    /// Whether the certificate carries any name constraint.
    public var isConstrained: Bool { !permitted.isEmpty || !excluded.isEmpty }

    public init(isCA: Bool, permitted: [String], excluded: [String]) {
        self.isCA = isCA
        self.permitted = permitted
        self.excluded = excluded
    }

    /// Decodes `certificateDER` and the certificates of its issuers (`issuersDER`, nearest first, up to the root):
    /// the constraints are the certificate's own, else the nearest issuer's. Throws when one is not a certificate
    /// or its extensions cannot be read.
    public init(certificateDER: [UInt8], issuersDER: [[UInt8]] = []) throws {
        do {
            let cert = try Certificate(derEncoded: certificateDER)
            let basic = try cert.extensions.basicConstraints
            if case .isCertificateAuthority = basic { isCA = true } else { isCA = false }
            var sets: [(permitted: [String], excluded: [String])] = []
            for der in [certificateDER] + issuersDER {
                let nc = try Certificate(derEncoded: der).extensions.nameConstraints
                let p = (nc?.permittedSubtrees ?? []).map(Self.text)
                let e = (nc?.excludedSubtrees ?? []).map(Self.text)
                sets.append((p, e))
            }
            let constrained = sets.enumerated().filter { !$0.element.permitted.isEmpty || !$0.element.excluded.isEmpty }
            permitted = constrained.first?.element.permitted ?? []
            excluded = constrained.first?.element.excluded ?? []
            inherited = (constrained.first?.offset ?? 0) > 0
            furtherLimited = constrained.count > 1
        } catch {
            throw PKIError(
                .issuanceFailed, "cannot read the certificate's extensions: \(error)",
                fix: "re-issue it with `pinlab pki init --reissue`")
        }
    }

    /// One general name of a constraint as text.
    static func text(_ name: GeneralName) -> String {
        switch name {
        case .dnsName(let d): return d
        case .ipAddress(let o):
            let bytes = Array(o.bytes)
            let half = bytes.count / 2
            guard half == 4 || half == 16 else { return "IP \(bytes.hexString)" }
            let prefix = bytes[half...].reduce(0) { $0 + $1.nonzeroBitCount }
            return "\(formatIP(Array(bytes[..<half])))/\(prefix)"
        case .rfc822Name(let e): return "email \(e)"
        case .uniformResourceIdentifier(let u): return "URI \(u)"
        case .directoryName(let dn): return "DN \(dn)"
        default: return "\(name)"
        }
    }

    /// One sentence on what the CA can vouch for, e.g. "name-constrained to: localhost, test, 127.0.0.0/8, ::1/128
    /// (a DNS name permits itself and its subdomains)" or "NOT name-constrained: it can vouch for ANY site —
    /// remove it after the session". The mobileconfig payloads, export READMEs and `pinlab pki show` print it.
    public var summary: String {
        guard isCA else { return "not a CA: it cannot vouch for other certificates" }
        guard isConstrained else { return Self.unconstrainedSummary }
        var s =
            permitted.isEmpty
            ? "name-constrained (nothing permitted explicitly)"
            : "name-constrained to: \(permitted.joined(separator: ", "))"
        if !excluded.isEmpty { s += "; excluded: \(excluded.joined(separator: ", "))" }
        if (permitted + excluded).contains(where: { !$0.contains("/") }) {
            s += " (a DNS name permits itself and its subdomains)"
        }
        if inherited { s += ", by its issuer's constraints" }
        if furtherLimited { s += ", further limited by other constraints in its chain" }
        return s
    }

    /// The summary of a CA without name constraints.
    public static let unconstrainedSummary =
        "NOT name-constrained: it can vouch for ANY site — remove it after the session"

    /// The warning an export or an install step prints for this CA, or nil for one that needs none (not a CA).
    /// Names the verifiers that ignore a trust anchor's name constraints (the JDK, per the compatibility matrix).
    public func warning(name: String) -> String? {
        guard isCA else { return nil }
        if !isConstrained {
            return "\(name) is NOT name-constrained: whoever holds its key can impersonate ANY site to a device that "
                + "trusts it. Install it only for an interception session and remove it afterwards."
        }
        return "\(name) is \(summary). The JDK (PKIX and JSSE, so Java and Kotlin on a JVM) ignores a trust anchor's "
            + "name constraints: there it vouches for ANY site (see the compatibility matrix)."
    }
}

extension Identity {
    /// What this certificate can vouch for as a CA, read from its extensions. See ``CAReach``.
    /// The constraints of its issuers count: an intermediate under lab-root reaches only what lab-root permits.
    public func reach() throws -> CAReach {
        try CAReach(certificateDER: certificateDER, issuersDER: isSelfSigned ? [] : issuerChainDER + [rootDER])
    }
}

extension LabPKI {
    /// Whether `identity`'s key was derived from a seed (by an earlier PinningLab, for a CA: this one never seeds
    /// a CA key).
    public func isSeeded(_ identity: Identity) -> Bool { keyOrigins[identity.keyName]?.hasPrefix("seed:") == true }

    /// Refuses to hand out `root` for installation on a device (an export, a trust file) when its key was
    /// derived from a seed and its certificate has no name constraints: whoever knows the seed could then
    /// impersonate any site to that device.
    public func checkInstallable(_ root: Identity) throws {
        guard isSeeded(root), let reach = try? root.reach(), reach.isCA, !reach.isConstrained else { return }
        let fix =
            root.keyName == "proxy-root"
            ? "run `pinlab pki proxy-root --rekey --dir \(directory.path)` (a new random key), then export again"
            : "run `pinlab pki init --force --dir \(directory.path)` (new random keys; every pin changes), then export again"
        throw PKIError(
            .seededUnconstrainedRoot,
            "its key (\(root.keyName)) was derived from a seed and its certificate is not name-constrained: "
                + "whoever knows the seed could impersonate ANY site to a device that trusts it",
            file: directory.appendingPathComponent("state.json").path, entity: root.name, fix: fix)
    }
}
