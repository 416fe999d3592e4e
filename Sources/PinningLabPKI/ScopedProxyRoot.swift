import Crypto
// The scoped proxy root: an interception root name-constrained to exactly the hosts under test.
public import Foundation
import PinningLabBase
import SwiftASN1
import X509

/// The hosts a scoped proxy root may vouch for, parsed from OkHttp-style patterns and mapped to RFC 5280 name
/// constraints (permitted dNSName subtrees; a dNSName subtree permits the name and every subdomain of it):
///
/// - `api.example.com` → `api.example.com`: that host and its subdomains (`v2.api.example.com`).
/// - `**.example.com` → `example.com`: the domain and every subdomain, exactly as the pattern means.
/// - `*.example.com` → `example.com`: name constraints cannot say "exactly one more label", so this is widened to
///   the domain and every subdomain (``notes`` says so).
/// - an IP address (`192.0.2.10`, `::1`) → that single address (`/32`, `/128`).
///
/// Without an address in the scope, every IPv4 and IPv6 address is excluded (`0.0.0.0/0`, `::/0`): a certificate
/// with only dNSName constraints would otherwise still vouch for any IP address.
public struct ProxyScope: Sendable, Hashable {
    /// The patterns as given.
    public var patterns: [String]
    /// The permitted subtrees.
    public var permitted: [NameConstraintItem]
    /// The excluded subtrees (every address, unless the scope names addresses).
    public var excluded: [NameConstraintItem]
    /// How patterns were widened, one line each.
    public var notes: [String]

    /// Parses comma-separated patterns; `option` names the flag or field in errors.
    public init(parsing text: String, option: String = "--scope") throws {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
        guard !items.isEmpty else {
            throw PKIError(
                .badScope, "no host given", field: option,
                fix: "list the hosts under test, e.g. --scope 'api.example.com,**.example.com'")
        }
        patterns = items
        permitted = []
        notes = []
        var addresses = false
        for item in items {
            var name = item
            if let ip = parseIP(item) {
                addresses = true
                let mask = [UInt8](repeating: 0xff, count: ip.count)
                if !permitted.contains(.ip(address: ip, mask: mask)) { permitted.append(.ip(address: ip, mask: mask)) }
                continue
            }
            if item.hasPrefix("**.") {
                name = String(item.dropFirst(3))
            } else if item.hasPrefix("*.") {
                name = String(item.dropFirst(2))
                notes.append(
                    "\(item): name constraints cannot say \"exactly one more label\"; the root may vouch for \(name) and every subdomain of it"
                )
            }
            let labels = name.split(separator: ".", omittingEmptySubsequences: false)
            guard HostName.isValid(name) else {
                throw PKIError(
                    .badScope, "'\(YAMLReader.excerpt(item))' is not a host name, pattern or IP address", field: option,
                    fix:
                        "write api.example.com (that host and its subdomains), **.example.com (the domain and every subdomain) or an IP address; wildcards only as a leading *. or **."
                )
            }
            guard labels.count >= 2 || name == "localhost" || name == "test" else {
                throw PKIError(
                    .badScope, "'\(item)' would cover the whole top-level domain '\(name)'",
                    field: option, fix: "name the registrable domain at least, e.g. **.example.com")
            }
            if !permitted.contains(.dns(name)) { permitted.append(.dns(name)) }
        }
        excluded =
            addresses
            ? []
            : [
                .ip(address: [0, 0, 0, 0], mask: [0, 0, 0, 0]),
                .ip(address: [UInt8](repeating: 0, count: 16), mask: [UInt8](repeating: 0, count: 16)),
            ]
    }
}

extension LabPKI {
    /// The name of the scoped proxy root: its key is `keys/proxy-root-scoped.pem`, its files
    /// `certs/proxy-root-scoped/`, its scope and certificate `proxy-root-scoped.json`.
    public static let scopedProxyRootName = "proxy-root-scoped"

    private struct ScopedState: Codable {
        var version = 1
        var scope: [String]
        var der: String
        var issuedAt: Double
    }

    private var scopedStateURL: URL { directory.appendingPathComponent("\(Self.scopedProxyRootName).json") }

    /// Issues the scoped proxy root with a NEW random key (never derived from a seed), replacing any scoped root
    /// issued before: a root certificate name-constrained to `scope`, valid for 7 days (re-issued with the same key
    /// and scope when older than a day, by ``scopedProxyRoot(now:)``).
    @discardableResult
    public func issueScopedProxyRoot(_ scope: ProxyScope, now: Date = Date()) throws -> Identity {
        let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        let key = try LabKey.generate(.p256)
        try Storage.writeAtomically(
            PEM.encode(key.pkcs8DER, label: "PRIVATE KEY"), to: keyFile(Self.scopedProxyRootName), mode: 0o600)
        return try writeScoped(scope, key: key, now: now)
    }

    /// The scoped proxy root issued before (re-issued with its key and scope when its certificate is older than a
    /// day), or nil when none was issued in this folder.
    public func scopedProxyRoot(now: Date = Date()) throws -> Identity? {
        guard Storage.exists(scopedStateURL) else { return nil }
        let lock = try DirectoryLock(directory.appendingPathComponent(".lock"))
        defer { lock.unlock() }
        guard let bytes = try Storage.readFile(scopedStateURL),
            let state = try? JSONDecoder().decode(ScopedState.self, from: Data(bytes)),
            let der = Data(base64Encoded: state.der)
        else {
            throw PKIError(
                .keyFileCorrupt, "the scoped proxy root's state is damaged", file: scopedStateURL.path,
                entity: Self.scopedProxyRootName, fix: "issue it again: pinlab pki proxy-root --scope HOSTS")
        }
        let builder = Builder(spec: spec, options: PKIOptions(directory: directory))
        let key = try builder.readKey(keyFile(Self.scopedProxyRootName), name: Self.scopedProxyRootName, type: .p256)
        let scope = try ProxyScope(parsing: state.scope.joined(separator: ","))
        let stale =
            now.timeIntervalSince1970 - state.issuedAt >= 86400 || now.timeIntervalSince1970 < state.issuedAt - 300
        let identity = try Self.scopedIdentity(der: Array(der), key: key)
        let keySPKI = Array(SHA256.hash(data: try Builder.der(key.publicKey)))
        if stale || identity.pins.spkiSHA256 != keySPKI {
            return try writeScoped(scope, key: key, now: now)
        }
        return identity
    }

    /// A CA to sign with by name: an entity of the spec, or ``scopedProxyRootName``.
    public func certificateAuthority(_ name: String) throws -> Identity {
        if name == Self.scopedProxyRootName {
            guard let id = try self.scopedProxyRoot() else {
                throw PKIError(
                    .unknownIdentity, "no scoped proxy root has been issued in \(directory.path)",
                    entity: name,
                    fix:
                        "issue one: pinlab pki proxy-root --scope 'api.example.com,**.example.com' --dir \(directory.path)"
                )
            }
            return id
        }
        let id = try identity(name)
        guard id.role.isCA else {
            throw PKIError(
                .unknownIdentity, "'\(name)' is a \(id.role), not a CA", entity: name,
                fix: "use proxy-root or \(Self.scopedProxyRootName)")
        }
        return id
    }

    private func writeScoped(_ scope: ProxyScope, key: LabKey, now: Date) throws -> Identity {
        let publicKey = try key.publicKey
        let ski = Array(Insecure.SHA1.hash(data: Array(publicKey.subjectPublicKeyInfoBytes)))
        var serial = (0..<16).map { _ in UInt8.random(in: 0...255) }
        serial[0] = (serial[0] & 0x7f) | 0x40
        func general(_ items: [NameConstraintItem]) -> [GeneralName] {
            items.map {
                switch $0 {
                case .dns(let d): return .dnsName(d)
                case .ip(let a, let m): return .ipAddress(ASN1OctetString(contentBytes: (a + m)[...]))
                }
            }
        }
        var ext = Certificate.Extensions()
        try ext.append(Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: 0), critical: true))
        try ext.append(
            Certificate.Extension(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true), critical: true))
        // TLS server certificates only: the name constraints bound DNS names and addresses, not e-mail addresses,
        // URIs or code signing; the EKU keeps the root's key from vouching for those (RFC 5280 leaves EKU in a CA
        // to the verifier; OpenSSL, Apple and Windows read it as the chain's limit).
        try ext.append(Certificate.Extension(try ExtendedKeyUsage([.serverAuth]), critical: false))
        try ext.append(
            Certificate.Extension(
                NameConstraints(permittedSubtrees: general(scope.permitted), excludedSubtrees: general(scope.excluded)),
                critical: true))
        try ext.append(Certificate.Extension(SubjectKeyIdentifier(keyIdentifier: ski[...]), critical: false))
        let subject = try DistinguishedName {
            CommonName("PinningLab Scoped Proxy CA")
            OrganizationalUnitName("Lab use only: name-constrained to the hosts under test")
            OrganizationName("PinningLab")
        }
        let cert = try Certificate(
            version: .v3, serialNumber: .init(bytes: serial), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86400),
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256, extensions: ext,
            issuerPrivateKey: try key.certificatePrivateKey)
        let der = try Builder.der(cert)
        let state = ScopedState(
            scope: scope.patterns, der: Data(der).base64EncodedString(), issuedAt: now.timeIntervalSince1970)
        try Storage.writeAtomically(Array(try JSONEncoder().encode(state)), to: scopedStateURL, mode: 0o600)
        let identity = try Self.scopedIdentity(der: der, key: key)
        try IdentityWriter(directory: directory, pkcs12Encoder: nil, pkcs12Password: "", pkcs12Roles: []).write(
            identity)
        return identity
    }

    private static func scopedIdentity(der: [UInt8], key: LabKey) throws -> Identity {
        let cert = try Certificate(derEncoded: der)
        let spki = try Builder.der(cert.publicKey)
        let name = scopedProxyRootName
        return Identity(
            name: name, role: .root, issuerName: name, keyName: name, keyType: .p256, certificateDER: der,
            privateKeyPKCS8DER: key.pkcs8DER, issuerChainDER: [], rootDER: der, rootName: name,
            subject: cert.subject.description, issuer: cert.issuer.description,
            serialHex: Array(cert.serialNumber.bytes).hexString, notBefore: cert.notValidBefore,
            notAfter: cert.notValidAfter, hosts: [],
            pins: Pins(
                spkiSHA256: Array(SHA256.hash(data: spki)), certificateSHA256: Array(SHA256.hash(data: der)),
                rawKeySHA256: Array(SHA256.hash(data: Array(cert.publicKey.subjectPublicKeyInfoBytes)))))
    }
}
