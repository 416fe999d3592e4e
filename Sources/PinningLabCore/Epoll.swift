#if os(Linux)
    import CPinningLabSystem
    internal import Foundation  // and with it Glibc

    /// An epoll instance, the owner of its descriptor. A worker's descriptors stay registered between waits, so that a
    /// wait costs what is ready rather than what is open: with thousands of silent or trickling connections, `poll`
    /// rebuilt and scanned every descriptor on every wake-up. Events are `poll`'s bits (POLLIN, POLLOUT), which epoll
    /// shares; errors and hang-ups are always reported, as with `poll`.
    final class EpollSet {
        let fd: Int32
        private var ready: [epoll_event]

        /// `nil` when the kernel refuses a new instance (then the caller polls).
        init?(capacity: Int = 256) {
            fd = epoll_create1(Int32(EPOLL_CLOEXEC))
            guard fd >= 0 else { return nil }
            ready = Array(repeating: epoll_event(), count: capacity)
        }

        deinit { close(fd) }

        func add(_ descriptor: Int32, events: Int16) -> Bool { control(EPOLL_CTL_ADD, descriptor, events) }
        func modify(_ descriptor: Int32, events: Int16) -> Bool { control(EPOLL_CTL_MOD, descriptor, events) }
        /// Closing a descriptor also removes it (when no duplicate of it is open).
        @discardableResult func remove(_ descriptor: Int32) -> Bool { control(EPOLL_CTL_DEL, descriptor, 0) }

        private func control(_ operation: Int32, _ descriptor: Int32, _ events: Int16) -> Bool {
            var e = epoll_event()
            e.events = UInt32(UInt16(bitPattern: events))
            e.data.fd = descriptor
            return epoll_ctl(fd, operation, descriptor, &e) == 0
        }

        /// Waits up to `timeout` milliseconds (-1: no limit) and calls `body` with each ready descriptor and its events;
        /// false when the wait failed other than by a signal.
        func wait(timeout: Int32, _ body: (Int32, UInt32) -> Void) -> Bool {
            let n = ready.withUnsafeMutableBufferPointer { epoll_wait(fd, $0.baseAddress, Int32($0.count), timeout) }
            if n < 0 { return errno == EINTR }
            for i in 0..<Int(n) { body(ready[i].data.fd, ready[i].events) }
            return true
        }
    }
#endif
