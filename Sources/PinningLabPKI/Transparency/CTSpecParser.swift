// Parsing the Certificate Transparency parts of a PKI spec: `ctLogs:` and the `scts:`/`tlsSCTs:` of a leaf.
internal import Foundation
import PinningLabBase
internal import Yams

private let ctLogFields = ["operator", "url", "mmd", "listed", "description"]
private let sctFields = ["log", "timestamp", "signature"]

extension PKIError.Code {
    public static let badCTLog = PKIError.Code("bad-ct-log")
    public static let badSCT = PKIError.Code("bad-sct")
}

extension SpecParser {
    /// The `ctLogs:` mapping: `NAME: { operator, url, mmd, listed, description }`.
    func parseCTLogs(_ node: Node?, keys: [String: KeyType], entityNames: Set<String>) throws -> [CTLogSpec] {
        guard let node else { return [] }
        let m = try mapping(node, entity: nil, field: "ctLogs")
        var logs: [CTLogSpec] = []
        for (kn, v) in m {
            let name = kn.string ?? ""
            try checkName(name, kn, what: "CT log")
            if keys[name] != nil || entityNames.contains(name) {
                throw fail(
                    .duplicateName, "'\(name)' names both a CT log and a \(keys[name] != nil ? "key" : "entity")", kn,
                    entity: name, fix: "rename the log: its key is kept as keys/\(name).pem")
            }
            let lm = try mapping(v, entity: name, field: nil, allowed: ctLogFields)
            let op = try lm["operator"].map { try string($0, entity: name, field: "operator") } ?? "PinningLab"
            let url =
                try lm["url"].map { try string($0, entity: name, field: "url") } ?? "https://\(name).pinning.test/"
            guard let u = URL(string: url), u.scheme == "https", u.host != nil else {
                throw fail(
                    .badCTLog, "'\(url)' is not an https URL", lm["url"], entity: name, field: "url",
                    fix: "write the log's URL, e.g. https://\(name).pinning.test/")
            }
            var mmd = 86400
            if let n = lm["mmd"] {
                let s = try string(n, entity: name, field: "mmd")
                guard let i = Int(s), i > 0 else {
                    throw fail(
                        .badCTLog, "'\(s)' is not a number of seconds", n, entity: name, field: "mmd",
                        fix: "write the maximum merge delay in seconds, e.g. mmd: 86400")
                }
                mmd = i
            }
            var listed = true
            if let n = lm["listed"] {
                let s = try string(n, entity: name, field: "listed").lowercased()
                guard let b = Bool(s) else {
                    throw fail(
                        .wrongType, "'\(s)' is not true or false", n, entity: name, field: "listed",
                        fix: "write listed: false for a log clients are not told about")
                }
                listed = b
            }
            let summary = try lm["description"].map { try string($0, entity: name, field: "description") }
            logs.append(
                CTLogSpec(
                    name: name, operatorName: op, url: url, mmd: mmd, listed: listed, summary: summary,
                    line: kn.mark?.line ?? 0))
        }
        return logs
    }

    /// `scts:` or `tlsSCTs:` of an entity: a list whose items are a log name or `{ log, timestamp, signature }`.
    func parseSCTRequests(_ node: Node, entity: String, field: String, role: Role, logs: Set<String>) throws
        -> [SCTRequest]
    {
        guard role == .leaf else {
            throw fail(
                .badSCT, "\(role.withArticle) carries no SCTs", node, entity: entity, field: field,
                fix: "remove \(field); SCTs are for server (leaf) certificates")
        }
        let items: [Node]
        if let seq = node.sequence { items = Array(seq) } else { items = [node] }
        guard !items.isEmpty else {
            throw fail(
                .badSCT, "the list is empty", node, entity: entity, field: field,
                fix: "name at least one log, or remove \(field) for a certificate without SCTs")
        }
        func logName(_ n: Node, _ f: String) throws -> String {
            let l = try string(n, entity: entity, field: f)
            guard logs.contains(l) else {
                throw fail(
                    .badSCT, "'\(l)' is not a log of ctLogs", n, entity: entity, field: f,
                    fix: logs.isEmpty
                        ? "add the log under ctLogs:"
                        : "use one of \(logs.sorted().joined(separator: ", ")) \(didYouMean(l, logs))")
            }
            return l
        }
        return try items.map { item in
            guard item.mapping != nil else { return SCTRequest(log: try logName(item, field)) }
            let m = try mapping(item, entity: entity, field: field, allowed: sctFields)
            guard let l = m["log"] else {
                throw fail(
                    .missingField, "an SCT names no log", item, entity: entity, field: "\(field).log",
                    fix: "write { log: NAME }")
            }
            var request = SCTRequest(log: try logName(l, "\(field).log"))
            if let t = m["timestamp"] {
                request.timestamp = try duration(t, entity: entity, field: "\(field).timestamp")
            }
            if let s = m["signature"] {
                switch try string(s, entity: entity, field: "\(field).signature") {
                case "valid": request.validSignature = true
                case "bad": request.validSignature = false
                case let other:
                    throw fail(
                        .badSCT, "unknown signature '\(other)'", s, entity: entity, field: "\(field).signature",
                        fix: "write signature: valid (the default) or signature: bad")
                }
            }
            return request
        }
    }
}
