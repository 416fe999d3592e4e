import Foundation

/// The `poll` loop of one worker thread: a set rebuilt on every turn from the worker's wake-up pipe, the shared
/// listening socket (while the worker may accept) and the descriptors its connections wait on. The fixture server's
/// workers run it where there is no epoll; the interception proxy's workers always do.
package struct PollSet {
    private var entries: [pollfd] = []
    private var listening = false

    package init() {}

    /// Runs until `core` is stopping or `poll` fails. Each turn `register` adds a connection's descriptors (any
    /// number, each with its events) and returns when it must next be served even if nothing is ready; `serve` is
    /// called with whether one of them is ready, or when that time has come, and answers whether the connection is
    /// finished (it is then dropped). New connections are accepted last, in a batch, by `accept`.
    package mutating func run<Connection: AnyObject, State: ListenerState>(
        _ connections: inout [Connection], core: ListenerCore<State>, wake: WakePipe,
        register: (Connection, inout PollSet) -> UInt64,
        serve: (_ connection: Connection, _ ready: Bool, _ now: UInt64) -> Bool,
        accept: (inout [Connection]) -> Void
    ) {
        var ends: [Int] = []  // where each connection's descriptors end in `entries`
        var due: [UInt64] = []
        var finished: [Int] = []
        while !core.isStopping {
            begin(wake: wake, listenFD: core.listenFD, listening: core.mayAccept())
            ends.removeAll(keepingCapacity: true)
            due.removeAll(keepingCapacity: true)
            var nearest = UInt64.max
            for c in connections {
                let at = register(c, &self)
                due.append(at)
                ends.append(entries.count)
                nearest = min(nearest, at)
            }
            guard wait(until: nearest, wake: wake) else { return }
            let now = Sockets.now()
            var start = 2
            for (i, c) in connections.enumerated() {
                let ready = entries[start..<ends[i]].contains { $0.revents != 0 }
                start = ends[i]
                if (ready || due[i] <= now) && serve(c, ready, now) { finished.append(i) }
            }
            if !finished.isEmpty {
                var next = 0
                var kept: [Connection] = []
                kept.reserveCapacity(connections.count - finished.count)
                for (i, c) in connections.enumerated() {
                    if next < finished.count && finished[next] == i { next += 1 } else { kept.append(c) }
                }
                connections = kept
                finished.removeAll(keepingCapacity: true)
            }
            if acceptReady { accept(&connections) }
        }
    }

    /// Starts a turn: the wake-up pipe first, then `listenFD` when `listening`.
    private mutating func begin(wake: WakePipe, listenFD: Int32, listening: Bool) {
        entries.removeAll(keepingCapacity: true)
        entries.append(pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0))
        entries.append(pollfd(fd: listening ? listenFD : -1, events: Int16(POLLIN), revents: 0))
        self.listening = listening
    }

    /// Adds a descriptor waiting for `events`; with no events it takes a place but is not polled.
    package mutating func add(_ fd: Int32, _ events: Int16) {
        entries.append(pollfd(fd: events == 0 ? -1 : fd, events: events, revents: 0))
    }

    /// Waits until something is ready or `deadline` (monotonic nanoseconds, `.max`: none) passes, and empties the
    /// wake-up pipe when it was written; false when `poll` failed other than by a signal.
    private mutating func wait(until deadline: UInt64, wake: WakePipe) -> Bool {
        let n = poll(&entries, nfds_t(entries.count), Sockets.pollTimeout(until: deadline))
        if n < 0 && errno != EINTR { return false }
        if entries[0].revents != 0 { wake.drain() }
        return true
    }

    /// Whether the listening socket has connections to accept.
    private var acceptReady: Bool { listening && entries[1].revents != 0 }
}
