import Foundation

/// What a client claims to check beyond the chain and its pins: revocation (OCSP, CRLs), Certificate
/// Transparency, and the key exchange it requires (a post-quantum hybrid group). All are client policy, not pins (DESIGN.md, "Trust beyond the chain"): a run declares them
/// (`pinlab check --client-checks revocation=hard,ct=required`, ``PinningClient/checks``, the batch document's
/// `client-checks`), and a scenario whose outcome depends on them gives its expectations per declared policy
/// (`expect-if:`). A client that declares nothing is judged only where the outcome does not depend on it.
public struct ClientChecks: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How a client treats revocation status.
    public struct Revocation: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Ignores revocation status.
        public static let none = Revocation(rawValue: "none")
        /// Soft-fail: refuses only a certificate it has proof is revoked (a validly signed, current response that
        /// says so); a missing, stale or unverifiable response lets the connection through.
        public static let soft = Revocation(rawValue: "soft")
        /// Hard-fail: refuses unless it holds a validly signed, current response saying "good".
        public static let hard = Revocation(rawValue: "hard")
        public static let all: [Revocation] = [.none, .soft, .hard]
        public var description: String { rawValue }
        public static func < (a: Revocation, b: Revocation) -> Bool {
            (all.firstIndex(of: a) ?? .max) < (all.firstIndex(of: b) ?? .max)
        }
    }

    /// Whether a client requires Certificate Transparency (SCTs from logs it knows).
    public struct CT: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let none = CT(rawValue: "none")
        public static let required = CT(rawValue: "required")
        public static let all: [CT] = [.none, .required]
        public var description: String { rawValue }
    }

    /// The key exchange a client requires: any group its library negotiates, or a post-quantum hybrid
    /// (X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024) — a client that requires one refuses a server, or an
    /// interceptor that strips the hybrids from its ClientHello, that negotiates only a classical group.
    public struct KeyExchange: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Proceeds over whatever group the handshake negotiated.
        public static let any = KeyExchange(rawValue: "any")
        /// Refuses unless the handshake negotiated a post-quantum hybrid group.
        public static let hybrid = KeyExchange(rawValue: "hybrid")
        public static let all: [KeyExchange] = [.any, .hybrid]
        public var description: String { rawValue }
    }

    /// `nil`: not declared.
    public var revocation: Revocation?
    /// `nil`: not declared.
    public var ct: CT?
    /// `nil`: not declared, which is judged as ``KeyExchange/any`` — unlike revocation and CT, where most clients'
    /// policy is unknown, a client that requires a hybrid is rare and says so; one that does not declare it is
    /// expected to proceed over a classical group, so a HelloRetryRequest scenario is judged for every client.
    public var keyExchange: KeyExchange?

    public init(revocation: Revocation? = nil, ct: CT? = nil, keyExchange: KeyExchange? = nil) {
        self.revocation = revocation
        self.ct = ct
        self.keyExchange = keyExchange
    }

    /// Nothing declared.
    public static let undeclared = ClientChecks()
    public var isUndeclared: Bool { revocation == nil && ct == nil && keyExchange == nil }

    /// `revocation=hard,ct=required,key-exchange=hybrid` (any part may be left out).
    public var description: String {
        let parts = [
            revocation.map { "revocation=\($0)" }, ct.map { "ct=\($0)" }, keyExchange.map { "key-exchange=\($0)" },
        ].compactMap { $0 }
        return parts.isEmpty ? "undeclared" : parts.joined(separator: ",")
    }

    /// The field names, for error messages.
    public static let syntax = "revocation=none|soft|hard,ct=none|required,key-exchange=any|hybrid"

    /// Parses `revocation=hard,ct=required`; `what` names the flag or field in the error.
    public init(parsing text: String, what: String = "--client-checks") throws(ClientChecksError) {
        var checks = ClientChecks()
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let part = raw.trimmingCharacters(in: .whitespaces)
            let kv = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2 else {
                throw ClientChecksError(what: what, problem: "'\(part)' is not NAME=VALUE")
            }
            /// Sets the check named `kv[0]` to `value`, one of `valid` (`choices` in words), once.
            func declare<T: Equatable>(_ check: inout T?, _ value: T, valid: [T], choices: String)
                throws(ClientChecksError)
            {
                guard valid.contains(value) else {
                    throw ClientChecksError(what: what, problem: "\(kv[0]) '\(kv[1])' is not \(choices)")
                }
                if check != nil { throw ClientChecksError(what: what, problem: "\(kv[0]) is given twice") }
                check = value
            }
            switch kv[0] {
            case "revocation":
                try declare(
                    &checks.revocation, Revocation(rawValue: kv[1]), valid: Revocation.all,
                    choices: "none, soft or hard")
            case "ct":
                try declare(&checks.ct, CT(rawValue: kv[1]), valid: CT.all, choices: "none or required")
            case "key-exchange":
                try declare(
                    &checks.keyExchange, KeyExchange(rawValue: kv[1]), valid: KeyExchange.all, choices: "any or hybrid")
            default:
                throw ClientChecksError(
                    what: what, problem: "'\(kv[0])' is not a check (there are revocation, ct and key-exchange)")
            }
        }
        self = checks
    }

    /// Whether every check `condition` declares is declared the same here.
    public func satisfies(_ condition: ClientChecks) -> Bool {
        (condition.revocation == nil || condition.revocation == revocation)
            && (condition.ct == nil || condition.ct == ct)
            && (condition.keyExchange == nil || condition.keyExchange == (keyExchange ?? .any))
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try ClientChecks(parsing: text, what: "client-checks")
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// A `--client-checks` value (or `client-checks` field) that does not parse: what is wrong, and the form to write.
public struct ClientChecksError: Error, Sendable, CustomStringConvertible {
    public var what: String
    public var problem: String
    public var description: String {
        "\(what): \(problem); write \(ClientChecks.syntax), e.g. revocation=hard,ct=required"
    }
}

/// What a scenario expects of clients that declare a check (`expect-if:` in the file): per condition
/// (`revocation=hard`), the expectation per profile; profiles a condition does not list follow `expect`.
public struct ConditionalExpectations: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var condition: ClientChecks
        public var expectations: [PinProfile: Expectation]
        public init(condition: ClientChecks, expectations: [PinProfile: Expectation]) {
            self.condition = condition
            self.expectations = expectations
        }
    }
    /// Why the declared checks, not the pins, decide these cells.
    public var reason: String
    public var entries: [Entry]
    public init(reason: String, entries: [Entry]) {
        self.reason = reason
        self.entries = entries
    }
}
