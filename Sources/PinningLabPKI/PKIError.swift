/// An error of the lab PKI: a bad spec, an unreadable key, a failed write. Says where (file, line, entity,
/// field), what is wrong and how to fix it. Equality is on ``code`` so tests can match errors.
public struct PKIError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of error this is. A struct over strings so new codes can be added without breaking users.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let fileUnreadable = Code("file-unreadable")
        public static let yamlSyntax = Code("yaml-syntax")
        public static let wrongType = Code("wrong-type")
        public static let missingField = Code("missing-field")
        public static let unknownField = Code("unknown-field")
        public static let unsupportedVersion = Code("unsupported-version")
        public static let badName = Code("bad-name")
        public static let duplicateName = Code("duplicate-name")
        public static let unknownRole = Code("unknown-role")
        public static let unknownIssuer = Code("unknown-issuer")
        public static let issuerCycle = Code("issuer-cycle")
        public static let rootWithIssuer = Code("root-with-issuer")
        public static let badDuration = Code("bad-duration")
        public static let emptyValidity = Code("empty-validity")
        public static let leafMarkedCA = Code("leaf-marked-ca")
        public static let pathLengthOnLeaf = Code("path-length-on-leaf")
        public static let unknownKeyType = Code("unknown-key-type")
        public static let unknownKey = Code("unknown-key")
        public static let keyTypeConflict = Code("key-type-conflict")
        public static let badHost = Code("bad-host")
        public static let badNameConstraint = Code("bad-name-constraint")
        public static let unknownUsage = Code("unknown-usage")
        public static let unsupportedSignature = Code("unsupported-signature")
        public static let badTwin = Code("bad-twin")
        public static let unknownSubjectAttribute = Code("unknown-subject-attribute")
        public static let unknownIdentity = Code("unknown-identity")
        public static let keyFileUnreadable = Code("key-file-unreadable")
        public static let keyFileTooOpen = Code("key-file-too-open")
        /// The PKI folder, its `keys/` or a key file belongs to another user or can be written by others.
        public static let notPrivate = Code("not-private")
        public static let keyFileCorrupt = Code("key-file-corrupt")
        public static let keyTypeChanged = Code("key-type-changed")
        public static let writeFailed = Code("write-failed")
        public static let lockFailed = Code("lock-failed")
        public static let issuanceFailed = Code("issuance-failed")
        public static let pkcs12Failed = Code("pkcs12-failed")
        public static let wrongPassword = Code("wrong-password")
        public static let seededUnconstrainedRoot = Code("seeded-unconstrained-root")
        public static let badScope = Code("bad-scope")
        public static let badRevocationURL = Code("bad-revocation-url")
        public static let badRevocation = Code("bad-revocation")
        /// The PKI folder was made from a spec file of one's own, and this opening would replace it with another.
        public static let specReplaced = Code("spec-replaced")
        /// The spec asks for a key type this platform cannot make (ML-DSA before macOS 26).
        public static let keyTypeUnavailable = Code("key-type-unavailable")
    }

    public var code: Code
    /// The file the problem is in, when there is one.
    public var file: String?
    /// 1-based line in `file`.
    public var line: Int?
    /// The entity of the spec (e.g. `leaf-v1`) or key (e.g. `K1`) concerned.
    public var entity: String?
    /// The field concerned, e.g. `issuer` or `validity.notAfter`.
    public var field: String?
    /// What is wrong.
    public var reason: String
    /// How to fix it.
    public var fix: String?

    public init(
        _ code: Code, _ reason: String, file: String? = nil, line: Int? = nil, entity: String? = nil,
        field: String? = nil, fix: String? = nil
    ) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
        self.entity = entity
        self.field = field
        self.fix = fix
    }

    public var description: String {
        var s = ""
        if let file {
            s += file
            if let line { s += ":\(line)" }
            s += ": "
        }
        var location: [String] = []
        if let entity { location.append("'\(entity)'") }
        if let field { location.append("field '\(field)'") }
        if !location.isEmpty { s += location.joined(separator: ", ") + ": " }
        s += reason
        if let fix { s += " — \(fix)" }
        return s
    }

    public static func == (a: PKIError, b: PKIError) -> Bool { a.code == b.code }
}
