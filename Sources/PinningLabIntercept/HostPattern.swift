import Foundation
import PinningLabPKI

/// A host name pattern as OkHttp's `CertificatePinner` writes them: `api.example.test` (that host only),
/// `*.example.test` (exactly one more label: `api.example.test`, not `example.test`, not `v2.api.example.test`),
/// `**.example.test` (any number of labels, including none: `example.test`, `api.example.test`,
/// `v2.api.example.test`). Case-insensitive; a trailing dot is ignored.
public struct HostPattern: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Kind: String, Sendable, Codable {
        /// The host itself.
        case exact
        /// `*.domain`: one label before the domain.
        case oneLabel = "one-label"
        /// `**.domain`: the domain and any subdomain at any depth.
        case anyDepth = "any-depth"
    }
    /// The pattern as written (lower-cased).
    public let text: String
    public let kind: Kind
    /// The part after `*.` or `**.` (the whole host for `exact`).
    public let domain: String

    /// Parses one pattern; `option` names the command-line option or field in the error.
    public init(parsing raw: String, option: String = "--pinned") throws(InterceptError) {
        let text = Self.normalize(raw)
        let kind: Kind
        let domain: String
        if text.hasPrefix("**.") {
            kind = .anyDepth
            domain = String(text.dropFirst(3))
        } else if text.hasPrefix("*.") {
            kind = .oneLabel
            domain = String(text.dropFirst(2))
        } else {
            kind = .exact
            domain = text
        }
        guard !domain.isEmpty else {
            throw InterceptError(
                option, "'\(raw)' has no host name",
                fix: "write a host such as api.example.test, *.example.test or **.example.test")
        }
        if domain.contains("*") {
            throw InterceptError(
                option, "'\(raw)' has a wildcard that is not a leading '*.' or '**.' label",
                fix: "use *.example.test (one label) or **.example.test (any depth), as OkHttp's CertificatePinner does"
            )
        }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_.:[]")
        if labels.contains(where: \.isEmpty) || domain.contains(where: { !allowed.contains($0) }) {
            throw InterceptError(
                option, "'\(raw)' is not a host name (empty label or a character other than letters, digits, '-', '.')",
                fix: "write a host such as api.example.test, *.example.test or **.example.test")
        }
        self.text = text
        self.kind = kind
        self.domain = domain
    }

    static func normalize(_ host: String) -> String {
        var h = host.trimmingCharacters(in: .whitespaces).lowercased()
        if h.hasSuffix(".") { h.removeLast() }
        return h
    }

    /// Whether `host` is covered by this pattern.
    public func matches(_ host: String) -> Bool {
        let h = Self.normalize(host)
        switch kind {
        case .exact:
            return h == domain
        case .oneLabel:
            guard h.hasSuffix("." + domain) else { return false }
            let prefix = h.dropLast(domain.count + 1)
            return !prefix.isEmpty && !prefix.contains(".")
        case .anyDepth:
            return h == domain || h.hasSuffix("." + domain)
        }
    }

    public var description: String { text }

    /// A comma-separated list of patterns (empty items are ignored).
    public static func parseList(_ list: String, option: String = "--pinned") throws(InterceptError) -> [HostPattern] {
        var out: [HostPattern] = []
        for item in list.split(separator: ",") where !item.trimmingCharacters(in: .whitespaces).isEmpty {
            out.append(try HostPattern(parsing: String(item), option: option))
        }
        return out
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        do {
            self = try HostPattern(parsing: s, option: "pattern")
        } catch {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: error.description)
        }
    }
}

/// How the proxy answers a CONNECT for one host.
public enum InterceptPolicy: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// A leaf minted for the host by `proxy-root` (Charles, mitmproxy, Burp).
    case mint
    /// The minted leaf, then the genuine chain appended (chain stuffing, CVE-2016-2402).
    case stuff
    /// A leaf minted by `twin-intermediate-a` (same subject DN and key identifier as `lab-intermediate-a`),
    /// sent with the twin.
    case collision
    /// No interception: a plain TCP tunnel to the upstream.
    case passthrough
    /// A leaf from the genuine issuing CA (`lab-intermediate-a`, which issues `leaf-v1`) for ANOTHER host
    /// (`foreign-host.pinning.test`), sent with that CA: every CA and root pin of the lab matches it, so only a
    /// client that checks the host name refuses it — it catches clients that pin a CA and skip host-name
    /// verification. Meaningful against lab hosts (the client trusts `lab-root`): the proxy holds no real CA's key.
    case foreignHost = "foreign-host"

    public var description: String { rawValue }

    /// Whether the proxy terminates TLS for the host.
    public var intercepts: Bool { self != .passthrough }

    /// The name a `foreign-host` leaf is issued for when the client asks for `host`: never `host` itself.
    public static func foreignName(for host: String) -> String {
        host == "foreign-host.pinning.test" ? "other-foreign-host.pinning.test" : "foreign-host.pinning.test"
    }
}

/// The policy per host: the first rule whose pattern matches, else the default.
public struct PolicyTable: Sendable, Hashable, Codable {
    public struct Rule: Sendable, Hashable, Codable {
        public var pattern: HostPattern
        public var policy: InterceptPolicy
        public init(pattern: HostPattern, policy: InterceptPolicy) {
            self.pattern = pattern
            self.policy = policy
        }
    }
    public var rules: [Rule]
    public var defaultPolicy: InterceptPolicy

    public init(defaultPolicy: InterceptPolicy = .mint, rules: [Rule] = []) {
        self.defaultPolicy = defaultPolicy
        self.rules = rules
    }

    public func policy(for host: String) -> InterceptPolicy {
        rules.first { $0.pattern.matches(host) }?.policy ?? defaultPolicy
    }

    /// Parses `mint`, `cdn.example.test=passthrough`, or a comma-separated list of both (the bare policy is the
    /// default; the last bare one wins).
    public static func parse(_ items: [String], option: String = "--policy") throws(InterceptError) -> PolicyTable {
        var table = PolicyTable()
        let names = InterceptPolicy.allCases.map(\.rawValue).joined(separator: ", ")
        for item in items.flatMap({ $0.split(separator: ",").map(String.init) }) {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let policyText = parts.count == 2 ? parts[1] : parts[0]
            guard let policy = InterceptPolicy(rawValue: policyText.lowercased()) else {
                throw InterceptError(
                    option, "'\(policyText)' is not a policy",
                    fix: "use one of \(names), alone (the default) or as HOST=POLICY")
            }
            if parts.count == 2 {
                table.rules.append(Rule(pattern: try HostPattern(parsing: parts[0], option: option), policy: policy))
            } else {
                table.defaultPolicy = policy
            }
        }
        return table
    }
}

/// Where the proxy connects for a host it passes through (and where it fetches the genuine chain).
public struct UpstreamRoute: Sendable, Hashable, Codable {
    /// Hosts this route applies to; `nil`: every host.
    public var pattern: HostPattern?
    public var host: String
    public var port: Int
    public init(pattern: HostPattern? = nil, host: String, port: Int) {
        self.pattern = pattern
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (every host) or `PATTERN=HOST:PORT`.
    public static func parse(_ text: String, option: String = "--upstream") throws(InterceptError) -> UpstreamRoute {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        let pattern = parts.count == 2 ? try HostPattern(parsing: parts[0], option: option) : nil
        guard let (host, port) = Authority.split(parts.last ?? "") else {
            throw InterceptError(
                option, "'\(text)' is not HOST:PORT or PATTERN=HOST:PORT",
                fix: "e.g. --upstream 127.0.0.1:8443 or --upstream api.pinning.test=127.0.0.1:8443")
        }
        return UpstreamRoute(pattern: pattern, host: host, port: port)
    }
}

/// Splits CONNECT authorities (`host:port`, `[::1]:port`).
enum Authority {
    static func split(_ authority: String) -> (host: String, port: Int)? {
        let a = authority.trimmingCharacters(in: .whitespaces)
        var host: Substring
        var portText: Substring
        if a.hasPrefix("[") {
            guard let close = a.firstIndex(of: "]"), a[a.index(after: close)...].hasPrefix(":") else { return nil }
            host = a[a.index(after: a.startIndex)..<close]
            portText = a[a.index(close, offsetBy: 2)...]
        } else {
            guard let colon = a.lastIndex(of: ":") else { return nil }
            host = a[..<colon]
            portText = a[a.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (1...65535).contains(port),
            host.allSatisfy({ $0.isLetter || $0.isNumber || "-._:".contains($0) })
        else { return nil }
        return (HostPattern.normalize(String(host)), port)
    }
}

/// A bad option or input of `pinlab intercept` / `InterceptProxy`: names the option, says what is wrong and
/// how to fix it.
public struct InterceptError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The option or field concerned, e.g. `--pinned`.
    public var option: String
    public var reason: String
    public var fix: String?
    public init(_ option: String, _ reason: String, fix: String? = nil) {
        self.option = option
        self.reason = reason
        self.fix = fix
    }
    public var description: String { "\(option): \(reason)" + (fix.map { " (fix: \($0))" } ?? "") }
}
