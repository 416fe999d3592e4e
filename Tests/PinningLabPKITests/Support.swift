import Foundation
import PinningLabTestSupport
import PinningLab
import Testing

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

/// Runs a command with a time limit; a command still running after `timeout` is killed.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30) async throws -> Run {
    let r = await ChildProcess.run(args, input: Array((stdin ?? "").utf8), timeout: .milliseconds(Int(timeout * 1000)))
    return Run(status: r.timedOut ? -9 : r.status, stdout: r.stdoutText, stderr: r.stderrText)
}


func temporaryDirectory(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-\(label)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// One lab PKI for the whole test process, in a temporary folder. Built once; if that fails, every test that
/// asks for it fails with the error (the others still run).
enum SharedPKI {
    static let directory = temporaryDirectory("pki")
    private static let built = Result<LabPKI, any Error> {
        // As `pinlab pki init` does: every identity's files written with the certificates.
        try Lab.pki(spec: Lab.builtInSpec(), options: Lab.pkiOptions(directory: directory))
    }

    static func pki() throws -> LabPKI { try built.get() }
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
