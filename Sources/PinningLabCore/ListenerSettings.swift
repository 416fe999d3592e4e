import Foundation

/// Where a server listens and how much it takes on at once: the settings a fixture server
/// (``FixtureServer/Options``) and the interception proxy share, checked and bound in one place.
public struct ListenerSettings: Sendable, Hashable {
    /// `127.0.0.1` (default) or `::1`; any other address needs `allowNonLoopback` and prints a warning.
    public var bindAddress: String
    public var allowNonLoopback: Bool
    /// 0 picks an ephemeral port.
    public var port: Int
    /// From accept to the end of the TLS handshake.
    public var handshakeTimeout: Duration
    /// Longest silence after the handshake (reading a request, writing a response, a quiet tunnel).
    public var idleTimeout: Duration
    /// Connections open at once; more wait in the listen queue.
    public var maxConnections: Int
    /// Worker threads; each serves many connections.
    public var workerThreads: Int

    public init(
        bindAddress: String = "127.0.0.1", allowNonLoopback: Bool = false, port: Int = 0,
        handshakeTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(10), maxConnections: Int = 512,
        workerThreads: Int = 2
    ) {
        self.bindAddress = bindAddress
        self.allowNonLoopback = allowNonLoopback
        self.port = port
        self.handshakeTimeout = handshakeTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.workerThreads = workerThreads
    }
}

extension ListenerSettings {
    /// Settings refused before anything is bound: the setting at fault, what is wrong and what to do. Each caller
    /// wraps it in its own error type.
    package struct Refusal: Error, Sendable, Equatable {
        /// `bindAddress`, or `workerThreads/maxConnections`.
        package var setting: String
        package var reason: String
        package var fix: String
    }

    /// Checks what can be checked before binding: a loopback address unless `allowNonLoopback`, at least one worker
    /// thread and one connection.
    package func check() throws(Refusal) {
        guard Sockets.isLoopback(bindAddress) || allowNonLoopback else {
            throw Refusal(
                setting: "bindAddress",
                reason: "refusing to listen on \(bindAddress): PinningLab listens on loopback "
                    + "(127.0.0.1 or ::1) unless allowed otherwise",
                fix: "use 127.0.0.1 or ::1, or allow a non-loopback address (allowNonLoopback, --allow-non-loopback) "
                    + "to reach it from a device on the network")
        }
        guard workerThreads >= 1, maxConnections >= 1 else {
            throw Refusal(
                setting: "workerThreads/maxConnections",
                reason: "\(workerThreads) worker threads and \(maxConnections) "
                    + "connections: each must be at least 1", fix: "set both to 1 or more")
        }
    }

    /// Binds the non-blocking, close-on-exec listening socket (the caller owns the descriptor from here on) and, on
    /// an address other hosts can reach, says so on standard error in `who`'s name.
    package func bind(who: String) throws(TLSEngineError) -> (fd: Int32, port: Int) {
        let bound = try Sockets.listen(address: bindAddress, port: port, backlog: 1024)
        if !Sockets.isLoopback(bindAddress) {
            FileHandle.standardError.write(
                Data(
                    "warning: \(who) listens on \(bindAddress), reachable from other hosts; its keys are test keys\n"
                        .utf8))
        }
        return bound
    }

    /// The address clients connect to (`localhost` is bound as 127.0.0.1).
    package var host: String { bindAddress == "localhost" ? "127.0.0.1" : bindAddress }
}
