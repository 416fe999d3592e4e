/// DNS host names as the lab's options take them (RFC 1123 labels).
package enum HostName {
    /// Whether `name` is a DNS host name: at most 253 characters, labels of 1 to 63 ASCII letters, digits and inner
    /// hyphens, and a last label that is not all digits (`999.1.1.1` is a mistyped address, not a name).
    package static func isValid(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253, let last = labels.last, !last.allSatisfy(\.isNumber) else {
            return false
        }
        return labels.allSatisfy { l in
            !l.isEmpty && l.utf8.count <= 63 && l.first != "-" && l.last != "-"
                && l.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
        }
    }

    /// A host name or an IP address literal.
    package static func isValidHost(_ host: String) -> Bool { isValid(host) || parseIP(host) != nil }
}
