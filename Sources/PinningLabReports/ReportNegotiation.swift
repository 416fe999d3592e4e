import Foundation
import PinningLabModel
import PinningLabTLSTypes

/// What the servers saw this client negotiate, per engine, summed over the cells of a report (and their steps): the
/// groups and key shares it offered, the groups negotiated, the HelloRetryRequests, and which certificates it was
/// served (named by the scenarios' chains). Reports draw it under the matrix; empty when no evidence says.
struct NegotiationSummary {
    struct Row {
        var engine: String
        /// Each distinct offer (groups, key shares, signature algorithms) with the number of connections that made it.
        var offers: [Counted<ClientHelloOffers>] = []
        /// Each group negotiated, as the engine's library names it, with its count.
        var negotiated: [Counted<String>] = []
        var retries = 0
        /// Each certificate served first (by chain name, or its hash's first characters), with its count.
        var served: [Counted<String>] = []
        var connections = 0
        /// The cells whose pin set does not cover every certificate of the host (`scenario/profile`, and what was
        /// served): an outage when the client's stack comes to be served the other one.
        var outages: [String] = []
    }

    struct Counted<T> {
        var value: T
        var count: Int
    }

    var rows: [Row]

    init(_ r: CheckReport) {
        var names: [String: String] = [:]
        for s in r.scenarios { for c in s.chain where c.onTheWire { names[c.certificateSHA256] = c.name } }
        var byEngine: [String: Row] = [:]
        func add<T: Equatable>(_ value: T, to list: inout [Counted<T>]) {
            if let i = list.firstIndex(where: { $0.value == value }) {
                list[i].count += 1
            } else {
                list.append(Counted(value: value, count: 1))
            }
        }
        for v in r.verdicts {
            if v.outage != nil {
                let served = v.evidence?.servedIdentity.map { " (served \($0))" } ?? ""
                byEngine[v.engine, default: Row(engine: v.engine)].outages.append(
                    "\(v.scenario)/\(v.profile)\(served)")
            }
            let evidence = [v.evidence] + (v.steps ?? []).map(\.evidence)
            for e in evidence.compactMap({ $0 }) where e.connected {
                var row = byEngine[v.engine] ?? Row(engine: v.engine)
                guard e.offered != nil || e.negotiatedGroup != nil || e.servedCertificateSHA256 != nil else { continue }
                row.connections += 1
                if let o = e.offered { add(o, to: &row.offers) }
                if let g = e.negotiatedGroup { add(g, to: &row.negotiated) }
                if e.helloRetryRequest == true { row.retries += 1 }
                if let sha = e.servedCertificateSHA256 {
                    add(names[sha] ?? "sha256:" + String(sha.prefix(12)) + "…", to: &row.served)
                }
                byEngine[v.engine] = row
            }
        }
        rows = r.engines.compactMap { byEngine[$0] }
    }

    var isEmpty: Bool { rows.isEmpty }

    /// `x25519`, `X25519MLKEM768`, `0x1234`.
    static func short(_ c: TLSCodePoint) -> String { c.name ?? c.hex }

    /// The lines of one engine, without indentation: offers, negotiated groups and retries, certificates served.
    static func lines(_ row: Row, maxOffers: Int = 3, maxServed: Int = 8) -> [String] {
        var out: [String] = []
        for c in row.offers.sorted(by: { $0.count > $1.count }).prefix(maxOffers) {
            let (offer, count) = (c.value, c.count)
            let groups = offer.groups.isEmpty ? "none" : offer.groups.map(short).joined(separator: ", ")
            let shares = offer.keyShares.isEmpty ? "none" : offer.keyShares.map(short).joined(separator: ", ")
            out.append(
                "offered groups \(groups) (key shares: \(shares)) — \(count) connection\(count == 1 ? "" : "s")")
            if !offer.signatureAlgorithms.isEmpty {
                out.append("  signature algorithms: " + offer.signatureAlgorithms.map(short).joined(separator: ", "))
            }
        }
        if row.offers.count > maxOffers { out.append("… and \(row.offers.count - maxOffers) other offers") }
        let groups = row.negotiated.sorted { $0.count > $1.count }.map { "\($0.value) ×\($0.count)" }
        out.append(
            "negotiated \(groups.isEmpty ? "no group" : groups.joined(separator: ", "))"
                + "; HelloRetryRequest \(row.retries == 0 ? "never" : "\(row.retries)×")")
        if !row.served.isEmpty {
            let served = row.served.sorted { $0.count > $1.count }
            let shown = served.prefix(maxServed).map { "\($0.value) ×\($0.count)" }
            let more = served.count > maxServed ? ", … \(served.count - maxServed) other certificates" : ""
            out.append("served " + shown.joined(separator: ", ") + more)
        }
        if !row.outages.isEmpty {
            out.append(
                "pin sets that do not cover every certificate of their host (an outage when the client is served another): "
                    + row.outages.joined(separator: ", "))
        }
        return out
    }
}
