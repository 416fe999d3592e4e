import Foundation

/// A pin configuration file that cannot be read (`pinlab audit FILE…`, `pinlab export --from pins.json`): the file,
/// where in it (a line, or a key path such as `domains[0].pins[1].sha256`), what is wrong and the fix.
public struct PinConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// 1-based line, when the reader knows it.
    public var line: Int?
    /// The key path inside the document (JSON, property lists), when the reader knows it.
    public var keyPath: String?
    public var problem: String
    public var fix: String

    public init(file: String, line: Int? = nil, keyPath: String? = nil, problem: String, fix: String) {
        self.file = file
        self.line = line
        self.keyPath = keyPath
        self.problem = problem
        self.fix = fix
    }

    /// `FILE:LINE: KEYPATH: problem Fix: fix`.
    public var description: String {
        var s = file
        if let line { s += ":\(line)" }
        s += ": "
        if let keyPath { s += "\(keyPath): " }
        return s + problem + " Fix: " + fix
    }
}

/// Checks one SPKI pin as written in a configuration: base64 of exactly 32 bytes (SHA-256).
func checkedSPKIPin(_ text: String, file: String, line: Int?, keyPath: String?) throws(PinConfigError) -> String {
    let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let data = Data(base64Encoded: t) else {
        throw PinConfigError(
            file: file, line: line, keyPath: keyPath, problem: "'\(t)' is not base64.",
            fix: "write the SHA-256 of the DER SubjectPublicKeyInfo in base64 (44 characters ending in '='): "
                + "openssl x509 -in CERT.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
        )
    }
    guard data.count == 32 else {
        throw PinConfigError(
            file: file, line: line, keyPath: keyPath,
            problem: "'\(t)' decodes to \(data.count) bytes; a SHA-256 pin is 32 bytes (44 base64 characters)"
                + (data.count == 20 ? " — 20 bytes is a SHA-1 digest." : "."),
            fix:
                "pin the SHA-256 of the SubjectPublicKeyInfo: openssl x509 -in CERT.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
        )
    }
    return t
}
