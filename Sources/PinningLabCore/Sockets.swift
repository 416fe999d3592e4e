import CPinningLabSystem
internal import Foundation  // and with it the C library (Glibc, Musl or Darwin)

/// Thin POSIX helpers for the fixture server. Everything here is non-blocking and closes what it opens on
/// failure.
package enum Sockets {
    #if canImport(Darwin)
        static let stream = SOCK_STREAM
    #else
        static let stream = Int32(SOCK_STREAM.rawValue)
    #endif

    /// Ignores SIGPIPE once per process: a client that resets while the server writes must not kill the process.
    /// Both TLS libraries write to the socket with plain `write`/`send`.
    package static let ignoreSIGPIPE: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    package static func errnoText(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    package static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.") || address == "localhost"
    }

    /// Opens a non-blocking listening socket bound to `address:port` and returns it with the bound port. With
    /// `listening: false` the socket is bound only: connections to the port are refused while the port stays taken.
    package static func listen(address: String, port: Int, backlog: Int32, listening: Bool = true)
        throws(TLSEngineError) -> (fd: Int32, port: Int)
    {
        let host = address == "localhost" ? "127.0.0.1" : address
        let isV6 = host.contains(":")
        let fd = socket(isV6 ? AF_INET6 : AF_INET, stream | closeOnExecFlag, 0)
        guard fd >= 0 else { throw TLSEngineError(.io, "socket(): \(errnoText())") }
        var ok = false
        defer { if !ok { close(fd) } }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if closeOnExecFlag == 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard (0...65535).contains(port) else {
            throw TLSEngineError(.invalidConfiguration, "port \(port) is not in 0...65535")
        }
        let rc: Int32
        if isV6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, host, &sa.sin6_addr) == 1 else {
                throw TLSEngineError(.invalidConfiguration, "bind address '\(address)' is not an IPv6 address")
            }
            rc = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &sa.sin_addr) == 1 else {
                throw TLSEngineError(
                    .invalidConfiguration,
                    "bind address '\(address)' is not an IPv4 or IPv6 address (e.g. 127.0.0.1, ::1)")
            }
            rc = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard rc == 0 else { throw TLSEngineError(.io, "bind(\(address):\(port)): \(errnoText())") }
        guard !listening || systemListen(fd, backlog) == 0 else {
            throw TLSEngineError(.io, "listen(): \(errnoText())")
        }
        guard setNonBlocking(fd) else { throw TLSEngineError(.io, "fcntl(O_NONBLOCK): \(errnoText())") }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard named == 0 else { throw TLSEngineError(.io, "getsockname(): \(errnoText())") }
        let (_, boundPort) = describe(&storage)
        guard boundPort > 0 else { throw TLSEngineError(.io, "getsockname() named no port for \(address):\(port)") }
        ok = true
        return (fd, boundPort)
    }

    @inline(__always)
    static func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Glibc)
            return Glibc.listen(fd, backlog)
        #elseif canImport(Musl)
            return Musl.listen(fd, backlog)
        #else
            return Darwin.listen(fd, backlog)
        #endif
    }

    #if os(Linux)
        static let closeOnExecFlag = Int32(SOCK_CLOEXEC.rawValue)
    #else
        static let closeOnExecFlag: Int32 = 0
    #endif

    /// Names the calling thread for the operating system (`top -H`, /proc/self/task/*/comm, gdb, tests): the first
    /// 15 bytes, all Linux keeps.
    package static func nameCurrentThread(_ name: String) {
        _ = cpinninglab_set_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }

    /// The operating system's name of the calling thread.
    static func currentThreadName() -> String {
        var buf = [CChar](repeating: 0, count: 64)
        guard cpinninglab_thread_name(&buf, UInt(buf.count)) == 0 else { return "" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A pipe whose ends are close-on-exec (atomically on Linux) and, unless `nonBlocking` is false, non-blocking.
    /// The one pipe maker: wake-up pipes and child processes' standard streams.
    package static func makePipe(nonBlocking: Bool = true) -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard cpinninglab_pipe2_cloexec(&fds, nonBlocking ? 1 : 0) == 0 else { return nil }
        return (fds[0], fds[1])
    }

    /// Descriptors one fixture server with one worker thread holds while idle: its listening socket, the worker's
    /// epoll (or poll) set and its wake-up pipe (measured: 12 servers 59 descriptors, 264 servers 1,066).
    package static let descriptorsPerIdleServer = 4

    /// Raises this process's soft limit on open descriptors to `needed` if it is lower (never above the hard limit)
    /// and returns the limits now in force. A batch run keeps a server per cell open at once: 2,100 descriptors for
    /// the whole catalogue on both engines, more than the common soft limit of 1,024 (256 on macOS).
    package static func raiseDescriptorLimit(to needed: Int) -> (soft: Int, hard: Int) {
        var limit = rlimit()
        #if os(Linux)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return (Int.max, Int.max) }
        // RLIM_INFINITY is all ones; anything above Int.max counts as unlimited.
        let hard = limit.rlim_max > rlim_t(Int.max) ? Int.max : Int(limit.rlim_max)
        let soft = limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
        guard soft < needed else { return (soft, hard) }
        var raised = limit
        raised.rlim_cur = rlim_t(min(needed, hard))
        guard setrlimit(resource, &raised) == 0 else { return (soft, hard) }
        return (Int(raised.rlim_cur), hard)
    }

    package static func setNonBlocking(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL, 0)
        return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0
    }

    /// Sends now the acknowledgement the kernel would delay (Linux `TCP_QUICKACK`; elsewhere nothing).
    ///
    /// Called when a server waits for its client with nothing to write. A client that leaves Nagle's algorithm on
    /// (the JDK's sockets, Python's bare `socket`) holds a small write until its previous one is acknowledged, and the
    /// server's delayed ACK holds that acknowledgement for 40 ms: TLS 1.3 without session tickets ends with the
    /// client's Finished, which the server answers with nothing, so the client's request waited 40 ms; the JDK writes
    /// its middlebox-compatibility ChangeCipherSpec and its Finished apart, so its Finished waited too.
    package static func acknowledgeNow(_ fd: Int32) {
        #if os(Linux)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), Int32(TCP_QUICKACK), &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Accepts one connection (non-blocking, close-on-exec, TCP_NODELAY); `nil` when none is pending.
    package static func accept(_ listenFD: Int32) -> (fd: Int32, peer: String)? {
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd: Int32 = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                #if os(Linux)
                    // Atomically non-blocking and close-on-exec: a process the host spawns at the same moment (a
                    // client under test!) must never inherit a connection, or closing it here would not end it.
                    return cpinninglab_accept4(listenFD, sa, &len, 1)
                #else
                    let fd = Darwin.accept(listenFD, sa, &len)
                    if fd >= 0 {
                        // A fresh socket has no status flags but O_RDWR: set O_NONBLOCK without reading them first.
                        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
                        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                        var one: Int32 = 1
                        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
                    }
                    return fd
                #endif
            }
        }
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let (host, port) = describe(&storage)
        return (fd, host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
    }

    /// Whether a connection waits in the listen queue.
    package static func hasPendingConnection(_ listenFD: Int32) -> Bool {
        var p = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0 && (p.revents & Int16(POLLIN)) != 0
    }

    static func describe(_ storage: inout sockaddr_storage) -> (String, Int) {
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw in
            switch family {
            case AF_INET:
                let sin = raw.load(as: sockaddr_in.self)
                return (text(AF_INET, sin.sin_addr), Int(UInt16(bigEndian: sin.sin_port)))
            case AF_INET6:
                let sin6 = raw.load(as: sockaddr_in6.self)
                return (text(AF_INET6, sin6.sin6_addr), Int(UInt16(bigEndian: sin6.sin6_port)))
            default:
                return ("?", 0)
            }
        }
    }

    /// An IPv4 or IPv6 address as `inet_ntop` writes it.
    private static func text<Address>(_ family: Int32, _ address: Address) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = withUnsafeBytes(of: address) {
            inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The `poll` timeout in milliseconds until `nearest` (monotonic nanoseconds; `.max`: none, -1), at most a
    /// minute, rounded up so that a loop never wakes just before its deadline.
    package static func pollTimeout(until nearest: UInt64) -> Int32 {
        guard nearest != .max else { return -1 }
        let now = now()
        return nearest <= now ? 0 : Int32(min((nearest - now + 999_999) / 1_000_000, 60_000))
    }

    /// Empties a non-blocking wake-up pipe.
    package static func drain(_ fd: Int32) {
        var sink = [UInt8](repeating: 0, count: 64)
        while read(fd, &sink, sink.count) > 0 {}
    }

    /// Why a connect could not be started: the step that failed and the system's words.
    package struct ConnectStartFailure: Error {
        package enum Step: Sendable { case resolve, socket, configure, connect }
        package let step: Step
        package let reason: String
    }

    /// Resolves `host` (a numeric address only when `numericHost`; a name resolution blocks the caller) and starts a
    /// non-blocking, close-on-exec, no-delay TCP connect to it. Returns the socket, which the caller owns from here,
    /// and whether the connect is still in progress (wait for POLLOUT, then read SO_ERROR).
    package static func startConnect(host: String, port: Int, numericHost: Bool) throws(ConnectStartFailure) -> (
        fd: Int32, inProgress: Bool
    ) {
        var hints = addrinfo()
        hints.ai_flags = numericHost ? AI_NUMERICHOST | AI_NUMERICSERV : 0
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = stream
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let address = list else {
            throw ConnectStartFailure(step: .resolve, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        // Close-on-exec from the start (SOCK_CLOEXEC where there is one): a client process spawned at this instant
        // must not inherit the upstream connection.
        let fd = socket(
            address.pointee.ai_family, address.pointee.ai_socktype | closeOnExecFlag, address.pointee.ai_protocol)
        guard fd >= 0 else { throw ConnectStartFailure(step: .socket, reason: errnoText()) }
        if closeOnExecFlag == 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        #if canImport(Darwin)
            var noSigpipe: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &noSigpipe, socklen_t(MemoryLayout<Int32>.size))
        #endif
        guard setNonBlocking(fd) else {
            let reason = errnoText()
            close(fd)
            throw ConnectStartFailure(step: .configure, reason: reason)
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
            let code = errno
            guard code == EINPROGRESS else {
                close(fd)
                throw ConnectStartFailure(step: .connect, reason: errnoText(code))
            }
            return (fd, true)
        }
        return (fd, false)
    }

    /// Monotonic nanoseconds.
    package static func now() -> UInt64 {
        var ts = timespec(tv_sec: 0, tv_nsec: 0)
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    package static func nanoseconds(_ d: Duration) -> UInt64 {
        let c = d.components
        if c.seconds < 0 { return 0 }
        return UInt64(c.seconds) &* 1_000_000_000 &+ UInt64(c.attoseconds / 1_000_000_000)
    }
}

/// A POSIX thread with a small stack, joined explicitly.
package final class WorkerThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    private var thread: pthread_t
    private var joined = false

    package init(name: String, stackSize: Int = 1 << 20, _ body: @escaping () -> Void) throws(TLSEngineError) {
        let attr = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        pthread_attr_init(attr)
        defer {
            pthread_attr_destroy(attr)
            attr.deallocate()
        }
        pthread_attr_setstacksize(attr, stackSize)
        let box = Unmanaged.passRetained(
            Box {
                Sockets.nameCurrentThread(name)
                body()
            }
        ).toOpaque()
        #if canImport(Darwin)
            var t: pthread_t? = nil
            let rc = pthread_create(
                &t, attr,
                { p in
                    Unmanaged<Box>.fromOpaque(p).takeRetainedValue().body()
                    return nil
                }, box)
        #else
            var t = pthread_t()
            let rc = pthread_create(
                &t, attr,
                { p in
                    Unmanaged<Box>.fromOpaque(p!).takeRetainedValue().body()
                    return nil
                }, box)
        #endif
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw TLSEngineError(.io, "pthread_create: \(Sockets.errnoText(rc))")
        }
        #if canImport(Darwin)
            thread = t!
        #else
            thread = t
        #endif
    }

    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}

/// A worker thread's wake-up pipe (non-blocking, close-on-exec): `wake()` from any thread makes the worker's wait
/// (`poll` or epoll) on `readEnd` return; the worker `drain()`s it. Closed once, by `closeEnds()`, after the worker's thread has ended.
package struct WakePipe: Sendable {
    package let readEnd: Int32
    package let writeEnd: Int32

    package init() throws(TLSEngineError) {
        guard let (r, w) = Sockets.makePipe() else { throw TLSEngineError(.io, "pipe(): \(Sockets.errnoText())") }
        readEnd = r
        writeEnd = w
    }

    package var descriptors: [Int32] { [readEnd, writeEnd] }

    package func wake() {
        var b: UInt8 = 1
        _ = write(writeEnd, &b, 1)
    }

    package func drain() { Sockets.drain(readEnd) }

    package func closeEnds() {
        close(readEnd)
        close(writeEnd)
    }
}
