// Small helpers of the PKI module: concurrent result slots, hex decoding, the issuer walk.
internal import Foundation
import PinningLabBase

/// Results of concurrent work by index; `values()` rethrows the first error in index order.
final class ResultSlots<T>: Sendable {
    private let slots: Locked<[Result<T, any Error>?]>
    init(count: Int) { slots = Locked(Array(repeating: nil, count: count)) }
    func set(_ i: Int, _ body: () throws -> T) {
        let r = Result { try body() }
        slots.withLock { $0[i] = r }
    }
    func values() throws -> [T] { try slots.withLock { try $0.map { try $0!.get() } } }
}

/// The first error of concurrent work.
final class ErrorBox: Sendable {
    private let error = Locked<(any Error)?>(nil)
    func record(_ e: any Error) { error.withLock { if $0 == nil { $0 = e } } }
    var first: (any Error)? { error.withLock { $0 } }
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
        if let h = hi {
            out.append(h << 4 | v)
            hi = nil
        } else {
            hi = v
        }
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
