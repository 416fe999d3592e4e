// DNS names, IP literals and name-constraint items as the PKI spec writes them.
internal import Foundation

func isDNSName(_ s: String) -> Bool {
    let labels = s.split(separator: ".", omittingEmptySubsequences: false)
    guard !s.isEmpty, s.count <= 253 else { return false }
    for (i, l) in labels.enumerated() {
        if l.isEmpty { return false }
        if l == "*" && i == 0 && labels.count > 2 { continue }
        guard l.count <= 63, !l.hasPrefix("-"), !l.hasSuffix("-"),
            l.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") })
        else { return false }
    }
    return true
}

/// Parses an IPv4 or IPv6 literal into network-order bytes.
package func parseIP(_ s: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, s, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, s, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
    return nil
}

public func formatIP(_ bytes: [UInt8]) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    let family = bytes.count == 4 ? AF_INET : AF_INET6
    let ok = bytes.withUnsafeBytes { p in inet_ntop(family, p.baseAddress, &buf, 64) } != nil
    guard ok else { return bytes.hexString }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func parseConstraint(_ s: String) -> NameConstraintItem? {
    if let slash = s.firstIndex(of: "/") {
        guard let addr = parseIP(String(s[..<slash])), let prefix = Int(s[s.index(after: slash)...]),
            prefix >= 0, prefix <= addr.count * 8
        else { return nil }
        var mask = [UInt8](repeating: 0, count: addr.count)
        for i in 0..<prefix { mask[i / 8] |= 0x80 >> UInt8(i % 8) }
        return .ip(address: zip(addr, mask).map { $0 & $1 }, mask: mask)
    }
    if let addr = parseIP(s) { return .ip(address: addr, mask: [UInt8](repeating: 0xff, count: addr.count)) }
    let dns = s.hasPrefix(".") ? String(s.dropFirst()) : s
    return isDNSName(dns) ? .dns(s.lowercased()) : nil
}
