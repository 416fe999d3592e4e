import Foundation

// MARK: - Android network_security_config.xml

enum NSCReader {
    static func bool(_ node: XMLElementNode, _ name: String, file: String) throws(PinConfigError) -> Bool? {
        guard let v = node.attributes[name] else { return nil }
        guard v == "true" || v == "false" else {
            throw PinConfigError(
                file: file, line: node.line, problem: "<\(node.name) \(name)=\"\(v)\">: not true or false.",
                fix: "write \(name)=\"true\" or \(name)=\"false\".")
        }
        return v == "true"
    }

    static func read(_ root: XMLElementNode, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "network-security-config")
        // Debug-only resources (src/debug/…) never reach a release build.
        let debugOnlyFile = file.contains("/debug/")
        // Every element, in document order, in one top-down pass (no walk up the ancestors per element): whether it
        // is inside <debug-overrides>, and for a <domain-config> the <pin-set> it applies — its own, else the one
        // it inherits from the enclosing <domain-config>s.
        struct Visit {
            var node: XMLElementNode
            var inDebug: Bool
            var pinSet: XMLElementNode?
        }
        var all: [Visit] = []
        var pending = [Visit(node: root, inDebug: root.name == "debug-overrides", pinSet: nil)]
        while let v = pending.popLast() {
            all.append(v)
            for c in v.node.children.reversed() {
                let pinSet =
                    c.name == "domain-config"
                    ? c.child("pin-set") ?? (v.node.name == "domain-config" ? v.pinSet : nil) : nil
                pending.append(Visit(node: c, inDebug: v.inDebug || c.name == "debug-overrides", pinSet: pinSet))
            }
        }
        for v in all {
            let n = v.node
            switch n.name {
            case "base-config", "domain-config":
                if try bool(n, "cleartextTrafficPermitted", file: file) == true {
                    let hosts = n.children("domain").map(\.trimmedText)
                    out.add(
                        AuditCheck.cleartextPermitted, .medium, line: n.line,
                        domain: hosts.isEmpty ? "(every domain: base-config)" : hosts.joined(separator: ", "),
                        mastg: "MASTG-TEST-0235",
                        note: "MASTG-TEST-0235 (Android App Configurations Allowing Cleartext Traffic) fails it.",
                        message: "<\(n.name) cleartextTrafficPermitted=\"true\">: plain HTTP is allowed"
                            + (hosts.isEmpty ? " to every host" : " to \(hosts.joined(separator: ", "))")
                            + "; pins protect nothing on a connection without TLS.",
                        fix:
                            "remove the attribute (the default is false from API 28) or set it to false; serve the host over HTTPS."
                    )
                }
            case "certificates":
                let src = n.attributes["src"] ?? ""
                let override = try bool(n, "overridePins", file: file) == true
                if v.inDebug {
                    if override && !debugOnlyFile {
                        out.add(
                            AuditCheck.debugOverridePins, .medium, line: n.line, domain: nil, mastg: nil,
                            note:
                                "no MASTG test covers <debug-overrides>; MASTG-TEST-0286 covers src=\"user\" outside it.",
                            message:
                                "<debug-overrides> trusts src=\"\(src)\" with overridePins=\"true\": on any build with "
                                + "android:debuggable=\"true\" — a debuggable release, a build handed to testers — a CA of that "
                                + "source bypasses every pin, and this file is the one release builds use.",
                            fix:
                                "set overridePins=\"false\" (debug builds still trust the CA, and the pins still apply), "
                                + "or move the override to src/debug/res/xml/ so release builds never carry it.")
                    }
                } else if override {
                    out.add(
                        AuditCheck.overridePins, .high, line: n.line, domain: nil,
                        mastg: src == "user" ? "MASTG-TEST-0286" : nil,
                        note: src == "user"
                            ? "MASTG-TEST-0286 (Network Security Configuration Allowing Trust in User-Provided CAs) fails it."
                            : "no MASTG test names overridePins; MASTG-TEST-0242 is the closest (a domain without effective pinning).",
                        message:
                            "<certificates src=\"\(src)\" overridePins=\"true\"> outside <debug-overrides>: in release builds "
                            + "a chain ending at \(src == "user" ? "any user-installed CA (an interception proxy's)" : "this anchor") "
                            + "is accepted without the pins.",
                        fix:
                            "remove overridePins=\"true\" (the default is false); if testers need a proxy, put the override in "
                            + "<debug-overrides> with overridePins=\"false\".")
                } else if src == "user" {
                    out.add(
                        AuditCheck.userCATrusted, .high, line: n.line, domain: nil, mastg: "MASTG-TEST-0286",
                        note:
                            "MASTG-TEST-0286 (Network Security Configuration Allowing Trust in User-Provided CAs) fails it.",
                        message:
                            "<certificates src=\"user\"> outside <debug-overrides>: release builds trust user-installed CAs, "
                            + "so unpinned domains can be intercepted by any CA a user (or an MDM) installs.",
                        fix: "remove it, or move it into <debug-overrides>.")
                }
            case "certificateTransparency":
                // Android 17's element, in <base-config> or <domain-config>; debug-only overrides do not reach release builds.
                if try bool(n, "enabled", file: file) == false, !v.inDebug, !debugOnlyFile {
                    let hosts =
                        (n.parent?.name == "domain-config" ? n.parent?.children("domain").map(\.trimmedText) : nil)
                        ?? []
                    out.ctDisabled.append((n.line, hosts.isEmpty ? nil : hosts.joined(separator: ", ")))
                }
            case "pin":
                let digest = n.attributes["digest"] ?? ""
                guard digest == "SHA-256" else {
                    throw PinConfigError(
                        file: file, line: n.line,
                        problem: "<pin digest=\"\(digest)\">: Android knows only digest=\"SHA-256\".",
                        fix: "write digest=\"SHA-256\" and the base64 SHA-256 of the SubjectPublicKeyInfo.")
                }
            default: break
            }
        }
        // Pinned domains: a domain-config's own pin-set, else the one it inherits from an enclosing domain-config.
        struct Scope {
            var host: String
            var sub: Bool
            var line: Int
            var pinned: Bool
            var nested: Bool
        }
        var scopes: [Scope] = []
        for v in all where v.node.name == "domain-config" {
            let dc = v.node
            let pinSet = v.pinSet
            var pins: [AuditedPin] = []
            var expiration: Date?
            var expirationText: String?
            if let ps = pinSet {
                for p in ps.children("pin") {
                    pins.append(
                        AuditedPin(
                            sha256: try checkedSPKIPin(p.trimmedText, file: file, line: p.line, keyPath: nil),
                            role: nil, line: p.line))
                }
                if let e = ps.attributes["expiration"] {
                    guard let d = parseAuditDay(e) else {
                        throw PinConfigError(
                            file: file, line: ps.line, problem: "<pin-set expiration=\"\(e)\">: not a date.",
                            fix: "write expiration=\"YYYY-MM-DD\".")
                    }
                    expiration = d
                    expirationText = e
                }
            }
            for d in dc.children("domain") {
                let host = d.trimmedText
                let sub = try bool(d, "includeSubdomains", file: file) ?? false
                scopes.append(
                    Scope(
                        host: host, sub: sub, line: d.line, pinned: !pins.isEmpty,
                        nested: dc.parent?.name == "domain-config"))
                if !pins.isEmpty {
                    out.domains.append(
                        AuditedDomain(
                            host: host, includeSubdomains: sub, pins: pins, expiration: expiration,
                            expirationText: expirationText,
                            expirationLine: pinSet?.line, line: d.line, platform: .android))
                }
            }
        }
        // A domain-config of its own for a subdomain, without pins, takes the subdomain out of its parent's pins
        // (Android uses the most specific match).
        // The first pinned scope (with its subdomains) whose host ends a subdomain's: a trie of the pinned hosts'
        // labels, right to left, so each lookup costs the length of the host, not the number of scopes.
        var trie: [[Substring: Int]] = [[:]]
        var firstScope: [Int?] = [nil]
        for (i, s) in scopes.enumerated() where s.pinned && s.sub {
            var node = 0
            for label in s.host.split(separator: ".", omittingEmptySubsequences: false).reversed() {
                if let next = trie[node][label] {
                    node = next
                } else {
                    trie.append([:])
                    firstScope.append(nil)
                    trie[node][label] = trie.count - 1
                    node = trie.count - 1
                }
            }
            if firstScope[node] == nil { firstScope[node] = i }
        }
        func pinnedParent(of host: String) -> Scope? {
            let labels = host.split(separator: ".", omittingEmptySubsequences: false)
            var node = 0
            var best: Int?
            // A proper suffix after a dot: at least the first label stays out.
            for label in labels.dropFirst().reversed() {
                guard let next = trie[node][label] else { break }
                node = next
                if let i = firstScope[node] { best = min(best ?? i, i) }
            }
            return best.map { scopes[$0] }
        }
        for s in scopes where !s.pinned {
            if let parent = pinnedParent(of: s.host) {
                out.add(
                    AuditCheck.subdomainsUnpinned, .medium, line: s.line, domain: s.host, mastg: "MASTG-TEST-0242",
                    note:
                        "MASTG-TEST-0242 (Missing Certificate Pinning in Network Security Configuration) fails a relevant domain without pins.",
                    message:
                        "\(s.host) has a <domain-config> of its own without a <pin-set>: Android applies the most specific "
                        + "match, so \(s.host) is not pinned although \(parent.host) pins its subdomains.",
                    fix:
                        "nest this <domain-config> inside the one for \(parent.host) (it then inherits the pin-set), or give it "
                        + "the same <pin-set>.")
            }
        }
        return out
    }
}

// MARK: - Info.plist: TrustKit's TSKConfiguration, Apple's NSAppTransportSecurity / NSPinnedDomains

/// A property-list value with the line it starts on.
indirect enum PlistNode {
    case dict([(key: String, line: Int, value: PlistNode)], line: Int)
    case array([PlistNode], line: Int)
    case string(String, line: Int)
    case bool(Bool, line: Int)
    /// `<integer>`, `<real>`, `<date>`, `<data>` (or an element no property list has): its name and text.
    case other(name: String, text: String, line: Int)

    var line: Int {
        switch self {
        case .dict(_, let l), .array(_, let l), .string(_, let l), .bool(_, let l), .other(_, _, let l): return l
        }
    }
    subscript(key: String) -> PlistNode? {
        if case .dict(let entries, _) = self { return entries.first { $0.key == key }?.value }
        return nil
    }
    var entries: [(key: String, line: Int, value: PlistNode)] {
        if case .dict(let e, _) = self { return e }
        return []
    }
    var string: String? {
        if case .string(let s, _) = self { return s }
        return nil
    }

    /// What the value is, for messages: `a <string> ('false')`, `an <array>`.
    var kind: String {
        func quoted(_ t: String) -> String {
            let t = t.trimmingCharacters(in: .whitespacesAndNewlines)
            return " ('" + (t.count > 40 ? String(t.prefix(40)) + "…" : t) + "')"
        }
        switch self {
        case .dict: return "a <dict>"
        case .array: return "an <array>"
        case .string(let s, _): return "a <string>" + quoted(s)
        case .bool(let b, _): return b ? "<true/>" : "<false/>"
        case .other(let name, let text, _):
            return (name.first.map { "aeiou".contains($0) } == true ? "an" : "a") + " <\(name)>"
                + (text.isEmpty ? "" : quoted(text))
        }
    }

    static func from(_ n: XMLElementNode, file: String) throws(PinConfigError) -> PlistNode {
        // Recursion is bounded: XMLElementNode.parse refuses elements nested deeper than XMLElementNode.maxDepth.
        switch n.name {
        case "dict":
            var entries: [(key: String, line: Int, value: PlistNode)] = []
            var i = 0
            let c = n.children
            while i < c.count {
                guard c[i].name == "key", i + 1 < c.count else {
                    throw PinConfigError(
                        file: file, line: c[i].line,
                        problem: "<dict> holds <\(c[i].name)> where a <key> and its value belong.",
                        fix: "write each entry as <key>NAME</key> followed by its value.")
                }
                entries.append((c[i].trimmedText, c[i].line, try from(c[i + 1], file: file)))
                i += 2
            }
            return .dict(entries, line: n.line)
        case "array":
            var items: [PlistNode] = []
            for child in n.children { items.append(try from(child, file: file)) }
            return .array(items, line: n.line)
        case "string": return .string(n.text, line: n.line)
        case "true": return .bool(true, line: n.line)
        case "false": return .bool(false, line: n.line)
        default: return .other(name: n.name, text: n.trimmedText, line: n.line)
        }
    }
}

enum PlistReader {
    /// Typed access to a property list: a value of the wrong type is an error naming its key path, what it is and
    /// what belongs there (the apps' own readers would ignore it, or crash on it, without a word).
    struct Typed {
        let file: String

        func wrongType(_ n: PlistNode, _ path: String, expected: String, fix: String) -> PinConfigError {
            PinConfigError(
                file: file, line: n.line, keyPath: path, problem: "\(n.kind), expected \(expected).", fix: fix)
        }
        func dict(_ n: PlistNode, _ path: String, fix: String) throws(PinConfigError) -> [(
            key: String, line: Int, value: PlistNode
        )] {
            guard case .dict(let e, _) = n else { throw wrongType(n, path, expected: "a <dict>", fix: fix) }
            return e
        }
        func array(_ n: PlistNode, _ path: String, expected: String, fix: String) throws(PinConfigError) -> [PlistNode]
        {
            guard case .array(let a, _) = n else { throw wrongType(n, path, expected: expected, fix: fix) }
            return a
        }
        func string(_ n: PlistNode, _ path: String, expected: String, fix: String) throws(PinConfigError) -> String {
            guard case .string(let s, _) = n else { throw wrongType(n, path, expected: expected, fix: fix) }
            return s
        }
        /// A boolean; `nil` when the key is absent.
        func bool(_ n: PlistNode?, _ path: String) throws(PinConfigError) -> Bool? {
            guard let n else { return nil }
            guard case .bool(let b, _) = n else {
                throw wrongType(n, path, expected: "<true/> or <false/>", fix: "write <true/> or <false/>.")
            }
            return b
        }
    }

    /// What Foundation's `boolValue` — TrustKit's reading of `TSKEnforcePinning` — makes of a value that is not
    /// a boolean: a string is YES when it starts (after spaces, a sign and zeros) with Y, T or a digit 1–9; a number
    /// when it is not zero.
    static func foundationBoolValue(_ n: PlistNode) -> Bool {
        switch n {
        case .bool(let b, _): return b
        case .string(let s, _), .other(_, let s, _):
            var t = Substring(s.trimmingCharacters(in: .whitespacesAndNewlines))
            if t.first == "+" || t.first == "-" { t = t.dropFirst() }
            t = t.drop { $0 == "0" }
            guard let c = t.first else { return false }
            return "YyTt123456789".contains(c)
        default: return false
        }
    }

    static func read(_ root: XMLElementNode, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "info-plist")
        guard let top = root.children.first else { return out }
        let plist = try PlistNode.from(top, file: file)
        let typed = Typed(file: file)
        // TrustKit.
        if let configuration = plist["TSKConfiguration"] {
            let domainsPath = "TSKConfiguration.TSKPinnedDomains"
            let hostFix =
                "write <key>TSKPinnedDomains</key><dict><key>example.com</key><dict><key>TSKPublicKeyHashes</key>"
                + "<array><string>BASE64</string>…</array></dict></dict>."
            _ = try typed.dict(
                configuration, "TSKConfiguration", fix: "write <key>TSKConfiguration</key><dict>…</dict>.")
            let domains = try configuration["TSKPinnedDomains"].map { n throws(PinConfigError) in
                try typed.dict(n, domainsPath, fix: hostFix)
            }
            for (host, line, configNode) in domains ?? [] {
                let path = "\(domainsPath).\(host)"
                let config = PlistNode.dict(try typed.dict(configNode, path, fix: hostFix), line: configNode.line)
                guard let hashesNode = config["TSKPublicKeyHashes"] else {
                    throw PinConfigError(
                        file: file, line: line, keyPath: path,
                        problem:
                            "no TSKPublicKeyHashes: TrustKit refuses a pinned domain without pins (it raises at start-up).",
                        fix:
                            "add <key>TSKPublicKeyHashes</key><array><string>BASE64</string><string>BACKUP</string></array>."
                    )
                }
                let hashes = try typed.array(
                    hashesNode, path + ".TSKPublicKeyHashes", expected: "an <array> of <string> hashes",
                    fix:
                        "write <array><string>BASE64</string><string>BACKUP</string></array>: TrustKit wants two pins or more."
                )
                guard !hashes.isEmpty else {
                    throw PinConfigError(
                        file: file, line: hashesNode.line, keyPath: path + ".TSKPublicKeyHashes",
                        problem:
                            "the array is empty: TrustKit refuses a pinned domain without pins (it raises at start-up).",
                        fix:
                            "list the SPKI SHA-256 of the server's key and of a backup key, each as <string>BASE64</string>."
                    )
                }
                var pins: [AuditedPin] = []
                for (i, h) in hashes.enumerated() {
                    let kp = "\(path).TSKPublicKeyHashes[\(i)]"
                    let text = try typed.string(
                        h, kp, expected: "a <string> with the base64 SPKI SHA-256",
                        fix: "write <string>BASE64</string>.")
                    pins.append(
                        AuditedPin(
                            sha256: try checkedSPKIPin(text, file: file, line: h.line, keyPath: kp), line: h.line,
                            keyPath: kp))
                }
                var domain = AuditedDomain(
                    host: host,
                    includeSubdomains: try typed.bool(config["TSKIncludeSubdomains"], path + ".TSKIncludeSubdomains")
                        ?? false,
                    pins: pins, line: line, keyPath: path, platform: .ios)
                if let e = config["TSKExpirationDate"] {
                    guard let s = e.string, let d = parseAuditDay(s) else {
                        throw PinConfigError(
                            file: file, line: e.line, keyPath: path + ".TSKExpirationDate",
                            problem: "\(e.kind) is not a date.",
                            fix: "write <string>YYYY-MM-DD</string>.")
                    }
                    domain.expiration = d
                    domain.expirationText = s
                    domain.expirationLine = e.line
                    domain.expirationKeyPath = path + ".TSKExpirationDate"
                }
                out.domains.append(domain)
                if let enforce = config["TSKEnforcePinning"] {
                    let kp = path + ".TSKEnforcePinning"
                    guard case .bool(let enforced, _) = enforce else {
                        // TrustKit takes any object here and asks it for boolValue: "false", "NO" and 0 turn pinning off.
                        let off = !foundationBoolValue(enforce)
                        throw PinConfigError(
                            file: file, line: enforce.line, keyPath: kp,
                            problem: "\(enforce.kind), expected <true/> or <false/>: TrustKit reads it as "
                                + (off
                                    ? "NO, so pinning is NOT enforced for \(host) (failures are only reported)."
                                    : "YES, but the type is wrong."),
                            fix: "write <true/> (TrustKit's default) in the build you ship.")
                    }
                    if !enforced {
                        out.add(
                            AuditCheck.pinningNotEnforced, .high, line: enforce.line, keyPath: kp,
                            domain: host, mastg: "MASTG-TEST-0068",
                            note:
                                "MASTG-TEST-0068 (iOS: Testing Custom Certificate Stores and Certificate Pinning) fails a domain whose pins are not enforced.",
                            message:
                                "TSKEnforcePinning is false: TrustKit only reports pin failures for \(host) and lets the connection through.",
                            fix: "set TSKEnforcePinning to true (TrustKit's default) in the build you ship.")
                    }
                }
            }
        }
        guard let atsNode = plist["NSAppTransportSecurity"] else { return out }
        let ats = PlistNode.dict(
            try typed.dict(
                atsNode, "NSAppTransportSecurity", fix: "write <key>NSAppTransportSecurity</key><dict>…</dict>."),
            line: atsNode.line)
        if let any = ats["NSAllowsArbitraryLoads"],
            try typed.bool(any, "NSAppTransportSecurity.NSAllowsArbitraryLoads") == true
        {
            out.add(
                AuditCheck.cleartextPermitted, .medium, line: any.line,
                keyPath: "NSAppTransportSecurity.NSAllowsArbitraryLoads",
                domain: "(every domain)", mastg: "MASTG-TEST-0065",
                note: "MASTG-TEST-0065 (iOS: Testing Data Encryption on the Network) fails it.",
                message:
                    "NSAllowsArbitraryLoads is true: App Transport Security allows plain HTTP (and weak TLS) to every host.",
                fix: "remove it; allow a single host with NSExceptionDomains if one truly needs HTTP.")
        }
        let exceptionsFix = "write <key>NSExceptionDomains</key><dict><key>example.com</key><dict>…</dict></dict>."
        let exceptions = try ats["NSExceptionDomains"].map { n throws(PinConfigError) in
            try typed.dict(n, "NSAppTransportSecurity.NSExceptionDomains", fix: exceptionsFix)
        }
        for (host, _, configNode) in exceptions ?? [] {
            let path = "NSAppTransportSecurity.NSExceptionDomains.\(host)"
            let config = PlistNode.dict(try typed.dict(configNode, path, fix: exceptionsFix), line: configNode.line)
            if let insecure = config["NSExceptionAllowsInsecureHTTPLoads"],
                try typed.bool(insecure, path + ".NSExceptionAllowsInsecureHTTPLoads") == true
            {
                out.add(
                    AuditCheck.cleartextPermitted, .medium, line: insecure.line,
                    keyPath: "\(path).NSExceptionAllowsInsecureHTTPLoads",
                    domain: host, mastg: "MASTG-TEST-0065",
                    note: "MASTG-TEST-0065 (iOS: Testing Data Encryption on the Network) fails it.",
                    message: "NSExceptionAllowsInsecureHTTPLoads is true for \(host): plain HTTP is allowed there.",
                    fix: "serve \(host) over HTTPS and remove the exception.")
            }
        }
        let pinnedFix =
            "write <key>NSPinnedDomains</key><dict><key>example.com</key><dict><key>NSPinnedLeafIdentities</key>"
            + "<array><dict><key>SPKI-SHA256-BASE64</key><string>BASE64</string></dict></array></dict></dict>."
        let pinnedDomains = try ats["NSPinnedDomains"].map { n throws(PinConfigError) in
            try typed.dict(n, "NSAppTransportSecurity.NSPinnedDomains", fix: pinnedFix)
        }
        for (host, line, configNode) in pinnedDomains ?? [] {
            let path = "NSAppTransportSecurity.NSPinnedDomains.\(host)"
            let config = PlistNode.dict(try typed.dict(configNode, path, fix: pinnedFix), line: configNode.line)
            let sub = try typed.bool(config["NSIncludesSubdomains"], path + ".NSIncludesSubdomains") ?? false
            // Each list is checked on its own by ATS: each is a pin set of its own here.
            for list in ["NSPinnedLeafIdentities", "NSPinnedCAIdentities"] {
                guard let listNode = config[list] else { continue }
                let items = try typed.array(
                    listNode, "\(path).\(list)", expected: "an <array> of <dict> identities",
                    fix: "write <array><dict><key>SPKI-SHA256-BASE64</key><string>BASE64</string></dict>…</array>.")
                var pins: [AuditedPin] = []
                for (i, item) in items.enumerated() {
                    let kp = "\(path).\(list)[\(i)].SPKI-SHA256-BASE64"
                    let identity = PlistNode.dict(
                        try typed.dict(
                            item, "\(path).\(list)[\(i)]",
                            fix: "write <dict><key>SPKI-SHA256-BASE64</key><string>BASE64</string></dict>."),
                        line: item.line)
                    guard let v = identity["SPKI-SHA256-BASE64"] else {
                        throw PinConfigError(
                            file: file, line: item.line, keyPath: kp,
                            problem:
                                "the identity has no SPKI-SHA256-BASE64 key (the only digest NSPinnedDomains knows).",
                            fix: "write <dict><key>SPKI-SHA256-BASE64</key><string>BASE64</string></dict>.")
                    }
                    let text = try typed.string(
                        v, kp, expected: "a <string> with the base64 SPKI SHA-256",
                        fix: "write <string>BASE64</string>.")
                    pins.append(
                        AuditedPin(
                            sha256: try checkedSPKIPin(text, file: file, line: v.line, keyPath: kp), line: v.line,
                            keyPath: kp))
                }
                out.domains.append(
                    AuditedDomain(
                        host: host, includeSubdomains: sub, pins: pins, line: line, keyPath: "\(path).\(list)",
                        platform: .ios))
            }
        }
        return out
    }
}

// MARK: - TrustKit's configuration as a Swift dictionary literal (best effort)

enum TrustKitSwiftReader {
    struct Token {
        enum Kind { case string, word, punct }
        var kind: Kind
        var text: String
        var line: Int
    }

    /// Strings, words and the punctuation of collection literals; comments skipped.
    static func tokens(_ text: String) -> [Token] {
        var out: [Token] = []
        let c = Array(text.unicodeScalars)
        var i = 0
        var line = 1
        while i < c.count {
            let ch = c[i]
            if ch == "\n" {
                line += 1
                i += 1
                continue
            }
            if ch == "/" && i + 1 < c.count && c[i + 1] == "/" {
                while i < c.count && c[i] != "\n" { i += 1 }
                continue
            }
            if ch == "/" && i + 1 < c.count && c[i + 1] == "*" {
                i += 2
                while i + 1 < c.count && !(c[i] == "*" && c[i + 1] == "/") {
                    if c[i] == "\n" { line += 1 }
                    i += 1
                }
                i += 2
                continue
            }
            if ch == "\"" {
                var s = ""
                let start = line
                i += 1
                while i < c.count && c[i] != "\"" && c[i] != "\n" {
                    if c[i] == "\\" && i + 1 < c.count { i += 1 }
                    s.unicodeScalars.append(c[i])
                    i += 1
                }
                i += 1
                out.append(Token(kind: .string, text: s, line: start))
                continue
            }
            if CharacterSet.alphanumerics.contains(ch) || ch == "_" || ch == "." {
                var s = ""
                while i < c.count && (CharacterSet.alphanumerics.contains(c[i]) || c[i] == "_" || c[i] == ".") {
                    s.unicodeScalars.append(c[i])
                    i += 1
                }
                out.append(Token(kind: .word, text: s, line: line))
                continue
            }
            if "[]:,()".unicodeScalars.contains(ch) { out.append(Token(kind: .punct, text: String(ch), line: line)) }
            i += 1
        }
        return out
    }

    indirect enum Value {
        case dict([(key: Token, value: Value)], line: Int)
        case array([Value], line: Int)
        case scalar([Token], line: Int)
        var line: Int {
            switch self {
            case .dict(_, let l), .array(_, let l), .scalar(_, let l): return l
            }
        }
        subscript(key: String) -> Value? {
            if case .dict(let e, _) = self {
                return e.first { $0.key.text == key || $0.key.text.hasSuffix("." + key) }?.value
            }
            return nil
        }
        var scalarText: String? {
            if case .scalar(let t, _) = self, t.count == 1 { return t[0].text }
            return nil
        }
    }

    /// Collection literals nested deeper are refused: TrustKit's configuration nests 3 levels, and each level is a
    /// stack frame here (and in the release of the value).
    static let maxDepth = 256

    /// A collection literal from `i` (at `[`), or the tokens of a scalar up to `,` `]` at depth 0.
    static func value(_ t: [Token], _ i: inout Int, depth: Int = 1, file: String) throws(PinConfigError) -> Value {
        guard i < t.count else { return .scalar([], line: t.last?.line ?? 1) }
        let line = t[i].line
        if t[i].text == "[" && t[i].kind == .punct {
            guard depth <= maxDepth else {
                throw PinConfigError(
                    file: file, line: line,
                    problem:
                        "kTSKPinnedDomains is nested deeper than \(maxDepth) levels of [ ] (TrustKit's configuration nests 3).",
                    fix: "check the brackets of the kTSKPinnedDomains literal: each [ closes with its ].")
            }
            i += 1
            var dictEntries: [(key: Token, value: Value)] = []
            var items: [Value] = []
            var isDict = false
            while i < t.count && !(t[i].kind == .punct && t[i].text == "]") {
                if t[i].kind == .punct && t[i].text == "," {
                    i += 1
                    continue
                }
                if t[i].kind == .punct && t[i].text == ":" {
                    isDict = true
                    i += 1
                    continue
                }  // [:]
                if i + 1 < t.count && t[i + 1].kind == .punct && t[i + 1].text == ":" {
                    isDict = true
                    let key = t[i]
                    i += 2
                    dictEntries.append((key, try value(t, &i, depth: depth + 1, file: file)))
                } else {
                    items.append(try value(t, &i, depth: depth + 1, file: file))
                }
            }
            i += 1
            return isDict ? .dict(dictEntries, line: line) : .array(items, line: line)
        }
        var parts: [Token] = []
        var depth = 0
        while i < t.count {
            let x = t[i]
            if x.kind == .punct {
                if (x.text == "," || x.text == "]") && depth == 0 { break }
                if x.text == "(" { depth += 1 }
                if x.text == ")" { depth -= 1 }
            }
            parts.append(x)
            i += 1
        }
        return .scalar(parts, line: line)
    }

    static func read(_ text: String, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "trustkit-swift")
        let t = tokens(text)
        guard let at = t.indices.first(where: { t[$0].kind == .word && t[$0].text.hasSuffix("kTSKPinnedDomains") }),
            at + 2 < t.count, t[at + 1].text == ":", t[at + 2].text == "["
        else {
            throw PinConfigError(
                file: file, problem: "no `kTSKPinnedDomains: [ … ]` dictionary literal found.",
                fix:
                    "give the Swift file that builds TrustKit's configuration (pinlab export trustkit-swift shows the shape)."
            )
        }
        var i = at + 2
        let domains = try value(t, &i, file: file)
        guard case .dict(let entries, _) = domains else {
            throw PinConfigError(
                file: file, line: t[at].line, problem: "kTSKPinnedDomains is not a dictionary literal.",
                fix: "write kTSKPinnedDomains: [\"host\": [kTSKPublicKeyHashes: [...]]].")
        }
        for (key, config) in entries {
            let host = key.text
            var pins: [AuditedPin] = []
            if case .array(let hashes, _)? = config["kTSKPublicKeyHashes"] {
                for h in hashes {
                    guard case .scalar(let parts, let line) = h, parts.count == 1, parts[0].kind == .string else {
                        continue
                    }
                    pins.append(
                        AuditedPin(
                            sha256: try checkedSPKIPin(parts[0].text, file: file, line: line, keyPath: nil), line: line)
                    )
                }
            }
            var d = AuditedDomain(
                host: host, includeSubdomains: config["kTSKIncludeSubdomains"]?.scalarText == "true", pins: pins,
                line: key.line, platform: .ios)
            if let e = config["kTSKExpirationDate"] {
                // As in an Info.plist: an expiration pinlab cannot read is an error, not an expiration left unchecked.
                guard case .scalar(let parts, let line) = e, parts.count == 1, parts[0].kind == .string,
                    let date = parseAuditDay(parts[0].text)
                else {
                    let problem: String
                    if case .scalar(let parts, _) = e, parts.count == 1, parts[0].kind == .string {
                        problem = "\"\(parts[0].text.prefix(60))\" is not a date (YYYY-MM-DD)."
                    } else if case .scalar(let parts, _) = e, !parts.isEmpty {
                        let joined = parts.map { $0.kind == .string ? "\"\($0.text)\"" : $0.text }.joined(
                            separator: " ")
                        problem =
                            "'" + (joined.count > 60 ? String(joined.prefix(60)) + "…" : joined) + "' is not a date "
                            + "literal: pinlab audit cannot check an expiration it cannot read."
                    } else {
                        problem = "not a date literal: pinlab audit cannot check an expiration it cannot read."
                    }
                    throw PinConfigError(
                        file: file, line: e.line, keyPath: "kTSKPinnedDomains.\(host).kTSKExpirationDate",
                        problem: problem,
                        fix: "write kTSKExpirationDate: \"YYYY-MM-DD\" (a string literal, as TrustKit reads it).")
                }
                d.expiration = date
                d.expirationText = parts[0].text
                d.expirationLine = line
            }
            out.domains.append(d)
            if let enforce = config["kTSKEnforcePinning"], enforce.scalarText == "false" {
                out.add(
                    AuditCheck.pinningNotEnforced, .high, line: enforce.line, domain: host, mastg: "MASTG-TEST-0068",
                    note:
                        "MASTG-TEST-0068 (iOS: Testing Custom Certificate Stores and Certificate Pinning) fails a domain whose pins are not enforced.",
                    message:
                        "kTSKEnforcePinning is false: TrustKit only reports pin failures for \(host) and lets the connection through.",
                    fix: "set kTSKEnforcePinning: true (TrustKit's default) in the build you ship.")
            }
        }
        return out
    }
}

// MARK: - OkHttp CertificatePinner.Builder().add("host", "sha256/…") (Kotlin, Java)

enum OkHttpReader {
    static func read(_ text: String, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "okhttp")
        let t = TrustKitSwiftReader.tokens(text)
        var order: [String] = []
        var byPattern: [String: AuditedDomain] = [:]
        // One pass with a stack of open parentheses: each `add(` collects the string literals directly inside it
        // (a call never closed collects them to the end of the file). Calls are then read in the order they open.
        struct Call {
            var start: Int
            var isAdd: Bool
            var strings: [TrustKitSwiftReader.Token] = []
        }
        var open: [Call] = []
        var calls: [Call] = []
        for (j, token) in t.enumerated() {
            switch (token.kind, token.text) {
            case (.punct, "("):
                let isAdd =
                    j > 0 && t[j - 1].kind == .word && (t[j - 1].text == "add" || t[j - 1].text.hasSuffix(".add"))
                open.append(Call(start: j, isAdd: isAdd))
            case (.punct, ")"):
                if let call = open.popLast(), call.isAdd { calls.append(call) }
            case (.string, _):
                if !open.isEmpty { open[open.count - 1].strings.append(token) }
            default: break
            }
        }
        calls += open.filter(\.isAdd)
        calls.sort { $0.start < $1.start }
        for call in calls {
            let strings = call.strings
            guard strings.count >= 2,
                strings.dropFirst().contains(where: {
                    $0.text.range(of: #"^sha[0-9]*/"#, options: .regularExpression) != nil
                })
            else { continue }
            let pattern = strings[0].text
            var domain =
                byPattern[pattern]
                ?? AuditedDomain(
                    host: pattern,
                    includeSubdomains: pattern.hasPrefix("**.") ? true : (pattern.hasPrefix("*.") ? nil : false),
                    pins: [], line: strings[0].line, platform: .okhttp)
            for s in strings.dropFirst() {
                guard s.text.hasPrefix("sha256/") else {
                    let algorithm = s.text.prefix { $0 != "/" }
                    throw PinConfigError(
                        file: file, line: s.line,
                        problem:
                            "'\(s.text)': the pin digest '\(algorithm)' is not sha256 (OkHttp 4 and later accept sha256/ only).",
                        fix: "pin sha256/ + base64 of the SHA-256 of the SubjectPublicKeyInfo.")
                }
                let b64 = String(s.text.dropFirst("sha256/".count))
                domain.pins.append(
                    AuditedPin(sha256: try checkedSPKIPin(b64, file: file, line: s.line, keyPath: nil), line: s.line))
            }
            if byPattern[pattern] == nil { order.append(pattern) }
            byPattern[pattern] = domain
        }
        out.domains = order.compactMap { byPattern[$0] }
        guard !out.domains.isEmpty else {
            throw PinConfigError(
                file: file, problem: "no OkHttp pin found: no .add(\"host\", \"sha256/…\") call with a host and a pin.",
                fix:
                    "give the Kotlin or Java file that builds the CertificatePinner (pinlab export okhttp-kotlin shows the shape)."
            )
        }
        for d in out.domains {
            if d.host.hasPrefix("*.") && !d.host.hasPrefix("**.") {
                let base = String(d.host.dropFirst(2))
                out.add(
                    AuditCheck.subdomainsUnpinned, .low, line: d.line, domain: d.host, mastg: "MASTG-TEST-0022",
                    note: AuditPlatform.okhttp.scopeNote,
                    message: "OkHttp's \(d.host) matches one label only: a.b.\(base) is not pinned"
                        + (byPattern[base] == nil ? ", nor is \(base) itself." : "."),
                    fix: "use **.\(base) (OkHttp 4: any depth)" + (byPattern[base] == nil ? " and add \(base)." : "."))
            } else if !d.host.hasPrefix("**.") && PinAudit.isApex(d.host)
                && byPattern["**." + d.host] == nil && byPattern["*." + d.host] == nil
            {
                out.add(
                    AuditCheck.subdomainsUnpinned, .low, line: d.line, domain: d.host, mastg: "MASTG-TEST-0022",
                    note: AuditPlatform.okhttp.scopeNote,
                    message:
                        "\(d.host) is pinned, its subdomains are not (OkHttp patterns match exactly unless they start with * or **).",
                    fix: AuditPlatform.okhttp.includeSubdomainsFix.replacingOccurrences(of: "HOST", with: d.host))
            }
        }
        return out
    }
}

// MARK: - PinningLab's pins.json

enum PinsJSONReader {
    static func read(_ data: Data, text: String, file: String) throws(PinConfigError) -> AuditedFile {
        let doc = try PinsDocument.parse(data, file: file)
        let index = stringLines(text)
        /// The first line after the first `from` lines where the string literal `needle` is written (best effort:
        /// JSON has no line model here); a lookup, not a scan of the file.
        func line(of needle: String, from: Int = 0) -> Int? {
            guard let lines = index[needle] else { return nil }
            var (lo, hi) = (0, lines.count)
            while lo < hi {
                let mid = (lo + hi) / 2
                if lines[mid] > from { hi = mid } else { lo = mid + 1 }
            }
            return lo < lines.count ? lines[lo] : nil
        }
        var out = AuditedFile(file: file, kind: "pins-json")
        for (i, d) in doc.domains.enumerated() {
            let hostLine = line(of: d.host)
            var pins: [AuditedPin] = []
            var from = (hostLine ?? 1) - 1
            for (j, p) in d.pins.enumerated() {
                let l = line(of: p.sha256, from: max(0, from))
                if let l { from = l }
                pins.append(AuditedPin(sha256: p.sha256, role: p.role, line: l, keyPath: "domains[\(i)].pins[\(j)]"))
            }
            // A backup equal to a current pin is the same key under two roles: order the backup after the current.
            pins.sort { ($0.role == "current" ? 0 : 1) < ($1.role == "current" ? 0 : 1) }
            var domain = AuditedDomain(
                host: d.host, includeSubdomains: d.includeSubdomains, pins: pins, line: hostLine,
                keyPath: "domains[\(i)]",
                platform: .pinsJSON)
            if let e = d.expiration {
                domain.expiration = PinsDocument.parseDay(e)
                domain.expirationText = e
                domain.expirationKeyPath = "domains[\(i)].expiration"
                domain.expirationLine = hostLine.flatMap { line(of: e, from: max(0, $0 - 3)) }
            }
            out.domains.append(domain)
        }
        return out
    }

    /// The lines (1-based, ascending) each string literal of a JSON text starts on, keyed by its text as written
    /// between the quotes: one pass over the bytes.
    static func stringLines(_ text: String) -> [String: [Int]] {
        var index: [String: [Int]] = [:]
        var copy = text
        copy.withUTF8 { b in
            var line = 1
            var i = 0
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\n"):
                    line += 1
                    i += 1
                case UInt8(ascii: "\""):
                    var j = i + 1
                    while j < b.count && b[j] != UInt8(ascii: "\"") && b[j] != UInt8(ascii: "\n") {
                        j += b[j] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    let end = min(j, b.count)
                    index[String(decoding: UnsafeBufferPointer(rebasing: b[(i + 1)..<end]), as: UTF8.self), default: []]
                        .append(line)
                    i = end < b.count && b[end] == UInt8(ascii: "\"") ? end + 1 : end
                default:
                    i += 1
                }
            }
        }
        return index
    }
}
