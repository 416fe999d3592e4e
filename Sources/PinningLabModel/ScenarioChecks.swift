// What a scenario says about revocation and CT: the OCSP response its server staples (`server.ocsp-staple`) and
// the expectations per declared client check (`expect-if`), and how a cell is judged for a client's declared checks.
import Foundation
import PinningLabPKI
internal import Yams

/// How the lab's revocation responder (OCSP and CRLs, `http://ocsp.pinning.test/…`, `http://crl.pinning.test/…`)
/// behaves for a scenario (`server.responder:`).
public enum RevocationResponderMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Answers as the PKI issued: OCSP status per identity, fresh CRLs listing the revoked identities.
    case asIssued = "as-issued"
    /// Answers OCSP as issued, but its CRLs are stale: nextUpdate passed a day ago.
    case staleCRL = "stale-crl"
    /// Its address refuses connections (a port bound on loopback that listens to nothing): a client that fetches
    /// status learns nothing.
    case refusesConnections = "refuses-connections"
    public var description: String { rawValue }
}

extension Reader {
    /// `responder: as-issued | stale-crl | refuses-connections`.
    func responderMode(_ node: Node, field: String) throws -> RevocationResponderMode {
        try choice(
            RevocationResponderMode.allCases, node, field, .badStaple,
            isNot: "a way the lab's revocation responder behaves")
    }

    /// `ocsp-staple: as-issued | good | revoked | unknown | expired | bad-signature | wrong-responder | delegated |
    /// try-later | unauthorized | good-with-scts`.
    func ocspStaple(_ node: Node, field: String) throws -> OCSPVariant {
        try choice(OCSPVariant.allCases, node, field, .badStaple, isNot: "a kind of OCSP response the lab staples")
    }

    /// `expect-if:` — `reason:` and one line per declared check (`revocation=hard: refuse`, or a mapping per
    /// profile); profiles a line does not list follow `expect`.
    func conditionalExpectations(_ node: Node, expectations: [PinProfile: Expectation]) throws
        -> ConditionalExpectations
    {
        let shape =
            "write `expect-if:` with `reason: <why the client's checks decide>` and one line per check, e.g. `revocation=hard: refuse` or `revocation=soft: {none: refuse, leaf-spki: refuse}` (\(ClientChecks.syntax))."
        let m = try yaml.mapping(node, "expect-if", fix: shape)
        var reason: String?
        var entries: [ConditionalExpectations.Entry] = []
        for (k, v) in m {
            let key = k.string ?? ""
            if key == "reason" {
                reason = try nonEmptyString(
                    v, "expect-if.reason",
                    fix: "say in one sentence why the client's declared checks, not its pins, decide these cells.")
                continue
            }
            let field = "expect-if.\(key)"
            let condition: ClientChecks
            do {
                condition = try ClientChecks(parsing: key, what: field)
            } catch {
                throw fail(
                    .badConditionalExpectation, k, field, "'\(key)' is not a client check (\(error.problem)).",
                    fix: "name a declared check: \(ClientChecks.syntax), e.g. `revocation=hard: refuse`.")
            }
            var row: [PinProfile: Expectation] = [:]
            if case .scalar = v {
                guard let e = Expectation(rawValue: v.string ?? "") else {
                    throw fail(
                        .badConditionalExpectation, v, field, "'\(v.string ?? "")' is not an expectation.",
                        fix: "write `\(key): accept` or `\(key): refuse` (every profile), or a mapping per profile.")
                }
                for p in PinProfile.all { row[p] = e }
            } else {
                for (profile, pv) in try profileMapping(
                    v, field, fix: "write one line per profile, e.g. `none: refuse`; unlisted profiles follow `expect`."
                ) {
                    guard case .scalar = pv, let e = Expectation(rawValue: pv.string ?? "") else {
                        throw fail(
                            .badConditionalExpectation, pv, "\(field).\(profile.rawValue)",
                            "'\(pv.string ?? kind(pv))' is not an expectation.",
                            fix: "write `accept` or `refuse`.")
                    }
                    row[profile] = e
                }
            }
            entries.append(.init(condition: condition, expectations: row))
        }
        guard let reason else {
            throw fail(
                .badConditionalExpectation, node, "expect-if.reason", "`expect-if` gives no reason.",
                fix:
                    "add `reason: <why the client's declared checks, not its pins, decide these cells>` under `expect-if`."
            )
        }
        let changes = entries.contains { e in e.expectations.contains { expectations[$0.key] != $0.value } }
        guard changes else {
            throw fail(
                .badConditionalExpectation, node, "expect-if",
                "every line expects what `expect` says, so no declared check decides any cell.",
                fix: "remove `expect-if`, or list the checks whose correct clients do otherwise.")
        }
        return ConditionalExpectations(reason: reason, entries: entries)
    }
}

extension Scenario {
    /// The `expect-if` entry that applies to a client declaring `checks`: the one with the most conditions the
    /// checks satisfy (`nil`: `expect` applies).
    func conditionalEntry(_ profile: PinProfile, checks: ClientChecks) -> ConditionalExpectations.Entry? {
        conditional?.entries
            .filter { checks.satisfies($0.condition) && $0.expectations[profile] != nil }
            .max { Self.specificity($0.condition) < Self.specificity($1.condition) }
    }

    private static func specificity(_ c: ClientChecks) -> Int {
        (c.revocation == nil ? 0 : 1) + (c.ct == nil ? 0 : 1) + (c.keyExchange == nil ? 0 : 1)
    }

    /// The expectation for a client that declares `checks`.
    public func expected(_ profile: PinProfile, platform: PlatformPolicy?, checks: ClientChecks) -> Expectation {
        conditionalEntry(profile, checks: checks)?.expectations[profile] ?? expected(profile, platform: platform)
    }

    /// The checks a client must declare before this cell can be judged: those whose lines in `expect-if` expect
    /// otherwise than `expect` here and that `checks` leaves undeclared (empty: the cell can be judged).
    public func undeclaredChecks(_ profile: PinProfile, checks: ClientChecks) -> [String] {
        guard let conditional else { return [] }
        var out: [String] = []
        let base = expected(profile)
        let deciding = conditional.entries.filter { ($0.expectations[profile] ?? base) != base }
        if checks.revocation == nil, deciding.contains(where: { $0.condition.revocation != nil }) {
            out.append("revocation")
        }
        if checks.ct == nil, deciding.contains(where: { $0.condition.ct != nil }) { out.append("ct") }
        // An undeclared key exchange is `any` (ClientChecks.keyExchange): never undecided.
        return out
    }

    /// How the cell is judged for a client on `platform` that declares `checks`.
    public func rule(_ profile: PinProfile, platform: PlatformPolicy?, checks: ClientChecks) -> CellRule {
        var r = rule(profile, platform: platform)
        let missing = undeclaredChecks(profile, checks: checks)
        if !missing.isEmpty, let conditional {
            r.undecided =
                "\(conditional.reason) — the outcome depends on the client's \(missing.joined(separator: " and ")) checking, which it does not declare (--client-checks \(ClientChecks.syntax))"
        } else if conditionalEntry(profile, checks: checks) != nil, let conditional {
            r.checks = "as a \(checks) client: \(conditional.reason)"
        }
        return r
    }
}
