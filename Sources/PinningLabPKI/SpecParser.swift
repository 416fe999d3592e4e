// The PKI spec parser: YAML nodes to checked `EntitySpec`s, every error naming the file, line, entity and field.
internal import Crypto
internal import Foundation
import PinningLabBase
internal import Yams

/// What `defaults:` sets for entities that do not say.
struct SpecDefaults {
    var keyType = KeyType.p256
    var leafValidity = RelativeValidity(notBefore: .init(seconds: -3600), notAfter: .init(seconds: 30 * 86400))
    var caValidity = RelativeValidity(notBefore: .init(seconds: -3600), notAfter: .init(seconds: 3650 * 86400))
    var hosts: [String] = ["localhost"]
}

/// What an entity is checked against: the other names, the keys and the defaults of its spec.
struct SpecContext {
    var entityNames: Set<String>
    var keys: [String: KeyType]
    var ownKeys: [String: KeyType]
    var defaults: SpecDefaults
    var ctLogs: Set<String> = []
}

let entityFieldNames = [
    "role", "issuer", "key", "keyType", "subject", "hosts", "validity", "signature", "pathLength",
    "nameConstraints", "scope", "usages", "twinOf", "ca", "description", "scts", "tlsSCTs",
]
private let subjectAttributes = ["CN", "O", "OU", "C", "L", "ST", "emailAddress"]

struct SpecParser {
    let file: String
    let text: String

    func fail(
        _ code: PKIError.Code, _ reason: String, _ node: Node? = nil, entity: String? = nil, field: String? = nil,
        fix: String? = nil
    ) -> PKIError {
        PKIError(code, reason, file: file, line: node?.mark?.line, entity: entity, field: field, fix: fix)
    }

    /// The shared YAML node reader, raising `PKIError`s about `entity` in this file.
    func yaml(_ entity: String?) -> YAMLReader {
        YAMLReader { [file] fault, line, _, field, problem, fix in
            let code: PKIError.Code
            switch fault {
            case .syntax: code = .yamlSyntax
            case .duplicateKeys: code = .duplicateName
            case .notAMapping, .wrongType: code = .wrongType
            case .unknownField: code = .unknownField
            case .missingField: code = .missingField
            }
            func clause(_ s: String) -> String { s.hasSuffix(".") ? String(s.dropLast()) : s }
            return PKIError(
                code, clause(problem), file: file, line: line, entity: entity,
                field: field.isEmpty ? nil : field, fix: clause(fix))
        }
    }

    func mapping(_ node: Node, entity: String?, field: String?, allowed: [String]? = nil, fix: String? = nil) throws
        -> Node.Mapping
    {
        try yaml(entity).mapping(node, field ?? "", allowed: allowed, fix: fix)
    }

    func string(_ node: Node, entity: String?, field: String) throws -> String {
        try yaml(entity).string(node, field, fix: "write one value: `\(field.split(separator: ".").last ?? ""): VALUE`")
    }

    func strings(_ node: Node, entity: String?, field: String) throws -> [(String, Node)] {
        try yaml(entity).strings(node, field, fix: "write a value or a list of values: [a, b]", singleAllowed: true)
    }

    func duration(_ node: Node, entity: String, field: String) throws -> RelativeTime {
        let s = try string(node, entity: entity, field: field)
        guard let t = RelativeTime(parsing: s) else {
            throw fail(
                .badDuration, "'\(s.count > 60 ? s.prefix(60) + "…" : s)' is not a relative time of at most 1000 years",
                node,
                entity: entity, field: field,
                fix:
                    "write a signed duration such as -1h, +30d, -1d12h or now (units: s m h d w y; each number at most 1000000)"
            )
        }
        return t
    }

    func validity(_ node: Node, entity: String, field: String, base: RelativeValidity?) throws -> RelativeValidity {
        let m = try mapping(node, entity: entity, field: field, allowed: ["notBefore", "notAfter"])
        let nb = try m["notBefore"].map { try duration($0, entity: entity, field: "\(field).notBefore") }
        let na = try m["notAfter"].map { try duration($0, entity: entity, field: "\(field).notAfter") }
        guard let notBefore = nb ?? base?.notBefore else {
            throw fail(
                .missingField, "notBefore is missing", node, entity: entity, field: "\(field).notBefore",
                fix: "add notBefore: -1h")
        }
        guard let notAfter = na ?? base?.notAfter else {
            throw fail(
                .missingField, "notAfter is missing", node, entity: entity, field: "\(field).notAfter",
                fix: "add notAfter: +30d")
        }
        if notAfter.seconds <= notBefore.seconds {
            throw fail(
                .emptyValidity, "notAfter (\(notAfter)) is not after notBefore (\(notBefore))", node,
                entity: entity, field: field, fix: "make notAfter later than notBefore")
        }
        return RelativeValidity(notBefore: notBefore, notAfter: notAfter)
    }

    func keyType(_ node: Node, entity: String?, field: String) throws -> KeyType {
        let s = try string(node, entity: entity, field: field)
        let t = KeyType(rawValue: s.lowercased().replacingOccurrences(of: "-", with: ""))
        if t.rawValue == "mldsa44" {
            throw fail(
                .unknownKeyType,
                "ML-DSA-44 is not available: swift-crypto 4.5.2, which makes the lab's keys, has MLDSA65 and MLDSA87 "
                    + "but no ML-DSA-44", node, entity: entity, field: field,
                fix: "use ML-DSA-65 or ML-DSA-87 (the same FIPS 204 family, larger parameter sets)")
        }
        guard KeyType.all.contains(t) else {
            throw fail(
                .unknownKeyType, "unknown key type '\(s)'", node, entity: entity, field: field,
                fix: "use one of \(KeyType.all.map(\.rawValue).joined(separator: ", "))")
        }
        return t
    }

    func constraintItems(_ node: Node, entity: String, field: String) throws -> [NameConstraintItem] {
        try strings(node, entity: entity, field: field).map { s, n in
            if let item = parseConstraint(s) { return item }
            throw fail(
                .badNameConstraint, "'\(s)' is neither a DNS name nor an IP range", n, entity: entity,
                field: field, fix: "write a DNS name (.test, localhost) or an address/prefix (127.0.0.0/8, ::1/128)")
        }
    }

    func parse() throws -> PKISpec {
        guard let root = try yaml(nil).compose(text) else {
            throw fail(
                .missingField, "the spec is empty", nil, field: "entities",
                fix: "start from the built-in pki/lab.yaml")
        }
        let top = try mapping(
            root, entity: nil, field: nil, allowed: ["version", "defaults", "keys", "ctLogs", "entities"])
        if let v = top["version"] {
            let s = try string(v, entity: nil, field: "version")
            if s != "1" {
                throw fail(
                    .unsupportedVersion, "version \(s) is not supported", v, field: "version",
                    fix: "this PinningLab reads version 1")
            }
        }

        let defaults = try parseDefaults(top["defaults"])
        let keys = try parseKeys(top["keys"])
        guard let entitiesNode = top["entities"] else {
            throw fail(
                .missingField, "the spec has no entities", root, field: "entities",
                fix: "add an 'entities:' mapping (see the built-in pki/lab.yaml)")
        }
        let em = try mapping(entitiesNode, entity: nil, field: "entities")
        var raw: [(String, Node, Node.Mapping)] = []
        for (kn, v) in em {
            let name = kn.string ?? ""
            try checkName(name, kn, what: "entity")
            if keys[name] != nil {
                throw fail(
                    .duplicateName, "'\(name)' names both a key and an entity", kn, entity: name,
                    fix: "rename one of them")
            }
            raw.append(
                (
                    name, kn,
                    try mapping(v, entity: name, field: nil, allowed: entityFieldNames + Self.revocationFieldNames)
                ))
        }
        let entityNames = Set(raw.map(\.0))
        // Entities without `key:` own a key named after them, which others may share with `key: <entity>`.
        var ownKeys: [String: KeyType] = [:]
        for (name, _, m) in raw where m["key"] == nil {
            ownKeys[name] = try m["keyType"].map { try keyType($0, entity: name, field: "keyType") } ?? defaults.keyType
        }

        let ctLogs = try parseCTLogs(top["ctLogs"], keys: keys, entityNames: entityNames)
        let context = SpecContext(
            entityNames: entityNames, keys: keys, ownKeys: ownKeys, defaults: defaults,
            ctLogs: Set(ctLogs.map(\.name)))
        var specs: [String: EntitySpec] = [:]
        var order: [String] = []
        for (name, nameNode, m) in raw {
            specs[name] = try parseEntity(name, nameNode, m, in: context)
            order.append(name)
        }
        let digest = SHA256.hash(data: Data(text.utf8))
        var spec = PKISpec(
            file: file, keys: keys, entities: try ordered(specs, order),
            fingerprint: Array(digest).hexString, ctLogs: ctLogs)
        spec.defaults = defaults
        return spec
    }

    /// The `defaults:` mapping, over the built-in defaults.
    func parseDefaults(_ node: Node?) throws -> SpecDefaults {
        var defaults = SpecDefaults()
        guard let d = node else { return defaults }
        let m = try mapping(d, entity: nil, field: "defaults")
        for (k, v) in m {
            switch k.string ?? "" {
            case "keyType": defaults.keyType = try keyType(v, entity: nil, field: "defaults.keyType")
            case "leafValidity":
                defaults.leafValidity = try validity(
                    v, entity: "defaults", field: "leafValidity", base: defaults.leafValidity)
            case "caValidity":
                defaults.caValidity = try validity(
                    v, entity: "defaults", field: "caValidity", base: defaults.caValidity)
            case "hosts":
                defaults.hosts = try strings(v, entity: nil, field: "defaults.hosts").map { s, n in
                    try checkHost(s, n, entity: "defaults")
                }
            case let other:
                throw fail(
                    .unknownField, "unknown field '\(other)'", k, field: "defaults.\(other)",
                    fix: "defaults has keyType, leafValidity, caValidity and hosts")
            }
        }
        return defaults
    }

    /// The `keys:` mapping: named keys that entities share with `key: NAME`.
    func parseKeys(_ node: Node?) throws -> [String: KeyType] {
        var keys: [String: KeyType] = [:]
        guard let k = node else { return keys }
        let m = try mapping(k, entity: nil, field: "keys")
        for (kn, v) in m {
            let name = kn.string ?? ""
            try checkName(name, kn, what: "key")
            if v.mapping != nil {
                let vm = try mapping(v, entity: name, field: nil, allowed: ["type"])
                guard let t = vm["type"] else {
                    throw fail(
                        .missingField, "the key has no type", v, entity: name, field: "type",
                        fix: "write \(name): { type: p256 }")
                }
                keys[name] = try keyType(t, entity: name, field: "type")
            } else {
                keys[name] = try keyType(v, entity: name, field: "type")
            }
        }
        return keys
    }

    /// One entry of `entities:`, checked against the names, keys and defaults of the whole spec.
    func parseEntity(_ name: String, _ nameNode: Node, _ m: Node.Mapping, in context: SpecContext) throws -> EntitySpec
    {
        let entityNames = context.entityNames
        let defaultHosts = context.defaults.hosts
        let leafValidity = context.defaults.leafValidity
        let caValidity = context.defaults.caValidity
        guard let roleNode = m["role"] else {
            throw fail(
                .missingField, "the entity has no role", nameNode, entity: name, field: "role",
                fix: "add role: root, intermediate, leaf or client")
        }
        let roleText = try string(roleNode, entity: name, field: "role")
        let role = Role(rawValue: roleText)
        guard Role.all.contains(role) else {
            throw fail(
                .unknownRole, "unknown role '\(roleText)'", roleNode, entity: name, field: "role",
                fix: "use root, intermediate, leaf or client \(didYouMean(roleText, Role.all.map(\.rawValue)))")
        }

        var isCA = role.isCA
        if let caNode = m["ca"] {
            let s = try string(caNode, entity: name, field: "ca")
            guard let b = Bool(s.lowercased()) ?? (s == "yes" ? true : s == "no" ? false : nil) else {
                throw fail(.wrongType, "'\(s)' is not true or false", caNode, entity: name, field: "ca")
            }
            if b && !role.isCA {
                throw fail(
                    .leafMarkedCA, "a \(role) cannot be a CA", caNode, entity: name, field: "ca",
                    fix: "remove 'ca: true', or make the role intermediate")
            }
            if !b && role.isCA {
                throw fail(
                    .wrongType, "\(role.withArticle) is always a CA", caNode, entity: name, field: "ca",
                    fix: "remove 'ca: false'")
            }
            isCA = b
        }

        let issuer = try parseIssuer(name, nameNode, role: role, m, entityNames: context.entityNames)
        let (keyName, keyType) = try parseKey(name, m, in: context)
        var subject = try parseSubject(name, m)

        // Hosts.
        var hosts: [String] = []
        if let hNode = m["hosts"] {
            if role.isCA {
                throw fail(
                    .unknownField, "\(role.withArticle) has no hosts", hNode, entity: name, field: "hosts",
                    fix: "remove hosts; use nameConstraints to limit what a CA may issue")
            }
            hosts = try strings(hNode, entity: name, field: "hosts").map { s, n in try checkHost(s, n, entity: name) }
        } else if role == .leaf {
            hosts = defaultHosts
        }
        if subject.isEmpty {
            subject = [SubjectAttribute(type: "CN", value: role == .leaf ? (hosts.first ?? name) : name)]
        }

        // Validity.
        let base = role.isCA ? caValidity : leafValidity
        let val = try m["validity"].map { try validity($0, entity: name, field: "validity", base: base) } ?? base

        var signature: SignatureHash?
        if let sNode = m["signature"] {
            let s = try string(sNode, entity: name, field: "signature")
            let h = SignatureHash(rawValue: s.lowercased().replacingOccurrences(of: "-", with: ""))
            guard SignatureHash.all.contains(h) else {
                throw fail(
                    .unsupportedSignature, "unknown signature hash '\(s)'", sNode, entity: name,
                    field: "signature", fix: "use sha256, sha384, sha512 or sha1")
            }
            signature = h
        }

        let (pathLength, permitted, excluded) = try parseCAConstraints(name, role: role, isCA: isCA, m)

        var usages: [KeyUsagePurpose] =
            role == .leaf ? [.serverAuth] : role == .client ? [.clientAuth] : []
        if let uNode = m["usages"] {
            usages = try strings(uNode, entity: name, field: "usages").map { s, n in
                let u = KeyUsagePurpose(rawValue: s)
                guard KeyUsagePurpose.all.contains(u) else {
                    throw fail(
                        .unknownUsage, "unknown usage '\(s)'", n, entity: name, field: "usages",
                        fix:
                            "use \(KeyUsagePurpose.all.map(\.rawValue).joined(separator: ", ")) \(didYouMean(s, KeyUsagePurpose.all.map(\.rawValue)))"
                    )
                }
                return u
            }
        }

        var twinOf: String?
        if let tNode = m["twinOf"] {
            let t = try string(tNode, entity: name, field: "twinOf")
            guard entityNames.contains(t), t != name else {
                throw fail(
                    .badTwin, "twinOf names '\(t)', which is not another entity of this spec", tNode,
                    entity: name, field: "twinOf",
                    fix: "name the entity whose subject and key identifier to copy \(didYouMean(t, entityNames))")
            }
            if m["subject"] != nil {
                throw fail(
                    .badTwin, "a twin copies its subject from '\(t)' and cannot set one", tNode,
                    entity: name, field: "subject", fix: "remove subject")
            }
            twinOf = t
        }

        let summary = try m["description"].map { try string($0, entity: name, field: "description") }
        let revocation = try parseRevocationFields(name, role: role, m)
        var spec = EntitySpec(
            name: name, role: role, issuer: issuer, keyName: keyName, keyType: keyType, subject: subject,
            hosts: hosts, validity: val, signature: signature, isCA: isCA, pathLength: pathLength,
            permitted: permitted, excluded: excluded, usages: usages, twinOf: twinOf, summary: summary,
            ocspResponder: revocation.ocspResponder, crlDistributionPoint: revocation.crlDistributionPoint,
            mustStaple: revocation.mustStaple, revocation: revocation.revocation,
            line: nameNode.mark?.line ?? 0)
        for (field, path) in [("scts", \EntitySpec.embeddedSCTs), ("tlsSCTs", \EntitySpec.tlsSCTs)] {
            guard let n = m[field] else { continue }
            spec[keyPath: path] = try parseSCTRequests(n, entity: name, field: field, role: role, logs: context.ctLogs)
        }
        return spec
    }

    /// `issuer:`: the entity itself for a root or `self`, otherwise another entity of the spec.
    func parseIssuer(_ name: String, _ nameNode: Node, role: Role, _ m: Node.Mapping, entityNames: Set<String>) throws
        -> String
    {
        var issuer = name
        if let iNode = m["issuer"] {
            let i = try string(iNode, entity: name, field: "issuer")
            if role == .root {
                if i != name && i != "self" {
                    throw fail(
                        .rootWithIssuer, "a root is self-signed but names issuer '\(i)'", iNode,
                        entity: name, field: "issuer",
                        fix: "remove the issuer, or make the role intermediate")
                }
            } else if i == "self" || i == name {
                issuer = name
            } else {
                guard entityNames.contains(i) else {
                    throw fail(
                        .unknownIssuer, "unknown issuer '\(i)'", iNode, entity: name, field: "issuer",
                        fix: "name an entity of this spec \(didYouMean(i, entityNames))")
                }
                issuer = i
            }
        } else if role != .root {
            throw fail(
                .missingField, "\(role.withArticle) needs an issuer", nameNode, entity: name, field: "issuer",
                fix: "add issuer: <entity name>, or issuer: self for a self-signed certificate")
        }

        return issuer
    }

    /// `key:` and `keyType:`: a named key, an entity's own key, or a key of the entity's own.
    func parseKey(_ name: String, _ m: Node.Mapping, in context: SpecContext) throws -> (name: String, type: KeyType) {
        let keys = context.keys
        let ownKeys = context.ownKeys
        var keyName = name
        var kt: KeyType? = nil
        if let kNode = m["key"] {
            keyName = try string(kNode, entity: name, field: "key")
            guard let t = keys[keyName] ?? ownKeys[keyName] else {
                throw fail(
                    .unknownKey, "unknown key '\(keyName)'", kNode, entity: name, field: "key",
                    fix:
                        "declare it under keys:, name an entity that has its own key, or remove 'key' to give the entity its own key \(didYouMean(keyName, Array(keys.keys) + Array(ownKeys.keys)))"
                )
            }
            kt = t
        }
        if let tNode = m["keyType"] {
            let t = try keyType(tNode, entity: name, field: "keyType")
            if let kt, kt != t {
                throw fail(
                    .keyTypeConflict, "keyType \(t) contradicts key '\(keyName)', which is \(kt)", tNode,
                    entity: name, field: "keyType", fix: "remove keyType; the named key decides")
            }
            kt = t
        }

        return (keyName, kt ?? context.defaults.keyType)
    }

    /// `subject:`: a CN alone, or a mapping of attributes.
    func parseSubject(_ name: String, _ m: Node.Mapping) throws -> [SubjectAttribute] {
        var subject: [SubjectAttribute] = []
        if let sNode = m["subject"] {
            if let s = sNode.scalar?.string {
                subject = [SubjectAttribute(type: "CN", value: s)]
            } else {
                let sm = try mapping(sNode, entity: name, field: "subject")
                for (k, v) in sm {
                    let a = k.string ?? ""
                    guard subjectAttributes.contains(a) else {
                        throw fail(
                            .unknownSubjectAttribute, "unknown subject attribute '\(a)'", k, entity: name,
                            field: "subject.\(a)",
                            fix: "use \(subjectAttributes.joined(separator: ", "))")
                    }
                    subject.append(SubjectAttribute(type: a, value: try string(v, entity: name, field: "subject.\(a)")))
                }
            }
        }

        return subject
    }

    /// `pathLength:` and `nameConstraints:`, which only a CA carries.
    func parseCAConstraints(_ name: String, role: Role, isCA: Bool, _ m: Node.Mapping) throws
        -> (pathLength: Int?, permitted: [NameConstraintItem], excluded: [NameConstraintItem])
    {
        var pathLength: Int?
        if let pNode = m["pathLength"] {
            guard isCA else {
                throw fail(
                    .pathLengthOnLeaf, "a \(role) has no path length", pNode, entity: name,
                    field: "pathLength", fix: "remove pathLength; it only applies to CAs")
            }
            let s = try string(pNode, entity: name, field: "pathLength")
            guard let p = Int(s), p >= 0 else {
                throw fail(
                    .wrongType, "'\(s)' is not a non-negative whole number", pNode, entity: name,
                    field: "pathLength")
            }
            pathLength = p
        }

        var permitted: [NameConstraintItem] = []
        var excluded: [NameConstraintItem] = []
        if let ncNode = m["nameConstraints"] {
            guard isCA else {
                throw fail(
                    .leafMarkedCA, "only a CA can carry name constraints", ncNode, entity: name,
                    field: "nameConstraints", fix: "remove nameConstraints")
            }
            let nm = try mapping(ncNode, entity: name, field: "nameConstraints", allowed: ["permitted", "excluded"])
            permitted =
                try nm["permitted"].map { try constraintItems($0, entity: name, field: "nameConstraints.permitted") }
                ?? []
            excluded =
                try nm["excluded"].map { try constraintItems($0, entity: name, field: "nameConstraints.excluded") }
                ?? []
        }
        // `scope: [api.example.com, "**.example.com"]`: the proxy-scope shorthand (ProxyScope), RFC 5280 permitted
        // dNSName subtrees with every address excluded unless listed.
        if let scopeNode = m["scope"] {
            guard isCA, m["nameConstraints"] == nil else {
                throw fail(
                    .badScope, isCA ? "scope and nameConstraints both constrain names" : "only a CA can carry a scope",
                    scopeNode, entity: name, field: "scope", fix: isCA ? "keep one of them" : "remove scope")
            }
            let items = try strings(scopeNode, entity: name, field: "scope").map(\.0)
            do {
                let scope = try ProxyScope(parsing: items.joined(separator: ","), option: "scope")
                permitted = scope.permitted
                excluded = scope.excluded
            } catch let e as PKIError {
                throw fail(.badScope, e.reason, scopeNode, entity: name, field: "scope", fix: e.fix)
            }
        }

        return (pathLength, permitted, excluded)
    }

    /// Issuer cycles, twins of non-CAs, signature/key compatibility; the entities ordered issuers first.
    func ordered(_ specs: [String: EntitySpec], _ order: [String]) throws -> [EntitySpec] {
        var sorted: [String] = []
        var state: [String: Int] = [:]  // 1 visiting, 2 done
        // `path`: the entities on the way here, each with the field (issuer or twinOf) it was left by.
        func visit(_ n: String, path: [(name: String, field: String)]) throws {
            if state[n] == 2 { return }
            let e = specs[n]!
            if state[n] == 1 {
                let loop = path.drop { $0.name != n }
                let cycle = (loop.map(\.name) + [n]).joined(separator: " → ")
                let field = loop.first?.field ?? "issuer"
                let what = loop.contains { $0.field == "twinOf" } ? "issuer and twinOf references" : "issuers"
                throw PKIError(
                    .issuerCycle, "\(what) form a cycle: \(cycle)", file: file, line: e.line, entity: n, field: field,
                    fix:
                        "one entity in the cycle must be a root or issued by one, and a twin must copy an entity outside it"
                )
            }
            state[n] = 1
            if !e.isSelfSigned { try visit(e.issuer, path: path + [(n, "issuer")]) }
            if let t = e.twinOf { try visit(t, path: path + [(n, "twinOf")]) }
            state[n] = 2
            sorted.append(n)
        }
        for n in order { try visit(n, path: []) }

        for n in sorted {
            let e = specs[n]!
            if let t = e.twinOf, !specs[t]!.isCA {
                throw PKIError(
                    .badTwin, "twin of '\(t)', which is not a CA", file: file, line: e.line, entity: n,
                    field: "twinOf", fix: "a name-collision twin imitates a CA")
            }
            let signerType = specs[e.issuer]!.keyType
            if let s = e.signature {
                if signerType == .ed25519 {
                    throw PKIError(
                        .unsupportedSignature, "the issuer '\(e.issuer)' has an Ed25519 key, which takes no hash",
                        file: file, line: e.line, entity: n, field: "signature", fix: "remove signature")
                }
                if s == .sha1 && !signerType.isRSA {
                    throw PKIError(
                        .unsupportedSignature,
                        "SHA-1 signatures need an RSA issuer; '\(e.issuer)' has a \(signerType.displayName) key",
                        file: file, line: e.line, entity: n, field: "signature",
                        fix: "issue it from an RSA CA (the lab has lab-intermediate-rsa)")
                }
            }
            if signerType == .rsa1024 && e.issuer != n {
                throw PKIError(
                    .unsupportedSignature, "the issuer '\(e.issuer)' has an RSA-1024 key, too weak to sign with here",
                    file: file, line: e.line, entity: n, field: "issuer", fix: "issue it from a stronger CA")
            }
        }

        return sorted.map { specs[$0]! }
    }

    func checkName(_ name: String, _ node: Node, what: String) throws {
        let ok =
            !name.isEmpty && name.count <= 64
            && name.unicodeScalars.allSatisfy {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.".unicodeScalars.contains($0)
            }
            && !name.hasPrefix(".") && name != "self"
        if !ok {
            throw fail(
                .badName, "'\(name)' is not a usable \(what) name", node, entity: name,
                fix: "use 1–64 ASCII letters, digits, '-', '_' or '.', not starting with '.', and not 'self'")
        }
    }

    func checkHost(_ s: String, _ node: Node, entity: String) throws -> String {
        if parseIP(s) != nil { return s }
        if isDNSName(s) { return s.lowercased() }
        throw fail(
            .badHost, "'\(s)' is neither a DNS name nor an IP address", node, entity: entity, field: "hosts",
            fix: "write a name such as api.pinning.test or an address such as 127.0.0.1 or ::1")
    }
}
