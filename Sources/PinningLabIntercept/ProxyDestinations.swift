import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabPKI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address block in CIDR notation: `192.168.1.23/32`, `192.168.1.0/24`, `fd00::/8`; a bare address
/// is the block of that address alone. An IPv4-mapped IPv6 address (`::ffff:192.168.1.23`, how an IPv4 peer of a
/// dual-stack socket appears) is matched as the IPv4 address it maps. What `--allow-peer` takes.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The block's first address, network order (4 or 16 bytes), host bits cleared.
    let network: [UInt8]
    public let prefixLength: Int

    /// Parses `ADDRESS/PREFIX` or `ADDRESS`; `option` names the command-line option in the error.
    public init(parsing raw: String, option: String = "--allow-peer") throws(InterceptError) {
        let text = raw.trimmingCharacters(in: .whitespaces)
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let fix = "write ADDRESS/PREFIX or ADDRESS, e.g. 192.168.1.23/32 (one phone), 192.168.1.0/24, fd00::/8"
        guard let address = Self.bytes(parts[0].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) else {
            throw InterceptError(option, "'\(raw)' is not an IPv4 or IPv6 address block", fix: fix)
        }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let p = Int(parts[1]), (0...bits).contains(p) else {
                throw InterceptError(
                    option, "'\(raw)': the prefix length must be 0…\(bits) for an IPv\(bits == 32 ? 4 : 6) address",
                    fix: fix)
            }
            prefix = p
        }
        network = Self.masked(address, prefix)
        prefixLength = prefix
    }

    /// Whether `address` (a numeric IPv4 or IPv6 address, an IPv6 one with or without brackets) is in the block.
    public func contains(_ address: String) -> Bool {
        guard let b = Self.bytes(address.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) else { return false }
        return contains(bytes: b)
    }

    func contains(bytes: [UInt8]) -> Bool {
        bytes.count == network.count && Self.masked(bytes, prefixLength) == network
    }

    public var description: String { "\(formatIP(network))/\(prefixLength)" }

    /// Network-order bytes of a numeric address: 4 for IPv4 and IPv4-mapped IPv6, 16 for other IPv6; a zone
    /// (`fe80::1%eth0`) is ignored. Nil when `text` is not numeric.
    static func bytes(_ text: String) -> [UInt8]? {
        let plain = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        guard let b = parseIP(plain) else { return nil }
        if b.count == 16 && b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff {
            return Array(b[12...])
        }
        return b
    }

    static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { i, byte in
            let keep = min(max(prefix - i * 8, 0), 8)
            return keep == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - keep))
        }
    }
}

/// The kinds of address the proxy does not dial on a client's say-so: what is on this machine or its networks.
package enum DestinationClass: String, Sendable {
    case loopback
    case linkLocal = "link-local"
    case unspecified
    case privateRange = "private-range"
    case multicast
    case broadcast
    case reserved

    /// `a loopback address (this machine)`.
    package var phrase: String {
        switch self {
        case .loopback: return "a loopback address (this machine)"
        case .linkLocal: return "a link-local address (the local link, e.g. a cloud metadata service)"
        case .unspecified: return "an unspecified address (0.0.0.0 or ::, which reach this machine)"
        case .privateRange:
            return "a private-range address (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7: a local network)"
        case .multicast: return "a multicast address"
        case .broadcast: return "a broadcast address"
        case .reserved:
            return "a reserved or special-purpose address (240/4, 192.0.0/24, 198.18/15, the documentation ranges)"
        }
    }

    private static func table(_ rows: [(String, DestinationClass)]) -> [(AddressRange, DestinationClass)] {
        rows.map { (try! AddressRange(parsing: $0.0), $0.1) }
    }
    private static let v4 = table([
        ("0.0.0.0/8", .unspecified), ("127.0.0.0/8", .loopback), ("169.254.0.0/16", .linkLocal),
        ("10.0.0.0/8", .privateRange), ("172.16.0.0/12", .privateRange), ("192.168.0.0/16", .privateRange),
        ("100.64.0.0/10", .privateRange), ("255.255.255.255/32", .broadcast), ("224.0.0.0/4", .multicast),
        ("240.0.0.0/4", .reserved), ("192.0.0.0/24", .reserved), ("198.18.0.0/15", .reserved),
        ("192.0.2.0/24", .reserved), ("198.51.100.0/24", .reserved), ("203.0.113.0/24", .reserved),
    ])
    private static let v6 = table([
        ("::/128", .unspecified), ("::1/128", .loopback), ("fe80::/10", .linkLocal), ("fc00::/7", .privateRange),
        ("fec0::/10", .privateRange), ("ff00::/8", .multicast),
        // NAT64 for local use (RFC 8215): the IPv4 address sits elsewhere than the last 32 bits; a local network.
        ("64:ff9b:1::/48", .privateRange), ("2001:db8::/32", .reserved),
    ])
    /// IPv6 blocks that carry an IPv4 address in their last 32 bits: IPv4-compatible (`::a.b.c.d`, deprecated),
    /// IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765) and the NAT64 well-known prefix (`64:ff9b::/96`). The embedded
    /// address is judged. (IPv4-mapped ones are IPv4 already.)
    private static let embedding = [
        try! AddressRange(parsing: "::/96"), try! AddressRange(parsing: "::ffff:0:0:0/96"),
        try! AddressRange(parsing: "64:ff9b::/96"),
    ]

    /// The class of a numeric address, nil for a public one; `.unspecified` for what is not a numeric address.
    package static func of(_ address: String) -> DestinationClass? {
        guard let b = AddressRange.bytes(address) else { return .unspecified }
        return of(bytes: b)
    }

    static func of(bytes b: [UInt8]) -> DestinationClass? {
        if b.count == 4 { return v4.first { $0.0.contains(bytes: b) }?.1 }
        if let hit = v6.first(where: { $0.0.contains(bytes: b) }) { return hit.1 }
        if embedding.contains(where: { $0.contains(bytes: b) }) { return of(bytes: Array(b[12...])) }
        return nil
    }
}

/// How a name resolved: numeric addresses, or why not.
package typealias NameResolution = Result<[String], NameLookupFailure>

package struct NameLookupFailure: Error, Sendable, Equatable {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
}

/// Resolves a host name to numeric addresses; it may block (it runs on a ``LookupPool`` thread, never a worker).
package typealias NameResolver = @Sendable (_ host: String) -> NameResolution

enum SystemResolver {
    /// `getaddrinfo` for TCP, every address once, in the resolver's order.
    static func resolve(_ host: String) -> NameResolution {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
            hints.ai_socktype = SOCK_STREAM
        #else
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, list != nil else {
            return .failure(NameLookupFailure(String(cString: gai_strerror(status))))
        }
        defer { freeaddrinfo(list) }
        var out: [String] = []
        var a = list
        while let entry = a {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                entry.pointee.ai_addr, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                NI_NUMERICHOST) == 0
            {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !out.contains(text) { out.append(text) }
            }
            a = entry.pointee.ai_next
        }
        return out.isEmpty ? .failure(NameLookupFailure("no address")) : .success(out)
    }
}

/// A few dedicated threads for the proxy's blocking look-ups (name resolution, the genuine-chain fetch), so that no
/// worker thread ever waits on one. Threads start on demand (at most `maxThreads`) and end after 30 s without work;
/// at most `maxPending` jobs are queued or running, more are refused. A job must not hold the proxy's core: a
/// thread can stay blocked in `getaddrinfo` after the proxy stopped.
final class LookupPool: @unchecked Sendable {  // every field under `condition`
    private let condition = NSCondition()
    private var queue: [@Sendable () -> Void] = []
    private var threads = 0
    private var idle = 0
    private var running = 0
    private var stopped = false
    let maxThreads: Int
    let maxPending: Int

    init(maxThreads: Int, maxPending: Int) {
        self.maxThreads = max(1, maxThreads)
        self.maxPending = max(1, maxPending)
    }

    /// Queues `job`; false when the pool is stopped or `maxPending` jobs are already queued or running.
    func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, queue.count + running < maxPending else { return false }
        queue.append(job)
        if idle > 0 {
            condition.signal()
        } else if threads < maxThreads {
            threads += 1
            startThread(named: "pinlab.lookup") { [self] in loop() }
        }
        return true
    }

    /// Jobs queued or running.
    var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count + running
    }

    private func loop() {
        Sockets.nameCurrentThread("pli-lookup")
        condition.lock()
        while true {
            while queue.isEmpty && !stopped {
                idle += 1
                let woken = condition.wait(until: Date().addingTimeInterval(30))
                idle -= 1
                if !woken && queue.isEmpty && !stopped {  // 30 s without work: this thread ends
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            if stopped {
                threads -= 1
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            running += 1
            condition.unlock()
            job()
            condition.lock()
            running -= 1
        }
    }

    /// Drops what is queued and lets every thread end (one blocked in a look-up ends when it returns).
    func stop() {
        condition.lock()
        stopped = true
        queue.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}

/// A name look-up a connection waits for: the pool thread delivers the result and wakes the connection's worker; a
/// connection that finished first cancels it, after which its worker is never woken for it (its pipe may be closed).
final class PendingLookup: Sendable {
    private struct State {
        var result: NameResolution?
        var cancelled = false
    }
    private let state = Locked(State())
    private let wake: WakePipe
    let host: String

    init(host: String, wake: WakePipe) {
        self.host = host
        self.wake = wake
    }

    func deliver(_ r: NameResolution) {
        state.withLock { s in
            guard !s.cancelled else { return }
            s.result = r
            wake.wake()  // under the lock: once `cancel()` returned, no wake-up follows
        }
    }

    var isReady: Bool { state.withLock { $0.result != nil } }

    func take() -> NameResolution? {
        state.withLock { s in
            defer { s.result = nil }
            return s.result
        }
    }

    func cancel() {
        state.withLock { s in
            s.cancelled = true
            s.result = nil
        }
    }
}

/// Where a tunnel or a genuine-chain fetch goes, and whether an `--upstream` route chose it.
struct UpstreamTarget: Sendable, Equatable {
    var host: String
    var port: Int
    /// Chosen by a route (the operator's explicit allow), not taken from the client's `CONNECT`.
    var routed: Bool

    var text: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension InterceptProxy.Configuration {
    /// Whether the proxy serves `peer` (`ADDRESS:PORT` as accepted): with no `allowedPeers` every peer (the proxy
    /// then listens on loopback: start refuses otherwise); else a loopback peer (this machine, which reaches
    /// everything the proxy does anyway) or one in `allowedPeers`.
    package func admits(peer: String) -> Bool {
        if allowedPeers.isEmpty { return true }
        guard let (host, _) = Authority.split(peer), let b = AddressRange.bytes(host) else { return false }
        if DestinationClass.of(bytes: b) == .loopback { return true }
        return allowedPeers.contains { $0.contains(bytes: b) }
    }

    /// Why the proxy must not dial `addresses` (what `target` resolved to; the address itself when numeric), or nil
    /// when it may: a route's target, or a destination a route names (same host and port), is the operator's;
    /// otherwise every address must be public.
    func refusal(_ target: UpstreamTarget, addresses: [String]) -> String? {
        if target.routed { return nil }
        let targetBytes = AddressRange.bytes(target.host)
        let named = upstreams.contains { r in
            r.port == target.port
                && (HostPattern.normalize(r.host) == target.host
                    || (targetBytes != nil && AddressRange.bytes(r.host) == targetBytes))
        }
        if named { return nil }
        for address in addresses {
            guard let kind = DestinationClass.of(address) else { continue }
            let what =
                address == target.host
                ? "\(address) is \(kind.phrase)" : "\(target.host) resolves to \(address), \(kind.phrase)"
            let example = "--upstream \(target.host)=\(address.contains(":") ? "[\(address)]" : address):\(target.port)"
            return
                "the proxy does not relay to \(target.text): \(what); name it with --upstream PATTERN=HOST:PORT to allow it (e.g. \(example))"
        }
        return nil
    }

    /// The upstream for a host: the first matching route, else the authority itself.
    func upstream(host: String, authorityHost: String, authorityPort: Int) -> UpstreamTarget {
        for r in upstreams where r.pattern?.matches(host) ?? true {
            return UpstreamTarget(host: HostPattern.normalize(r.host), port: r.port, routed: true)
        }
        return UpstreamTarget(host: authorityHost, port: authorityPort, routed: false)
    }
}

extension Duration {
    /// `5 s`, `0.3 s`.
    var secondsText: String {
        let c = components
        return String(format: "%g s", Double(c.seconds) + Double(c.attoseconds) / 1e18)
    }
}
