public import Foundation

/// A problem in a scenario file: names the file, the line and column, the field, what is wrong and how to fix it.
/// Equality compares the code only, so tests can match errors (`#expect(throws: ScenarioError(.unknownIdentity))`).
public struct ScenarioError: Error, Sendable, CustomStringConvertible, LocalizedError, Equatable {
    /// The kind of problem. A struct over a private enum so new codes can be added without breaking anyone.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case syntax = "yaml-syntax"
            case notAMapping = "not-a-mapping"
            case unknownField = "unknown-field"
            case missingField = "missing-field"
            case wrongType = "wrong-type"
            case invalidID = "invalid-id"
            case idMismatch = "id-does-not-match-file-name"
            case duplicateID = "duplicate-id"
            case unknownIdentity = "unknown-identity"
            case wrongRole = "wrong-role"
            case emptyChain = "empty-chain"
            case duplicateInChain = "duplicate-in-chain"
            case unknownProfile = "unknown-profile"
            case missingExpectation = "missing-expectation"
            case badExpectation = "bad-expectation"
            case badTrustProfile = "bad-trust-profile"
            case badTLSVersion = "bad-tls-version"
            case badCipherSuite = "bad-cipher-suite"
            case badClientAuthMode = "bad-client-auth-mode"
            case missingClientAuthTrust = "missing-client-auth-trust"
            case presentWithoutClientAuth = "client-certificate-without-client-auth"
            case emptyCatalogue = "empty-catalogue"
            case unreadable = "unreadable-file"
            case unknownScenario = "unknown-scenario"
            case badRefusal = "bad-refusal-category"
            case badHost = "bad-host"
            case duplicateScenario = "duplicate-scenario"
            case badPolicy = "bad-policy"
            case badVariance = "bad-variance"
            case badStaple = "bad-ocsp-staple"
            case badConditionalExpectation = "bad-expect-if"
            case unknownMASTGTest = "unknown-mastg-test"
        }
        fileprivate var base: Base
        fileprivate init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The file is not valid YAML.
        public static let syntax = Code(.syntax)
        /// `mastg:` names a test that is not in PinningLab's list of OWASP MASTG tests (`MASTG.entries`).
        public static let unknownMASTGTest = Code(.unknownMASTGTest)
        /// A value that must be a mapping (`key: value` lines) is something else.
        public static let notAMapping = Code(.notAMapping)
        /// A key the scenario format does not know (often a typo).
        public static let unknownField = Code(.unknownField)
        /// A required key is absent.
        public static let missingField = Code(.missingField)
        /// A value has the wrong shape (a list where text is expected, …).
        public static let wrongType = Code(.wrongType)
        /// The id is not lower-case letters, digits, dots and dashes.
        public static let invalidID = Code(.invalidID)
        /// The id differs from the file name.
        public static let idMismatch = Code(.idMismatch)
        /// Two files declare the same id.
        public static let duplicateID = Code(.duplicateID)
        /// A name that is not an identity of the PKI.
        public static let unknownIdentity = Code(.unknownIdentity)
        /// An identity used where its role does not fit (a root as the server's certificate, …).
        public static let wrongRole = Code(.wrongRole)
        /// `server.chain` lists no certificate.
        public static let emptyChain = Code(.emptyChain)
        /// The same identity appears twice in `server.chain`.
        public static let duplicateInChain = Code(.duplicateInChain)
        /// A key under `expect` or `notes` that is not a pin profile.
        public static let unknownProfile = Code(.unknownProfile)
        /// A pin profile has no expectation.
        public static let missingExpectation = Code(.missingExpectation)
        /// An expectation other than `accept` or `refuse`.
        public static let badExpectation = Code(.badExpectation)
        /// `client.trust` names something that is not a root of the PKI.
        public static let badTrustProfile = Code(.badTrustProfile)
        /// A TLS version other than `tls1.0`…`tls1.3`.
        public static let badTLSVersion = Code(.badTLSVersion)
        /// A cipher suite that is not an IANA `TLS_…` name.
        public static let badCipherSuite = Code(.badCipherSuite)
        /// `server.client-auth.mode` is not `none`, `optional` or `required`.
        public static let badClientAuthMode = Code(.badClientAuthMode)
        /// Client authentication is on but no CA is listed to verify client certificates.
        public static let missingClientAuthTrust = Code(.missingClientAuthTrust)
        /// `client.present` is set but the server never asks for a client certificate.
        public static let presentWithoutClientAuth = Code(.presentWithoutClientAuth)
        /// A catalogue directory holds no scenario file.
        public static let emptyCatalogue = Code(.emptyCatalogue)
        /// The file could not be read.
        public static let unreadable = Code(.unreadable)
        /// `refusal` is not a refusal category, or names one in a scenario that expects no refusal.
        public static let badRefusal = Code(.badRefusal)
        /// `client.host` is not a DNS name the lab root may certify (`localhost`, or a name under `test`/`localhost`).
        public static let badHost = Code(.badHost)
        /// Two scenarios of a catalogue show the same thing (chain, trust, versions, ciphers, client authentication,
        /// host and expected row).
        public static let duplicateScenario = Code(.duplicateScenario)
        /// No scenario of the catalogue has this id.
        public static let unknownScenario = Code(.unknownScenario)
        /// `policy` names an unknown platform, has no reason, or gives an expectation that is not accept or refuse.
        public static let badPolicy = Code(.badPolicy)
        /// `varies` marks a profile a correct client must refuse, or gives no reason.
        public static let badVariance = Code(.badVariance)
        /// `server.ocsp-staple` names no kind of OCSP response, or staples for a chain whose first certificate no
        /// lab CA issued.
        public static let badStaple = Code(.badStaple)
        /// `expect-if` names an unknown check, gives no reason, or changes no cell.
        public static let badConditionalExpectation = Code(.badConditionalExpectation)
    }

    public var code: Code
    /// The file as the user knows it, e.g. `scenarios/rekey.yaml`.
    public var file: String
    /// 1-based line and column, when known.
    public var line: Int?
    public var column: Int?
    /// The field path, e.g. `server.chain[1]`; empty for the whole file.
    public var field: String
    /// What is wrong.
    public var problem: String
    /// How to fix it.
    public var fix: String

    public init(
        _ code: Code, file: String = "", line: Int? = nil, column: Int? = nil, field: String = "",
        problem: String = "", fix: String = ""
    ) {
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.problem = problem
        self.fix = fix
    }

    public static func == (a: ScenarioError, b: ScenarioError) -> Bool { a.code == b.code }

    /// `scenarios/rekey.yaml:12:5: server.chain[1]: unknown identity 'x'. Fix: …`
    public var description: String {
        var s = file
        if let line { s += ":\(line)" + (column.map { ":\($0)" } ?? "") }
        if !s.isEmpty { s += ": " }
        if !field.isEmpty { s += "\(field): " }
        s += problem
        if !fix.isEmpty { s += " Fix: \(fix)" }
        return s
    }

    public var errorDescription: String? { description }
}

/// Every problem found while loading a catalogue directory, one per broken file.
public struct CatalogueError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public var errors: [ScenarioError]
    public init(errors: [ScenarioError]) { self.errors = errors }
    public var description: String {
        let head =
            errors.count == 1
            ? "1 problem in the scenario catalogue:" : "\(errors.count) problems in the scenario catalogue:"
        return ([head] + errors.map { "  " + $0.description }).joined(separator: "\n")
    }
    public var errorDescription: String? { description }
}
