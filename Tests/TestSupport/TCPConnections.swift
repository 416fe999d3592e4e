import Foundation

/// The TCP connections of this machine that have `port` at one end, read from `/proc/net/tcp` and `/proc/net/tcp6`
/// (Linux; empty elsewhere): what a test waits for when the event it needs is "a client is connected to that
/// server" (``ListeningSockets`` reads the listening ones from the same tables).
public enum TCPConnections {
    public struct Connection: Hashable, Sendable {
        public var localPort: Int
        public var remotePort: Int
        /// `/proc/net/tcp`'s state: 1 ESTABLISHED, 2 SYN_SENT, 6 TIME_WAIT, 8 CLOSE_WAIT, 10 LISTEN…
        public var state: Int
        /// Bytes sent and not yet acknowledged by the peer.
        public var sendQueue: Int
        /// Bytes received and not yet read by the socket's owner.
        public var receiveQueue: Int
        public var isEstablished: Bool { state == 1 }
    }

    /// The sockets, other than listening ones, with `port` at either end (both ends of a loopback connection are
    /// listed: the server's has `localPort == port`, the client's `remotePort == port`).
    public static func involving(port: Int) -> [Connection] {
        var out: [Connection] = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to the end: a /proc table says its size is 0 and comes a page at a time.
            guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else { continue }
            defer { try? handle.close() }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // f[1] local address:port, f[2] remote address:port, f[3] state, f[4] tx_queue:rx_queue (hex).
                guard f.count > 4, let local = f[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }),
                    let remote = f[2].split(separator: ":").last.flatMap({ Int($0, radix: 16) }),
                    let state = Int(f[3], radix: 16), state != 0x0A, local == port || remote == port
                else { continue }
                let queues = f[4].split(separator: ":").map { Int($0, radix: 16) ?? 0 }
                out.append(
                    Connection(
                        localPort: local, remotePort: remote, state: state,
                        sendQueue: queues.first ?? 0, receiveQueue: queues.last ?? 0))
            }
        }
        return out
    }

    /// The client ports of the connections to a server listening on `port`, open now or closed moments ago: either
    /// end is listed (accepted, queued, or in TIME_WAIT — the end that closes first keeps it for a minute), so a
    /// poll every few milliseconds sees even short connections.
    public static func clientPorts(ofServerOn port: Int) -> Set<Int> {
        Set(involving(port: port).map { $0.localPort == port ? $0.remotePort : $0.localPort })
    }
}
