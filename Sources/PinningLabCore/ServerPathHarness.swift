import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The fixture server's per-connection path — engine session, handshake, HTTP request parsing, response, and the
/// observation — run over a `socketpair` in the calling thread, without a listening socket or worker threads.
/// For the server-path fuzz driver (`Benchmarks/fuzz`) and tests: the bytes the peer end carries go through exactly
/// the code a worker runs for an accepted TCP connection (`Connection.start`/`advance`/`finish`).
package final class ServerPathHarness: @unchecked Sendable {  // used from one thread at a time
    let core: ServerCore
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)

    package init(engine: any TLSEngine, configuration: ServerTLSConfiguration, label: String) throws(TLSEngineError) {
        _ = Sockets.ignoreSIGPIPE
        try configuration.validate()
        let context = try engine.makeContext(configuration)
        core = ServerCore(
            listenFD: -1, engineName: engine.name, label: label,
            options: FixtureServer.Options(maxStoredObservations: 16), context: context,
            configuration: configuration, engine: engine)
    }

    deinit { buffer.deallocate() }

    /// One connection: the server end is driven by `step()`, the peer end (`peerFD`, blocking) by the caller.
    package final class Session {
        /// The client's end of the socketpair. Owned by the session: closed in `close()` or on deinit.
        package private(set) var peerFD: Int32
        let connection: Connection
        let harness: ServerPathHarness

        init(harness: ServerPathHarness, connection: Connection, peerFD: Int32) {
            self.harness = harness
            self.connection = connection
            self.peerFD = peerFD
        }

        deinit { close() }

        /// Advances the server side as far as the bytes already sent allow. True once the connection is finished.
        @discardableResult
        package func step() -> Bool {
            if !connection.isFinished { connection.advance(buffer: harness.buffer) }
            return connection.isFinished
        }

        /// Ends the connection the way the server's timeout does, if it has not finished.
        package func expire() { connection.timedOut() }

        package var isFinished: Bool { connection.isFinished }
        package var id: Int { connection.id }

        /// Closes the peer end (idempotent).
        package func close() {
            if peerFD >= 0 {
                closeDescriptor(peerFD)
                peerFD = -1
            }
        }
    }

    /// Opens a connection and starts it (the server tries its handshake at once, as after `accept`).
    package func open() -> Session? {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Sockets.stream, 0, &fds) == 0 else { return nil }
        guard Sockets.setNonBlocking(fds[0]) else {
            closeDescriptor(fds[0])
            closeDescriptor(fds[1])
            return nil
        }
        let accepted: ServerCore.Accepted = core.withLock { s in
            s.accepted += 1
            s.inFlight += 1
            return ServerCore.Accepted(
                fd: fds[0], peer: "socketpair", id: s.accepted, context: s.context, generation: s.generation,
                identities: s.configuration.identities)
        }
        let connection = Connection(core: core, accepted: accepted)
        let session = Session(harness: self, connection: connection, peerFD: fds[1])
        return session
    }

    /// Starts the server side of `session` (call once the client's first bytes are written, or at once).
    package func start(_ session: Session) { session.connection.start(buffer: buffer) }

    /// The observation of connection `id`, once finished.
    package func observation(_ id: Int) -> Observation? {
        core.withLock { s in s.observations.last { $0.id == id } }
    }

    /// Sends `bytes` from the peer, half-closes, and runs the server until the connection finishes; the server's
    /// output is read and discarded. Returns the observation, or `nil` if the connection did not finish within
    /// `maxSteps` steps (it is then expired: a finding for a caller that sent EOF).
    package func runRaw(_ bytes: [UInt8], maxSteps: Int = 256) -> Observation? {
        guard let session = open() else { return nil }
        let fd = session.peerFD
        _ = Sockets.setNonBlocking(fd)
        var sent = 0
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        start(session)
        var steps = 0
        while !session.isFinished && steps < maxSteps {
            if sent < bytes.count {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
                if n > 0 { sent += n }
            }
            if sent >= bytes.count { shutdown(fd, Int32(SHUT_WR)) }
            while read(fd, &sink, sink.count) > 0 {}
            session.step()
            steps += 1
        }
        let finished = session.isFinished
        if !finished { session.expire() }
        session.close()
        return finished ? observation(session.id) : nil
    }
}

private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
