// Small helpers of the PKI module: concurrent result slots, hex decoding, the issuer walk.
internal import Foundation

/// Results of concurrent work by index; `values()` rethrows the first error in index order.
final class ResultSlots<T>: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ body: () throws -> T) {
        let r = Result { try body() }
        lock.lock()
        slots[i] = r
        lock.unlock()
    }
    func values() throws -> [T] {
        lock.lock()
        defer { lock.unlock() }
        return try slots.map { try $0!.get() }
    }
}

/// The first error of concurrent work.
final class ErrorBox: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var error: (any Error)?
    func record(_ e: any Error) {
        lock.lock()
        if error == nil { error = e }
        lock.unlock()
    }
    var first: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return error
    }
}

func hexBytes(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(s.utf8.count / 2)
    var hi: UInt8? = nil
    for c in s.utf8 {
        let v: UInt8
        switch c {
        case 48...57: v = c - 48
        case 97...102: v = c - 87
        case 65...70: v = c - 55
        default: continue
        }
        if let h = hi { out.append(h << 4 | v); hi = nil } else { hi = v }
    }
    return out
}

/// The names above `name`, nearest first, following `issuer` until a self-issued name (included: the root) or a
/// name whose issuer is unknown; at most 16 steps, so a loop in a hand-edited state cannot hang. The one issuer
/// walk of the package: the PKI's chains, `pinlab pki show`, the serve manifest.
package func issuerWalk(from name: String, issuer: (String) -> String?) -> [String] {
    var out: [String] = []
    var current = name
    while out.count < 16, let up = issuer(current), up != current, issuer(up) != nil {
        out.append(up)
        current = up
    }
    return out
}
