public import PinningLabPKI

/// The names, roles and issuers of a PKI's identities: what a scenario may refer to. Built from an issued
/// `LabPKI`, or taken from the built-in table of the default lab PKI (`IdentityDirectory.lab`) when the scenarios
/// are checked without issuing any certificate.
public struct IdentityDirectory: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var role: Role
        /// The issuing identity; equal to `name` for self-signed certificates.
        public var issuer: String
        public init(name: String, role: Role, issuer: String) {
            self.name = name
            self.role = role
            self.issuer = issuer
        }
    }

    public private(set) var entries: [String: Entry]

    public init(_ entries: [Entry]) {
        var d: [String: Entry] = [:]
        for e in entries { d[e.name] = e }
        self.entries = d
    }

    /// The identities of an issued PKI.
    public init(identities: [Identity]) {
        self.init(identities.map { Entry(name: $0.name, role: $0.role, issuer: $0.issuerName) })
    }

    /// The entities of a PKI spec (no certificate needs to be issued).
    public init(spec: PKISpec) {
        self.init(spec.entities.map { Entry(name: $0.name, role: $0.role, issuer: $0.issuer) })
    }

    public subscript(name: String) -> Entry? { entries[name] }
    public var names: [String] { entries.keys.sorted() }
    public func names(withRole role: Role) -> [String] {
        entries.values.filter { $0.role == role }.map(\.name).sorted()
    }

    /// The root at the top of `name`'s issuer chain (the identity itself when self-signed), if the chain is known.
    public func root(of name: String) -> String? {
        var current = name
        var seen: Set<String> = []
        while let e = entries[current], seen.insert(current).inserted {
            if e.issuer == e.name { return e.name }
            current = e.issuer
        }
        return nil
    }

    /// The identities of the bundled lab PKI spec (`pki/lab.yaml`) and its opt-in post-quantum part
    /// (`pki/post-quantum.yaml`), which the catalogue's post-quantum scenarios name; names are API (DESIGN.md, "The
    /// lab PKI"). A PKI made without the part lacks ``postQuantumOnly``: cells serving those are `unsupported`.
    public static let lab: IdentityDirectory =
        (try? IdentityDirectory(spec: BuiltInLab.spec(postQuantum: true))) ?? labTable

    /// The identities only the opt-in post-quantum part of the built-in spec defines.
    public static let postQuantumOnly: IdentityDirectory = {
        guard let base = try? BuiltInLab.spec(), let all = try? BuiltInLab.spec(postQuantum: true) else {
            return IdentityDirectory([])
        }
        let classical = Set(base.entities.map(\.name))
        return IdentityDirectory(
            all.entities.filter { !classical.contains($0.name) }.map {
                Entry(name: $0.name, role: $0.role, issuer: $0.issuer)
            })
    }()

    /// The names of the default lab PKI as documented, used if the bundled spec cannot be read.
    static let labTable = IdentityDirectory([
        .init(name: "lab-root", role: .root, issuer: "lab-root"),
        .init(name: "lab-intermediate-a", role: .intermediate, issuer: "lab-root"),
        .init(name: "lab-intermediate-b", role: .intermediate, issuer: "lab-root"),
        .init(name: "lab-intermediate-a-renewed", role: .intermediate, issuer: "lab-root"),
        .init(name: "lab-intermediate-expired", role: .intermediate, issuer: "lab-root"),
        .init(name: "lab-intermediate-rsa", role: .intermediate, issuer: "lab-root"),
        .init(name: "leaf-v1", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-v2-renewal", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-v3-rekey", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-emergency-rekey", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-from-intermediate-b", role: .leaf, issuer: "lab-intermediate-b"),
        .init(name: "leaf-expired", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-not-yet-valid", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-wrong-host", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-self-signed", role: .leaf, issuer: "leaf-self-signed"),
        .init(name: "leaf-weak-rsa-1024", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-sha1", role: .leaf, issuer: "lab-intermediate-rsa"),
        .init(name: "leaf-non-ca-signer", role: .leaf, issuer: "leaf-v1"),
        .init(name: "intermediate-under-a", role: .intermediate, issuer: "lab-intermediate-a"),
        .init(name: "leaf-pathlen-violation", role: .leaf, issuer: "intermediate-under-a"),
        .init(name: "leaf-under-expired-intermediate", role: .leaf, issuer: "lab-intermediate-expired"),
        .init(name: "leaf-ocsp", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-ocsp-unknown", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-k1-revoked", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-must-staple", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-crl", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-crl-revoked", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "lab-ocsp-responder-a", role: .client, issuer: "lab-intermediate-a"),
        .init(name: "leaf-p384", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-rsa-2048", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-rsa-3072", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-rsa-4096", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "leaf-ed25519", role: .leaf, issuer: "lab-intermediate-a"),
        .init(name: "proxy-root", role: .root, issuer: "proxy-root"),
        .init(name: "proxy-leaf", role: .leaf, issuer: "proxy-root"),
        .init(name: "rogue-root", role: .root, issuer: "rogue-root"),
        .init(name: "rogue-leaf", role: .leaf, issuer: "rogue-root"),
        .init(name: "twin-intermediate-a", role: .intermediate, issuer: "proxy-root"),
        .init(name: "twin-leaf", role: .leaf, issuer: "twin-intermediate-a"),
        .init(name: "client-ca", role: .root, issuer: "client-ca"),
        .init(name: "client-valid", role: .client, issuer: "client-ca"),
        .init(name: "client-expired", role: .client, issuer: "client-ca"),
        .init(name: "client-untrusted", role: .client, issuer: "rogue-root"),
        .init(name: "client-wrong-eku", role: .client, issuer: "client-ca"),
    ])
}
