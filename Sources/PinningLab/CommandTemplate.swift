import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// Everything a command template can refer to in one cell. Built by the runner; every value is plain text.
public struct CellContext: Sendable, Hashable {
    public var scenario: String
    public var profile: PinProfile
    public var host: String
    public var ip: String
    public var port: Int
    /// PEM file with the roots of the scenario's trust profile.
    public var caFile: String
    /// The profile's hashes: SPKI SHA-256, or certificate SHA-256 for `leaf-cert`. Empty for `none`.
    public var pins: [[UInt8]]
    /// SHA-256 of the DER certificates of the pinned identities (whatever the profile pins). Empty for `none`.
    public var certificatePins: [[UInt8]]
    public var clientCertificateFile: String?
    public var clientKeyFile: String?
    public var clientPKCS12File: String?
    public var clientPKCS12Password: String?
    /// A hosts-format file (``hostsFileContents``) that maps the host name of every connection of the cell to its
    /// server's address, for resolvers that read one (the JVM's `-Djdk.net.hosts.file`). Written by
    /// ``CommandClient`` before the run when `nil`.
    public var hostsFile: String?
    /// The hosts the pins are declared for; `nil` declares them for `host` itself.
    public var pinScope: PinScope?
    /// The OCSP responder the served certificate names (its Authority Information Access URL), moved to the
    /// scenario's lab responder: `http://127.0.0.1:PORT/lab-intermediate-a` for
    /// `http://ocsp.pinning.test/lab-intermediate-a`. `nil` where the certificate names none or the scenario runs no
    /// responder (`server.responder`).
    public var ocspURL: String?
    /// The CRL distribution point the served certificate names, moved to the scenario's lab responder the same way.
    public var crlURL: String?
    /// The connections of a cell made of several (a scenario's `steps`), in order; empty for a one-connection cell,
    /// whose one connection is step 1 (``stepList``).
    public var steps: [StepContext] = []
    /// The lab's `ECHConfigList` in base64 (`{ech.config}`), set for the scenarios tagged `ech` only: there the client
    /// is to offer Encrypted Client Hello with it (`ech/echconfig.b64` in the PKI folder); `nil` elsewhere.
    public var echConfig: String?

    public init(
        scenario: String, profile: PinProfile, host: String = "localhost", ip: String = "127.0.0.1", port: Int,
        caFile: String, pins: [[UInt8]], certificatePins: [[UInt8]], clientCertificateFile: String? = nil,
        clientKeyFile: String? = nil, clientPKCS12File: String? = nil, clientPKCS12Password: String? = nil,
        pinScope: PinScope? = nil
    ) {
        self.scenario = scenario
        self.profile = profile
        self.host = host
        self.ip = ip
        self.port = port
        self.caFile = caFile
        self.pins = pins
        self.certificatePins = certificatePins
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
        self.clientPKCS12File = clientPKCS12File
        self.clientPKCS12Password = clientPKCS12Password
        self.pinScope = pinScope
    }

    /// The scope of the pins, spelled out: the declared one, or `host` alone.
    public var effectivePinScope: PinScope { pinScope ?? PinScope(domain: host, includeSubdomains: false) }

    /// The contents of ``hostsFile``: a line `IP NAME` for every spelling a resolver may look up (the name as the
    /// scenario spells it, lower-cased, and without its trailing dot) of the host of every connection of the cell
    /// (``stepList``), each line once. `API.Pinning.Test` gets the lines `127.0.0.1 API.Pinning.Test` and
    /// `127.0.0.1 api.pinning.test`: OkHttp lower-cases the URL's host before it asks the JVM, whose hosts-file
    /// resolver compares names as written.
    public var hostsFileContents: String {
        var lines: [String] = []
        for step in stepList {
            for name in HostSpelling.lookups(of: step.host) {
                let line = "\(step.ip) \(name)"
                if !lines.contains(line) { lines.append(line) }
            }
        }
        return lines.map { $0 + "\n" }.joined()
    }

    public var url: String { "https://\(host):\(port)/" }

    /// `HOST:PORT:IP`, curl's `--resolve` entry that sends the scenario's host name to the fixture server.
    public var resolve: String { "\(host):\(port):\(ip.contains(":") ? "[\(ip)]" : ip)" }

    /// The connections of the cell: ``steps``, or the cell itself as step 1 when it is one connection.
    public var stepList: [StepContext] {
        steps.isEmpty
            ? [StepContext(step: 1, host: host, ip: ip, port: port, pins: pins, certificatePins: certificatePins)]
            : steps
    }

    /// The value of every placeholder (without braces). See the CommandTemplates article for the exact meaning.
    public var values: [String: String] {
        var out = singleValues
        for step in stepList {
            for (name, value) in step.values { out["\(name).\(step.step)"] = value }
        }
        return out
    }

    private var singleValues: [String: String] {
        let b64 = pins.map { Data($0).base64EncodedString() }
        return [
            "url": url,
            "host": host,
            "port": String(port),
            "ip": ip,
            "resolve": resolve,
            "hosts.file": hostsFile ?? "",
            "ca": caFile,
            "pins": b64.joined(separator: ","),
            "pins.curl": PinFormat.curlPins(b64),
            "pins.okhttp": b64.map(PinFormat.okhttpPin).joined(separator: ","),
            "pins.hex": pins.map(\.hexString).joined(separator: ","),
            "pins.domain": pins.isEmpty ? "" : effectivePinScope.domain,
            "pins.subdomains": pins.isEmpty ? "" : String(effectivePinScope.includeSubdomains),
            "pins.okhttp.pattern": pins.isEmpty ? "" : effectivePinScope.okHttpPattern,
            "certpins.hex": certificatePins.map(\.hexString).joined(separator: ","),
            "client.cert": clientCertificateFile ?? "",
            "client.key": clientKeyFile ?? "",
            "client.p12": clientPKCS12File ?? "",
            "client.password": clientPKCS12File == nil ? "" : (clientPKCS12Password ?? ""),
            "scenario": scenario,
            "profile": profile.rawValue,
            "ocsp.url": ocspURL ?? "",
            "crl.url": crlURL ?? "",
            "ech.config": echConfig ?? "",
        ]
    }

    /// The same values as environment variables: `PINLAB_URL`, `PINLAB_PINS_CURL`, `PINLAB_CLIENT_CERT`, …
    public var environment: [String: String] {
        var env: [String: String] = [:]
        for (k, v) in values {
            env["PINLAB_" + k.uppercased().replacingOccurrences(of: ".", with: "_")] = v
        }
        env["PINLAB_STEPS"] = stepsJSON
        return env
    }

    /// `PINLAB_STEPS`: the connections of the cell as a JSON array, in order, one object per step with `step`,
    /// `host`, `ip`, `port`, `url`, `resolve`, `pins` (base64 SHA-256 hashes, empty where the step's pins are not
    /// in force) and `certpins` (hex). A one-connection cell has one step.
    public var stepsJSON: String {
        struct Entry: Encodable {
            var step: Int, host: String, ip: String, port: Int, url: String, resolve: String, pins: [String],
                certpins: [String]
        }
        let entries = stepList.map {
            Entry(
                step: $0.step, host: $0.host, ip: $0.ip, port: $0.port, url: $0.url, resolve: $0.resolve,
                pins: $0.pins.map { Data($0).base64EncodedString() }, certpins: $0.certificatePins.map(\.hexString))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(entries)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }
}

/// The spellings of a host name that resolvers look up. A scenario may spell its host as a user or a redirect
/// would (`API.Pinning.Test`, `api.pinning.test.`); clients then ask their resolver for the name as given or for a
/// canonical form (OkHttp's `HttpUrl` lower-cases it; others drop the trailing dot), and a resolver fed from a file
/// (the JVM's `jdk.net.hosts.file`) compares names as written. A hosts file maps every spelling.
package enum HostSpelling {
    /// `host` in DNS's canonical form: ASCII lower case, one trailing dot dropped.
    package static func canonical(_ host: String) -> String {
        var h = lowercased(host)
        if h.count > 1, h.hasSuffix(".") { h.removeLast() }
        return h
    }

    /// The spellings a resolver may be asked for, in order and each once: `host` as given, lower-cased, and
    /// canonical (lower case, without the trailing dot).
    package static func lookups(of host: String) -> [String] {
        var out: [String] = []
        for name in [host, lowercased(host), canonical(host)] where !out.contains(name) { out.append(name) }
        return out
    }

    /// ASCII letters only lower-cased (DNS compares ASCII case-insensitively; other characters are left alone).
    static func lowercased(_ host: String) -> String {
        String(decoding: host.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}

/// One connection of a cell, as the per-step placeholders give it: `{url.2}`, `{host.2}`, `{resolve.2}`,
/// `{pins.curl.2}`, … (``CommandTemplate/stepPlaceholders``).
public struct StepContext: Sendable, Hashable {
    /// 1, 2, …
    public var step: Int
    public var host: String
    public var ip: String
    public var port: Int
    /// The hashes the client holds in this step: the profile's, or none where the step's pins are not in force.
    public var pins: [[UInt8]]
    public var certificatePins: [[UInt8]]

    public init(
        step: Int, host: String, ip: String = "127.0.0.1", port: Int, pins: [[UInt8]], certificatePins: [[UInt8]]
    ) {
        self.step = step
        self.host = host
        self.ip = ip
        self.port = port
        self.pins = pins
        self.certificatePins = certificatePins
    }

    public var url: String { "https://\(host):\(port)/" }
    public var resolve: String { "\(host):\(port):\(ip.contains(":") ? "[\(ip)]" : ip)" }

    /// The values of the step placeholders, without the `.N` suffix.
    var values: [String: String] {
        let b64 = pins.map { Data($0).base64EncodedString() }
        return [
            "url": url, "host": host, "port": String(port), "ip": ip, "resolve": resolve,
            "pins": b64.joined(separator: ","), "pins.curl": PinFormat.curlPins(b64),
            "pins.okhttp": b64.map(PinFormat.okhttpPin).joined(separator: ","),
            "pins.hex": pins.map(\.hexString).joined(separator: ","),
            "certpins.hex": certificatePins.map(\.hexString).joined(separator: ","),
        ]
    }
}

/// A client command with `{placeholders}`, run once per cell. Its exit status is the client's own claim:
/// 0 means it accepted (sent its request), anything else that it refused.
///
/// A word wrapped in square brackets, `[--pinnedpubkey {pins.curl}]`, is an optional group: when every
/// placeholder in it has a value it becomes one argument per space-separated piece; when one of them is empty
/// (the profile `none` has no pins, a scenario without client authentication has no client certificate) the
/// whole group is left out.
public struct CommandTemplate: Sendable, Hashable, CustomStringConvertible {
    /// The placeholders, in the order the documentation lists them.
    public static let placeholders = [
        "url", "host", "port", "ip", "resolve", "hosts.file", "ca", "pins", "pins.curl", "pins.okhttp", "pins.hex",
        "pins.domain", "pins.subdomains",
        "pins.okhttp.pattern", "certpins.hex",
        "client.cert", "client.key", "client.p12", "client.password", "scenario", "profile", "ocsp.url", "crl.url",
        "ech.config",
    ]

    /// The placeholders that also come per step, with the step's number after a dot: `{url.1}`, `{url.2}`,
    /// `{pins.curl.2}`, … A template that uses one runs every connection of a cell in one process (a scenario's
    /// `steps`); on a one-connection cell, step 1 is the cell and later steps' placeholders are empty.
    public static let stepPlaceholders = [
        "url", "host", "port", "ip", "resolve", "pins", "pins.curl", "pins.okhttp", "pins.hex", "certpins.hex",
    ]

    /// `(name, step)` when `name` is a per-step placeholder (`pins.curl.2` is `("pins.curl", 2)`).
    static func stepPlaceholder(_ name: String) -> (base: String, step: Int)? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        let digits = name[name.index(after: dot)...]
        guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
            digits.first != "0", let n = Int(digits)
        else { return nil }
        let base = String(name[..<dot])
        return stepPlaceholders.contains(base) ? (base, n) : nil
    }

    static func isKnown(_ name: String) -> Bool { placeholders.contains(name) || stepPlaceholder(name) != nil }

    /// The highest step number the template names (`{url.2}`: 2); 0 when it uses no per-step placeholder.
    public var stepsNamed: Int {
        words.flatMap { Self.names(in: $0) }.compactMap { Self.stepPlaceholder($0)?.step }.max() ?? 0
    }

    /// Whether the template runs the connections of a cell made of several in one process.
    public var usesSteps: Bool { stepsNamed > 0 }

    public var words: [String]

    /// Parses and checks a template; unknown placeholders and empty templates are errors.
    public init(_ words: [String]) throws {
        guard let first = words.first, !first.isEmpty else {
            throw CheckSetupError(
                .commandTemplate, problem: "the command template is empty.",
                fix: "give the client command after `--`, e.g. `pinlab check -- curl -sf --cacert {ca} {url}`.")
        }
        for (i, w) in words.enumerated() {
            for name in Self.names(in: w) where !Self.isKnown(name) {
                let hint = suggestion(name, in: Self.placeholders).map { "Did you mean {\($0)}? " } ?? ""
                throw CheckSetupError(
                    .commandTemplate, problem: "word \(i + 1) ('\(w)') uses the unknown placeholder {\(name)}.",
                    fix:
                        "\(hint)Placeholders: \(Self.placeholders.map { "{\($0)}" }.joined(separator: " ")); per connection of a scenario with steps: \(Self.stepPlaceholders.map { "{\($0).N}" }.joined(separator: " ")) (N = 1, 2, …)."
                )
            }
            if let open = Self.unclosedPlaceholder(in: w) {
                throw CheckSetupError(
                    .commandTemplate,
                    problem: "word \(i + 1) ('\(w)') opens the placeholder {\(open) without a closing brace.",
                    fix:
                        "write it as {\(suggestion(open, in: Self.placeholders) ?? open)}; placeholders: \(Self.placeholders.map { "{\($0)}" }.joined(separator: " "))."
                )
            }
            if w.hasPrefix("[") != w.hasSuffix("]") || (w == "[" || w == "]") {
                throw CheckSetupError(
                    .commandTemplate,
                    problem: "word \(i + 1) ('\(w)') opens or closes an optional group without the other bracket.",
                    fix: "write an optional group as one quoted word: '[--pinnedpubkey {pins.curl}]'.")
            }
        }
        self.words = words
    }

    public var description: String { words.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ") }

    /// The placeholder names used in a word. `%{name}` is curl's `--write-out` variable (`%{exitcode}`), not a
    /// placeholder.
    static func names(in word: String) -> [String] {
        var out: [String] = []
        var rest = Substring(word)
        while let open = rest.firstIndex(of: "{") {
            let after = rest[rest.index(after: open)...]
            guard let close = after.firstIndex(of: "}") else { break }
            let name = after[..<close]
            let writeOut = open > rest.startIndex && rest[rest.index(before: open)] == "%"
            if !writeOut, !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0 == "." || $0 == "-" || $0.isNumber }) {
                out.append(String(name))
            }
            rest = after[after.index(after: close)...]
        }
        return out
    }

    /// The name after a `{` that no `}` closes, when it reads as the start of a placeholder (`'{url'`, `{pins.cu`):
    /// such a word would otherwise go to the client as it is, in every cell. Braces around other text (a shell's
    /// `${x}`, JSON) are left alone.
    static func unclosedPlaceholder(in word: String) -> String? {
        guard let open = word.lastIndex(of: "{"), !word[open...].contains("}") else { return nil }
        let name = word[word.index(after: open)...]
        guard !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0 == "." || $0 == "-" || $0.isNumber }) else {
            return nil
        }
        return placeholders.contains { $0.hasPrefix(name) || name.hasPrefix($0) } ? String(name) : nil
    }

    static func substitute(_ word: String, _ values: [String: String]) -> String {
        var out = word
        for name in names(in: word) { out = out.replacingOccurrences(of: "{\(name)}", with: values[name] ?? "") }
        return out
    }

    /// The argument vector for one cell.
    public func arguments(for context: CellContext) -> [String] {
        let values = context.values
        var out: [String] = []
        for w in words {
            if w.count >= 2, w.hasPrefix("["), w.hasSuffix("]") {
                let inner = String(w.dropFirst().dropLast())
                if Self.names(in: inner).contains(where: { (values[$0] ?? "").isEmpty }) { continue }
                for piece in inner.split(separator: " ", omittingEmptySubsequences: true) {
                    out.append(Self.substitute(String(piece), values))
                }
            } else {
                out.append(Self.substitute(w, values))
            }
        }
        return out
    }
}
