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
/// Output goes to files, not pipes: a pipe's write end inherited by a process spawned concurrently by another test
/// would keep the read open until that process ends.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30, cwd: URL? = nil) throws -> Run {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    if let cwd { p.currentDirectoryURL = cwd }
    let tmp = FileManager.default.temporaryDirectory
    let id = UUID().uuidString
    let outURL = tmp.appendingPathComponent("pinlab-run-\(id).out"), errURL = tmp.appendingPathComponent("pinlab-run-\(id).err")
    let inURL = tmp.appendingPathComponent("pinlab-run-\(id).in")
    try Data((stdin ?? "").utf8).write(to: inURL)
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { for u in [outURL, errURL, inURL] { try? FileManager.default.removeItem(at: u) } }
    let outHandle = try FileHandle(forWritingTo: outURL), errHandle = try FileHandle(forWritingTo: errURL)
    let inHandle = try FileHandle(forReadingFrom: inURL)
    defer { try? outHandle.close(); try? errHandle.close(); try? inHandle.close() }
    p.standardOutput = outHandle
    p.standardError = errHandle
    p.standardInput = inHandle
    try p.run()
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(5_000) }
    var status: Int32
    if p.isRunning {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        status = -9
    } else {
        p.waitUntilExit()
        status = p.terminationStatus
    }
    return Run(status: status, stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
               stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
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
