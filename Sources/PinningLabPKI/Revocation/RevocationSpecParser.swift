// The revocation fields of a spec entity: `ocsp`, `crl`, `mustStaple` and `revocation`.
internal import Foundation
import PinningLabBase
internal import Yams

/// What the revocation fields of one entity say.
struct RevocationFields {
    var ocspResponder: String?
    var crlDistributionPoint: String?
    var mustStaple = false
    var revocation = RevocationStatus.good
}

extension SpecParser {
    static let revocationFieldNames = ["ocsp", "crl", "mustStaple", "revocation"]

    func parseRevocationFields(_ name: String, role: Role, _ m: Node.Mapping) throws -> RevocationFields {
        var r = RevocationFields()
        if let n = m["ocsp"] {
            r.ocspResponder = try labURL(n, entity: name, field: "ocsp", host: RevocationHosts.ocsp)
        }
        if let n = m["crl"] {
            r.crlDistributionPoint = try labURL(n, entity: name, field: "crl", host: RevocationHosts.crl)
        }
        if let n = m["mustStaple"] {
            let s = try string(n, entity: name, field: "mustStaple")
            guard let b = Bool(s.lowercased()) else {
                throw fail(
                    .wrongType, "'\(s)' is not true or false", n, entity: name, field: "mustStaple",
                    fix: "write mustStaple: true")
            }
            if b && role != .leaf {
                throw fail(
                    .unknownField, "only a leaf can require a stapled OCSP response (it is \(role.withArticle))", n,
                    entity: name, field: "mustStaple", fix: "remove mustStaple, or put it on a leaf")
            }
            r.mustStaple = b
        }
        if let n = m["revocation"] {
            if role == .root {
                throw fail(
                    .badRevocation, "a root cannot be revoked: nothing above it publishes its status", n,
                    entity: name, field: "revocation", fix: "remove revocation from the root")
            }
            r.revocation = try revocationStatus(n, entity: name)
        }
        return r
    }

    /// `http://<host>/<path>` on the lab's own revocation host.
    private func labURL(_ n: Node, entity: String, field: String, host: String) throws -> String {
        let s = try string(n, entity: entity, field: field)
        let prefix = "http://\(host)/"
        let path = s.hasPrefix(prefix) ? s.dropFirst(prefix.count) : nil
        guard let path, path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "?" && $0 != "#" }) else {
            throw fail(
                .badRevocationURL, "'\(s)' is not a URL on the lab host \(host)", n, entity: entity,
                field: field,
                fix: "write \(prefix)\(entity) (plain http, as revocation URLs are; the lab serves \(host) on loopback)"
            )
        }
        return s
    }

    /// `good`, `unknown`, or `{ status: revoked, reason: keyCompromise, date: -1h }`.
    private func revocationStatus(_ n: Node, entity: String) throws -> RevocationStatus {
        let fix =
            "write revocation: good, revocation: unknown, or revocation: { status: revoked, reason: keyCompromise, date: -1h }"
        if n.mapping == nil {
            let s = try string(n, entity: entity, field: "revocation")
            switch s {
            case "good": return .good
            case "unknown": return .unknown
            case "revoked":
                throw fail(
                    .badRevocation, "a revoked status needs its reason and date", n, entity: entity,
                    field: "revocation", fix: "write revocation: { status: revoked, reason: keyCompromise, date: -1h }")
            default:
                throw fail(
                    .badRevocation, "unknown revocation status '\(s)'", n, entity: entity, field: "revocation",
                    fix: fix)
            }
        }
        let m = try mapping(n, entity: entity, field: "revocation", allowed: ["status", "reason", "date"], fix: fix)
        guard let sNode = m["status"] else {
            throw fail(
                .missingField, "the revocation has no status", n, entity: entity, field: "revocation.status",
                fix: fix)
        }
        let status = try string(sNode, entity: entity, field: "revocation.status")
        switch status {
        case "good", "unknown":
            if m["reason"] != nil || m["date"] != nil {
                throw fail(
                    .badRevocation, "a \(status) status has no reason or date", n, entity: entity,
                    field: "revocation", fix: "write revocation: \(status)")
            }
            return status == "good" ? .good : .unknown
        case "revoked":
            var reason = RevocationReason.unspecified
            if let rNode = m["reason"] {
                let r = try string(rNode, entity: entity, field: "revocation.reason")
                reason = RevocationReason(rawValue: r)
                guard RevocationReason.all.contains(reason) else {
                    throw fail(
                        .badRevocation, "unknown revocation reason '\(r)'", rNode, entity: entity,
                        field: "revocation.reason",
                        fix:
                            "use one of \(RevocationReason.all.map(\.rawValue).joined(separator: ", ")) \(didYouMean(r, RevocationReason.all.map(\.rawValue)))"
                    )
                }
            }
            guard let dNode = m["date"] else {
                throw fail(
                    .missingField, "the revocation has no date", n, entity: entity, field: "revocation.date",
                    fix: "add date: -1h (relative to issuance, never after it)")
            }
            let date = try duration(dNode, entity: entity, field: "revocation.date")
            if date.seconds > 0 {
                throw fail(
                    .badRevocation, "the revocation date \(date) is after issuance", dNode, entity: entity,
                    field: "revocation.date", fix: "write a date at or before issuance, such as -1h or now")
            }
            return .revoked(reason: reason, date: date)
        default:
            throw fail(
                .badRevocation, "unknown revocation status '\(status)'", sNode, entity: entity,
                field: "revocation.status", fix: "use good, revoked or unknown")
        }
    }
}
