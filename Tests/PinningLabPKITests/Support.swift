import Foundation
import PinningLab
import Testing

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

/// Runs a command with a time limit; a command still running after `timeout` is killed and reported as status -9.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30, cwd: URL? = nil) throws -> Run {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    if let cwd { p.currentDirectoryURL = cwd }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
    try inp.fileHandleForWriting.close()
    let deadline = DispatchTime.now() + timeout
    let group = DispatchGroup()
    nonisolated(unsafe) var o = Data(), e = Data()
    group.enter()
    DispatchQueue.global().async { o = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { e = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    if group.wait(timeout: deadline) == .timedOut {
        p.terminate()
        kill(p.processIdentifier, SIGKILL)
        group.wait()
        return Run(status: -9, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }
    p.waitUntilExit()
    return Run(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
               stderr: String(decoding: e, as: UTF8.self))
}

func tool(_ name: String) -> Bool {
    (try? run(["sh", "-c", "command -v \(name)"]).status) == 0
}

func temporaryDirectory(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("pinlab-\(label)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// One lab PKI for the whole test process, in a temporary folder.
enum SharedPKI {
    static let directory = temporaryDirectory("pki")
    static let pki: LabPKI = {
        do { return try Lab.pki(directory: directory) } catch { fatalError("cannot build the lab PKI: \(error)") }
    }()
}

func pem(_ der: [UInt8]) -> String {
    "-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        + "\n-----END CERTIFICATE-----\n"
}

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
