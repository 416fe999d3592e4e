import PinningLabCore
import PinningLabModel

/// What the steps of a cell of several connections left on their parties' servers.
///
/// A step's request reached its party when the party's server received it: on a connection of the step's own, or —
/// over HTTP/2 — as a stream whose `:authority` is the step's host on a connection the client opened earlier, for
/// this host or for another one (connection reuse, and coalescing: RFC 9113 section 9.1.1). A client that coalesces
/// makes no new connection for the step, so "the k-th connection belongs to the k-th step" would read a request that
/// reached the party as "never connected": a coalescing client with the bug that `h2-coalescing-pinned-host`
/// catches would pass.
package enum StepEvidence {
    /// The host of an HTTP/2 `:authority` (`host`, `host:port`, `[v6]:port`), normalized as pin scopes are.
    package static func host(ofAuthority authority: String?) -> String? {
        guard var a = authority else { return nil }
        if a.hasPrefix("["), let end = a.firstIndex(of: "]") {
            a = String(a[a.index(after: a.startIndex)..<end])
        } else if let colon = a.lastIndex(of: ":"), a.firstIndex(of: ":") == colon {
            a = String(a[..<colon])
        }
        return PinScope.normalizedHost(a)
    }

    /// The evidence of a request that arrived as stream `s`; `connection` is the observation of the connection it
    /// rode on (nil while that connection is still open), `openedEarlier` whether an earlier step opened it.
    package static func stream(_ s: ObservedHTTP2Stream, connection o: Observation?, openedEarlier: Bool)
        -> ServerEvidence
    {
        let line =
            "\(s.stream.method ?? "GET") \(s.stream.path ?? "/") HTTP/2 (:authority \(s.stream.authority ?? "?"), stream \(s.stream.id) on connection \(s.connection)"
            + (openedEarlier ? ", opened in an earlier step with SNI \(s.serverName ?? "none")" : "") + ")"
        return ServerEvidence(
            connected: true, handshakeCompleted: true, applicationDataReceived: true, requestLine: line,
            negotiatedVersion: o?.tlsVersion?.rawValue, cipherSuite: o?.cipherSuite, sni: s.serverName,
            handshakeMilliseconds: o?.handshakeMilliseconds, resumption: o?.resumption)
    }

    /// Each step's evidence, read once every step was made: `connections` and `streams` are what each party's server
    /// recorded during the cell. First every step takes, in order, the first stream not yet taken whose `:authority`
    /// is its host on its party; then every step without one takes its party's first connection that no step took
    /// (by a stream or before it), or has no connection. A connection whose streams no step claims stays free: a
    /// request sent with another `:authority` still reached the party.
    package static func assign(
        _ s: Scenario, connections: [String: [Observation]], streams: [String: [ObservedHTTP2Stream]]
    ) -> [ServerEvidence] {
        let streams = streams.mapValues { $0.sorted { $0.sequence < $1.sequence } }
        let connections = connections.mapValues { $0.sorted { $0.id < $1.id } }
        var takenStreams: [String: Set<Int>] = [:]
        let claimed: [ObservedHTTP2Stream?] = s.steps.map { step in
            let wanted = PinScope.normalizedHost(step.host)
            let stream = (streams[step.party] ?? []).first {
                !takenStreams[step.party, default: []].contains($0.sequence)
                    && host(ofAuthority: $0.stream.authority) == wanted
            }
            if let stream { takenStreams[step.party, default: []].insert(stream.sequence) }
            return stream
        }
        var takenConnections: [String: Set<Int>] = [:]
        for (step, stream) in zip(s.steps, claimed) {
            if let stream { takenConnections[step.party, default: []].insert(stream.connection) }
        }
        var opened: [String: Set<Int>] = [:]  // connections an earlier step used
        return zip(s.steps, claimed).map { step, stream in
            let party = step.party
            let list = connections[party] ?? []
            if let stream {
                let earlier = opened[party, default: []].contains(stream.connection)
                opened[party, default: []].insert(stream.connection)
                return Self.stream(
                    stream, connection: list.first { $0.id == stream.connection }, openedEarlier: earlier)
            }
            guard let next = list.first(where: { !takenConnections[party, default: []].contains($0.id) }) else {
                return .noConnection
            }
            takenConnections[party, default: []].insert(next.id)
            opened[party, default: []].insert(next.id)
            return ServerEvidence([next])
        }
    }
}
