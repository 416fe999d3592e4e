import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

typealias Run = CommandOutput

/// Runs a command with a time limit (``commandOutput(_:stdin:timeout:)``).
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) async throws -> Run {
    await commandOutput(args, stdin: stdin, timeout: timeout)
}

func temporaryDirectory(_ label: String) -> URL {
    let url = TestScratch.root.appendingPathComponent("pinlab-\(label)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// One lab PKI for the whole test process, in a temporary folder. Built once; if that fails, every test that
/// asks for it fails with the error (the others still run).
enum SharedPKI {
    static let directory = temporaryDirectory("pki")
    /// Built once, on a thread of its own: a lazily built static made every test that asked for it wait in a
    /// cooperative thread (two on two cores), and the whole test process stalled for the ~56 s the build took while
    /// hundreds of tests started.
    private static let built = Task<LabPKI, any Error> {
        try await onDedicatedThread(named: "test.sharedpki") {
            // As `pinlab pki init` does: every identity's files written with the certificates.
            Result { try Lab.pki(spec: Lab.builtInSpec(), options: Lab.pkiOptions(directory: directory)) }
        }.get()
    }

    static func pki() async throws -> LabPKI { try await built.value }
}

func pem(_ der: [UInt8]) -> String { PEM.encode(der) }

/// Writes PEM files for openssl/certtool: the certificate, its untrusted issuers, and a root.
struct ChainFiles {
    var cert: String
    var untrusted: String
    var chain: String
    init(_ id: Identity, in dir: URL) throws {
        let base = dir.appendingPathComponent(id.name)
        cert = base.path + ".pem"
        untrusted = base.path + ".untrusted.pem"
        chain = base.path + ".chain.pem"
        try pem(id.certificateDER).write(toFile: cert, atomically: true, encoding: .utf8)
        try (id.issuerChainDER.map(pem).joined()).write(toFile: untrusted, atomically: true, encoding: .utf8)
        try (id.servedChainDER.map(pem).joined()).write(toFile: chain, atomically: true, encoding: .utf8)
    }
}
