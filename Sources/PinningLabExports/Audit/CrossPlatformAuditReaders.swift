import Foundation

// MARK: - React Native (react-native-ssl-public-key-pinning) and Flutter (http_certificate_pinning, dart:io callbacks)

extension AuditCheck {
    /// A react-native-ssl-public-key-pinning domain key with `*.` or `**.`: OkHttp's wildcard on Android, a literal
    /// name matching no host through TrustKit on iOS.
    public static let wildcardDiffersByPlatform = "wildcard-differs-by-platform"
    /// The same host pinned with includeSubdomains by one `initializeSslPinning` call and without by another
    /// (the calls of `Platform.OS` branches).
    public static let subdomainsDifferByPlatform = "subdomains-differ-by-platform"
    /// A Dart `badCertificateCallback` / `onBadCertificate` that compares a fingerprint: it runs only for chains
    /// the device does not trust, so it is not pinning.
    public static let badCertificateCallbackPin = "bad-certificate-callback-pin"
    /// A Dart `badCertificateCallback` / `onBadCertificate` that returns true: any untrusted certificate is taken.
    public static let badCertificateCallbackAcceptsAll = "bad-certificate-callback-accepts-all"
    /// The checks of this file (``AuditCheck/all`` lists the others).
    public static let crossPlatform = [
        wildcardDiffersByPlatform, subdomainsDifferByPlatform, badCertificateCallbackPin,
        badCertificateCallbackAcceptsAll,
    ]
}

/// The cross-platform readers `pinlab audit` tries before the Swift/Kotlin/Java ones: a JavaScript/TypeScript source
/// calling `initializeSslPinning(...)`, a Dart source, a pubspec.yaml.
enum CrossPlatformAudit {
    /// The file read by one of the readers here, or nil when it is none of theirs.
    static func read(_ text: String, ext: String, file: String) throws(PinConfigError) -> AuditedFile? {
        let name = URL(fileURLWithPath: file).lastPathComponent
        if ["js", "jsx", "ts", "tsx", "mjs", "cjs"].contains(ext) || text.contains("initializeSslPinning") {
            return try ReactNativePinningReader.read(text, file: file)
        }
        if ext == "dart" || text.contains("package:http_certificate_pinning") || text.contains("badCertificateCallback")
        {
            return try DartPinningReader.read(text, file: file)
        }
        if name == "pubspec.yaml" || name == "pubspec.yml" { return DartPinningReader.readPubspec(text, file: file) }
        return nil
    }

    static let noCrossPlatformTest =
        "no MASTG test covers a pin configuration shared by two platforms; MASTG-TEST-0022 (Android) and MASTG-TEST-0068 (iOS) cover pinning as a whole."
}

/// Tokens of C-like sources (JavaScript, TypeScript, Dart): strings (', ", `, Dart r'…'), words, punctuation, with
/// their lines; comments skipped. Template/interpolated strings are kept as they are written.
struct CLikeToken {
    enum Kind { case string, word, punct }
    var kind: Kind
    var text: String
    var line: Int

    static func tokens(_ text: String) -> [CLikeToken] {
        var out: [CLikeToken] = []
        let c = Array(text.unicodeScalars)
        var i = 0
        var line = 1
        func isWord(_ s: Unicode.Scalar) -> Bool { CharacterSet.alphanumerics.contains(s) || s == "_" || s == "$" }
        while i < c.count {
            let ch = c[i]
            if ch == "\n" {
                line += 1
                i += 1
                continue
            }
            if ch == " " || ch == "\t" || ch == "\r" {
                i += 1
                continue
            }
            if ch == "/" && i + 1 < c.count && c[i + 1] == "/" {
                while i < c.count && c[i] != "\n" { i += 1 }
                continue
            }
            if ch == "/" && i + 1 < c.count && c[i + 1] == "*" {
                i += 2
                while i < c.count && !(c[i] == "*" && i + 1 < c.count && c[i + 1] == "/") {
                    if c[i] == "\n" { line += 1 }
                    i += 1
                }
                i += 2
                continue
            }
            let raw = ch == "r" && i + 1 < c.count && (c[i + 1] == "'" || c[i + 1] == "\"")
            if ch == "'" || ch == "\"" || ch == "`" || raw {
                if raw { i += 1 }
                let quote = c[i]
                let start = line
                var s = String.UnicodeScalarView()
                i += 1
                while i < c.count && c[i] != quote {
                    if c[i] == "\\" && !raw && i + 1 < c.count {
                        s.append(c[i + 1])
                        i += 2
                        continue
                    }
                    if c[i] == "\n" { line += 1 }
                    s.append(c[i])
                    i += 1
                }
                i += 1
                out.append(CLikeToken(kind: .string, text: String(s), line: start))
                continue
            }
            if isWord(ch) {
                var s = String.UnicodeScalarView()
                while i < c.count && isWord(c[i]) {
                    s.append(c[i])
                    i += 1
                }
                out.append(CLikeToken(kind: .word, text: String(s), line: line))
                continue
            }
            // `=>`, `===`, `==` as one token each; any other punctuation alone.
            for op in ["===", "=>", "=="]
            where String(String.UnicodeScalarView(c[i..<min(c.count, i + op.unicodeScalars.count)])) == op {
                out.append(CLikeToken(kind: .punct, text: op, line: line))
                i += op.unicodeScalars.count
                break
            }
            if i < c.count && c[i] == ch {
                out.append(CLikeToken(kind: .punct, text: String(ch), line: line))
                i += 1
            }
        }
        return out
    }

    /// The index after the bracket that closes the one at `open` (`(`, `[` or `{`), or the end.
    static func matching(_ t: [CLikeToken], _ open: Int) -> Int {
        var depth = 0
        var i = open
        while i < t.count {
            if t[i].kind == .punct {
                if "([{".contains(t[i].text) { depth += 1 }
                if ")]}".contains(t[i].text) {
                    depth -= 1
                    if depth == 0 { return i + 1 }
                }
            }
            i += 1
        }
        return t.count
    }

    /// The first `[`/`{` after `NAME =` (`const NAME = {`, `final NAME = <String>[`), or nil.
    static func definition(of name: String, in t: [CLikeToken], open: String) -> Int? {
        var i = 0
        while i + 1 < t.count {
            if t[i].kind == .word, t[i].text == name, t[i + 1].text == "=" {
                var j = i + 2
                while j < t.count && j < i + 8 {
                    if t[j].text == open { return j }
                    j += 1
                }
            }
            i += 1
        }
        return nil
    }
}

enum ReactNativePinningReader {
    struct Entry {
        var host: String
        var line: Int
        var includeSubdomains: Bool
        var pins: [AuditedPin]
        var call: Int
    }

    static func read(_ text: String, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "react-native-ssl-public-key-pinning")
        let t = CLikeToken.tokens(text)
        var entries: [Entry] = []
        var call = 0
        for i in t.indices
        where t[i].kind == .word && t[i].text == "initializeSslPinning"
            && i + 1 < t.count && t[i + 1].text == "(" && !(i > 0 && t[i - 1].text == "function")
        {
            // The options: an object literal, or a name defined as one in the same file.
            var open = i + 2
            if open < t.count, t[open].kind == .word, let d = CLikeToken.definition(of: t[open].text, in: t, open: "{")
            {
                open = d
            }
            guard open < t.count, t[open].text == "{" else { continue }
            call += 1
            entries += try domains(t, open, file: file, call: call)
        }
        for e in entries {
            out.domains.append(
                AuditedDomain(
                    host: e.host, includeSubdomains: e.includeSubdomains, pins: e.pins, line: e.line, platform: .ios))
            if e.host.hasPrefix("*.") || e.host.hasPrefix("**.") {
                let base = e.host.drop { $0 == "*" }.dropFirst()
                let android =
                    e.includeSubdomains
                    ? "Android hands OkHttp the pattern '**.\(e.host)', which it refuses (initializeSslPinning rejects)"
                    : (e.host.hasPrefix("**.")
                        ? "Android (OkHttp) pins \(base) and its subdomains at any depth"
                        : "Android (OkHttp) pins exactly one label below \(base): api.\(base) is pinned, \(base) and a.b.\(base) are not")
                out.add(
                    AuditCheck.wildcardDiffersByPlatform, .high, line: e.line, domain: e.host, mastg: nil,
                    note: CrossPlatformAudit.noCrossPlatformTest,
                    message: "the domain key '\(e.host)' means different things on the two platforms: \(android); "
                        + "on iOS TrustKit has no wildcard syntax: it matches keys literally (and their subdomains with "
                        + "includeSubdomains), so the key is refused as an invalid domain or matches no server — nothing is pinned there.",
                    fix:
                        "write the key '\(base)' with includeSubdomains: true: TrustKit (iOS) and OkHttp's '**.\(base)' "
                        + "(Android) then both pin \(base) and every subdomain.")
            }
        }
        // The same host in two calls (Platform.OS branches) with different scopes.
        var firstByHost: [String: Entry] = [:]
        for e in entries {
            if let f = firstByHost[e.host] {
                if f.call != e.call, f.includeSubdomains != e.includeSubdomains {
                    out.add(
                        AuditCheck.subdomainsDifferByPlatform, .medium, line: e.line, domain: e.host, mastg: nil,
                        note: CrossPlatformAudit.noCrossPlatformTest,
                        message:
                            "\(e.host) is pinned with includeSubdomains: \(f.includeSubdomains) (line \(f.line)) and with "
                            + "includeSubdomains: \(e.includeSubdomains) (line \(e.line)) by two initializeSslPinning calls: "
                            + "where the second call runs (usually one platform's branch) the subdomains of \(e.host) are "
                            + (e.includeSubdomains ? "pinned, elsewhere they are not." : "not pinned."),
                        fix: "pin the host with the same includeSubdomains (and the same hashes) on both platforms.")
                }
            } else {
                firstByHost[e.host] = e
            }
        }
        return out
    }

    /// The `{ 'host': { includeSubdomains, publicKeyHashes: [...] } }` object at `open`.
    static func domains(_ t: [CLikeToken], _ open: Int, file: String, call: Int) throws(PinConfigError) -> [Entry] {
        var out: [Entry] = []
        let end = CLikeToken.matching(t, open)
        var i = open + 1
        while i + 2 < end {
            // KEY ':' '{'
            if t[i].kind != .punct, t[i + 1].text == ":", t[i + 2].text == "{" {
                let inner = CLikeToken.matching(t, i + 2)
                var entry = Entry(host: t[i].text, line: t[i].line, includeSubdomains: false, pins: [], call: call)
                var j = i + 3
                while j + 2 < inner {
                    if t[j].text == "includeSubdomains", t[j + 1].text == ":" {
                        entry.includeSubdomains = t[j + 2].text == "true"
                    }
                    if t[j].text == "publicKeyHashes", t[j + 1].text == ":" {
                        var list = j + 2
                        if t[list].kind == .word, let d = CLikeToken.definition(of: t[list].text, in: t, open: "[") {
                            list = d
                        }
                        if t[list].text == "[" {
                            let listEnd = CLikeToken.matching(t, list)
                            for k in (list + 1)..<max(list + 1, listEnd - 1) where t[k].kind == .string {
                                entry.pins.append(
                                    AuditedPin(
                                        sha256: try checkedSPKIPin(
                                            t[k].text, file: file, line: t[k].line, keyPath: nil),
                                        role: nil, line: t[k].line))
                            }
                        }
                    }
                    j += 1
                }
                out.append(entry)
                i = inner
                continue
            }
            i += 1
        }
        return out
    }
}

enum DartPinningReader {
    /// Where the fingerprints of http_certificate_pinning (or ssl_pinning_plugin, the same call) are passed.
    static let pinningCalls: Set<String> = [
        "CertificatePinningInterceptor", "SecureHttpClient", "HttpCertificatePinning", "SslPinningPlugin",
    ]

    static func read(_ text: String, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "dart")
        let t = CLikeToken.tokens(text)
        // Fingerprint lists: `allowedSHAFingerprints: [...]` or the first positional list of a pinning call.
        var fingerprints: [(String, Int)] = []
        var firstLine: Int?
        var problem: PinConfigError?
        func collect(_ start: Int) {
            var list = start
            if list < t.count, t[list].kind == .word, let d = CLikeToken.definition(of: t[list].text, in: t, open: "[")
            {
                list = d
            }
            while list < t.count && t[list].text == "<" || (list < t.count && t[list].text == "String")
                || (list < t.count && t[list].text == ">")
            {
                list += 1
            }
            guard list < t.count, t[list].text == "[" else { return }
            let end = CLikeToken.matching(t, list)
            for k in list..<end where t[k].kind == .string {
                let text = t[k].text.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == " " }) else {
                    problem =
                        problem
                        ?? PinConfigError(
                            file: file, line: t[k].line, problem: "'\(text)' is not a certificate fingerprint.",
                            fix:
                                "write the SHA-256 fingerprint of the certificate as hex pairs: openssl x509 -noout -fingerprint -sha256 -in CERT.pem"
                        )
                    continue
                }
                let hex = text.uppercased().filter { $0.isHexDigit }
                guard hex.count == 64 || hex.count == 40 else {
                    problem =
                        problem
                        ?? PinConfigError(
                            file: file, line: t[k].line,
                            problem:
                                "'\(text)' is \(hex.count / 2) bytes; a SHA-256 fingerprint is 32 (a SHA-1 one 20).",
                            fix: "copy the whole output of openssl x509 -noout -fingerprint -sha256 -in CERT.pem")
                    continue
                }
                fingerprints.append((hex, t[k].line))
                firstLine = firstLine ?? t[k].line
            }
        }
        for i in t.indices where t[i].kind == .word {
            if t[i].text == "allowedSHAFingerprints", i + 1 < t.count, t[i + 1].text == ":" { collect(i + 2) }
            if pinningCalls.contains(t[i].text) {
                var j = i + 1
                if j + 1 < t.count, t[j].text == ".", t[j + 1].kind == .word { j += 2 }
                if j < t.count, t[j].text == "(" { collect(j + 1) }
            }
        }
        if let problem { throw problem }
        var distinct: [String] = []
        for (f, _) in fingerprints where !distinct.contains(f) { distinct.append(f) }
        if !distinct.isEmpty {
            let host =
                t.first { $0.kind == .string && ($0.text.hasPrefix("https://") || $0.text.hasPrefix("http://")) }
                .flatMap { URL(string: $0.text)?.host } ?? "(every host the client calls)"
            // The fingerprints are certificate hashes, not SPKI pins: kept out of the SPKI checks (--against).
            out.domains.append(
                AuditedDomain(host: host, includeSubdomains: nil, pins: [], line: firstLine, platform: .okhttp))
            if distinct.count == 1 {
                out.add(
                    AuditCheck.singlePin, .high, line: firstLine, domain: host, mastg: nil,
                    note:
                        "no MASTG test counts pins: MASTG-TEST-0022 (Android) and MASTG-TEST-0068 (iOS) cover pinning as a whole.",
                    message:
                        "one certificate fingerprint and no backup: http_certificate_pinning compares the SHA-256 of the "
                        + "whole certificate, so the next certificate — even a renewal with the same key — is refused until users update.",
                    fix:
                        "list the fingerprint of the next certificate too (issue it before you need it), and ship it before the switch."
                )
            }
        }
        // badCertificateCallback / onBadCertificate: runs only when the chain is untrusted.
        for i in t.indices
        where t[i].kind == .word && (t[i].text == "badCertificateCallback" || t[i].text == "onBadCertificate")
            && i + 1 < t.count && (t[i + 1].text == "=" || t[i + 1].text == ":")
        {
            let body = callbackBody(t, from: i + 2)
            let words = body.map { $0.text.lowercased() }
            let comparesHash =
                words.contains { w in
                    ["sha256", "sha1", "fingerprint", "fingerprints", "der", "pem", "digest", "pin", "pins", "hash"]
                        .contains(w)
                        || w.contains("fingerprint") || w.contains("sha256") || w.contains("pin")
                } || body.contains { $0.kind == .string && $0.text.filter(\.isHexDigit).count >= 40 }
            let returnsTrue = body.count <= 3 && body.contains { $0.text == "true" }
            if comparesHash {
                out.add(
                    AuditCheck.badCertificateCallbackPin, .high, line: t[i].line, domain: nil, mastg: nil,
                    note:
                        "no MASTG test names Dart's badCertificateCallback; MASTG-TEST-0244 (Missing Certificate Pinning in Network Traffic) sees the missing pinning at run time.",
                    message:
                        "\(t[i].text) compares a certificate fingerprint, but dart:io calls it only when the chain does "
                        + "not verify: a chain ending at any trusted root — a user-installed or MDM interception root included — "
                        + "never reaches it, so this is not pinning (and an untrusted chain with a matching fingerprint is accepted).",
                    fix:
                        "check the certificate on every connection: dio's IOHttpClientAdapter(validateCertificate: …), or "
                        + "http_certificate_pinning's CertificatePinningInterceptor; leave badCertificateCallback unset."
                )
            } else if returnsTrue {
                out.add(
                    AuditCheck.badCertificateCallbackAcceptsAll, .high, line: t[i].line, domain: nil,
                    mastg: "MASTG-TEST-0282",
                    note: "MASTG-TEST-0282 (Unsafe Custom Trust Evaluation) fails it.",
                    message: "\(t[i].text) returns true: every certificate the device does not trust is accepted, an "
                        + "interception proxy's included.",
                    fix:
                        "remove the callback; for a private CA, give the HttpClient a SecurityContext that trusts that CA only."
                )
            }
        }
        return out
    }

    /// The tokens of the callback starting at `from`: `(args) => expr` up to `;`/`,`/`)` at depth 0, or a `{…}` body.
    static func callbackBody(_ t: [CLikeToken], from: Int) -> [CLikeToken] {
        var i = from
        if i < t.count, t[i].text == "(" { i = CLikeToken.matching(t, i) }
        if i < t.count, t[i].text == "{" { return Array(t[i..<CLikeToken.matching(t, i)]) }
        if i < t.count, t[i].text == "=>" {
            var j = i + 1
            var depth = 0
            while j < t.count {
                let s = t[j].text
                if t[j].kind == .punct {
                    if "([{".contains(s) { depth += 1 }
                    if ")]}".contains(s) {
                        if depth == 0 { break }
                        depth -= 1
                    }
                    if (s == ";" || s == ",") && depth == 0 { break }
                }
                j += 1
            }
            return Array(t[(i + 1)..<j])
        }
        // A function name: its declaration's body.
        if i < t.count, t[i].kind == .word {
            let name = t[i].text
            for k in t.indices where t[k].text == name && k != i && k + 1 < t.count && t[k + 1].text == "(" {
                let after = CLikeToken.matching(t, k + 1)
                if after < t.count, t[after].text == "{" || t[after].text == "=>" {
                    return callbackBody(t, from: k + 1)
                }
            }
        }
        return []
    }

    /// pubspec.yaml: which pinning packages the app depends on (the pins are in its Dart sources).
    static func readPubspec(_ text: String, file: String) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "pubspec")
        var n = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            n += 1
            let key = line.trimmingCharacters(in: .whitespaces).split(separator: ":").first.map(String.init) ?? ""
            if key == "ssl_pinning_plugin" || key == "http_certificate_pinning" {
                out.add(
                    "dart-pinning-package", .info, line: n, domain: nil, mastg: nil,
                    note: "informational: the fingerprints are in the app's Dart sources.",
                    message:
                        "the app depends on \(key): its pins are SHA-256 fingerprints of whole certificates, checked in a "
                        + "separate native connection before each request (dart:io itself ignores Android's network security config).",
                    fix: "audit the Dart files that call it (pinlab audit lib/…/*.dart).")
            }
        }
        return out
    }
}
