// A part of a PKI spec kept in a file of its own (the built-in `pki/post-quantum.yaml`): keys and entities added to
// a spec already parsed, every error naming the part's file, line, entity and field.
internal import Crypto
internal import Foundation
import PinningLabBase
internal import Yams

extension PKISpec {
    /// This spec with the keys and entities of `yaml` (a part: `version`, `keys` and `entities` only) added. The
    /// part's entities may name this spec's entities and keys (issuers, shared keys); its names must be new. The
    /// defaults (key type, validity, hosts) are this spec's. The result's fingerprint covers both texts, so a PKI
    /// folder re-issues its certificates when either changes.
    public func adding(part yaml: String, file: String) throws -> PKISpec {
        try SpecParser(file: file, text: yaml).parsePart(of: self)
    }
}

extension SpecParser {
    func parsePart(of base: PKISpec) throws -> PKISpec {
        guard let root = try yaml(nil).compose(text) else {
            throw fail(
                .missingField, "the spec part is empty", nil, field: "entities", fix: "add an 'entities:' mapping")
        }
        let top = try mapping(
            root, entity: nil, field: nil, allowed: ["version", "keys", "entities"],
            fix: "a spec part adds keys and entities; defaults and ctLogs are the spec's own")
        if let v = top["version"] {
            let s = try string(v, entity: nil, field: "version")
            if s != "1" {
                throw fail(
                    .unsupportedVersion, "version \(s) is not supported", v, field: "version",
                    fix: "this PinningLab reads version 1")
            }
        }
        let baseEntities = Set(base.names)
        let baseOwnKeys = Dictionary(
            base.entities.filter { $0.keyName == $0.name }.map { ($0.name, $0.keyType) },
            uniquingKeysWith: { a, _ in a })
        let partKeys = try parseKeys(top["keys"])
        var keys = base.keys
        for (name, type) in partKeys {
            if base.keys[name] != nil || baseEntities.contains(name) {
                throw fail(
                    .duplicateName, "'\(name)' is already a key or entity of \(base.file)", nil, entity: name,
                    field: "keys", fix: "give the key a new name")
            }
            keys[name] = type
        }
        guard let entitiesNode = top["entities"] else {
            throw fail(.missingField, "the spec part has no entities", root, field: "entities", fix: "add 'entities:'")
        }
        let em = try mapping(entitiesNode, entity: nil, field: "entities")
        var raw: [(String, Node, Node.Mapping)] = []
        for (kn, v) in em {
            let name = kn.string ?? ""
            try checkName(name, kn, what: "entity")
            if baseEntities.contains(name) || keys[name] != nil {
                throw fail(
                    .duplicateName, "'\(name)' is already a key or entity of \(base.file)", kn, entity: name,
                    fix: "give the entity a new name")
            }
            raw.append(
                (name, kn, try mapping(v, entity: name, field: nil, allowed: Self.partEntityFields)))
        }
        var ownKeys = baseOwnKeys
        for (name, _, m) in raw where m["key"] == nil {
            ownKeys[name] =
                try m["keyType"].map { try keyType($0, entity: name, field: "keyType") } ?? base.defaults.keyType
        }
        let context = SpecContext(
            entityNames: baseEntities.union(raw.map(\.0)), keys: keys, ownKeys: ownKeys, defaults: base.defaults,
            ctLogs: Set(base.ctLogs.map(\.name)))
        var specs = Dictionary(base.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var order = base.names
        for (name, nameNode, m) in raw {
            specs[name] = try parseEntity(name, nameNode, m, in: context)
            order.append(name)
        }
        let digest = SHA256.hash(data: Data((base.fingerprint + "\n" + text).utf8))
        var spec = PKISpec(
            file: "\(base.file) + \(file)", keys: keys, entities: try ordered(specs, order),
            fingerprint: Array(digest).hexString, ctLogs: base.ctLogs)
        spec.defaults = base.defaults
        return spec
    }

    /// The fields an entity of a part may use: every field of a spec's entity.
    static var partEntityFields: [String] { entityFieldNames + revocationFieldNames }
}
