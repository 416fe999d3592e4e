import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The lab revocation responders of one run, one per way of behaving (`server.responder:`), started when a cell
/// first needs one and shared by every cell and engine of the run; ``stopAll()`` ends them with the run.
final class CellResponders: Sendable {
    private enum Running {
        case responder(RevocationResponder)
        /// A loopback port bound but never listened on: connecting to it is refused (ECONNREFUSED), and no other
        /// program can take the port while it is held.
        case refusing(fd: Int32, port: Int)

        var address: String {
            switch self {
            case .responder(let r): return "\(r.host):\(r.port)"
            case .refusing(_, let port): return "127.0.0.1:\(port)"
            }
        }
    }

    private let running = Locked<[RevocationResponderMode: Running]>([:])

    /// `IP:PORT` of the responder behaving as `mode`, started now if it is not running yet.
    func address(for mode: RevocationResponderMode, pki: LabPKI) throws -> String {
        try running.withLock { all in
            if let r = all[mode] { return r.address }
            let started: Running
            switch mode {
            case .asIssued:
                started = .responder(try RevocationResponder(pki: pki))
            case .staleCRL:
                started = .responder(try RevocationResponder(pki: pki, behaviour: .init(crl: .stale)))
            case .refusesConnections:
                let bound = try Sockets.listen(address: "127.0.0.1", port: 0, backlog: 0, listening: false)
                started = .refusing(fd: bound.fd, port: bound.port)
            }
            all[mode] = started
            return started.address
        }
    }

    /// The requests the running responders recorded, oldest first per responder.
    var requests: [RevocationResponder.Request] {
        running.withLock { all in
            all.values.flatMap { r -> [RevocationResponder.Request] in
                if case .responder(let responder) = r { return responder.requests }
                return []
            }
        }
    }

    func stopAll() {
        let all = running.withLock { all in
            defer { all = [:] }
            return Array(all.values)
        }
        for r in all {
            switch r {
            case .responder(let responder): responder.stop()
            case .refusing(let fd, _): close(fd)
            }
        }
    }
}

extension CellFiles {
    /// `IP:PORT` of the revocation responder the scenario's cells reach (`server.responder`), nil when it has none
    /// or the files serve no responder (a batch document, which runs no server).
    func revocationResponder(for s: Scenario) throws -> String? {
        guard let mode = s.server.responder, let responders else { return nil }
        return try responders.address(for: mode, pki: pki)
    }

    /// The OCSP responder and CRL distribution point the served certificate names, on the cell's responder:
    /// `http://IP:PORT/<path>` for `http://ocsp.pinning.test/<path>`; nil where it names none or no responder runs.
    func revocationURLs(for s: Scenario, responder: String?) -> (ocsp: String?, crl: String?) {
        guard let responder, let first = s.server.chain.first,
            let entity = pki.spec.entities.first(where: { $0.name == first })
        else { return (nil, nil) }
        func moved(_ url: String?) -> String? {
            guard let url,
                let rest = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).dropFirst(3).first
            else { return url.map { _ in "http://\(responder)/" } }
            return "http://\(responder)/\(rest)"
        }
        return (moved(entity.ocspResponder), moved(entity.crlDistributionPoint))
    }
}
