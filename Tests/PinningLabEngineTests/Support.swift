import Foundation
import PinningLab
@testable import PinningLabCore
import PinningLabGnuTLS
import PinningLabOpenSSL

#if canImport(Glibc)
import Glibc
#endif

/// The two engines, as a test argument with a readable name.
enum EngineKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case openssl, gnutls
    var engine: any TLSEngine {
        switch self {
        case .openssl: return OpenSSLEngine()
        case .gnutls: return GnuTLSEngine()
        }
    }
    var description: String { rawValue }
}

/// The lab PKI in a temporary folder (made once per test process) and PEM files for command-line clients.
final class Fixtures: Sendable {
    static let shared: Fixtures = {
        do { return try Fixtures() } catch { fatalError("cannot build the test PKI: \(error)") }
    }()

    let pki: LabPKI
    let directory: URL

    private init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pinninglab-engine-tests-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        pki = try Lab.pki(directory: directory.appendingPathComponent("pki"), seed: "engine-tests")
        for name in ["lab-root", "proxy-root", "client-ca", "rogue-root"] {
            try pem([pki.identity(name).certificateDER]).write(to: file(name + ".pem"))
        }
        try (pem([pki.identity("lab-root").certificateDER]) + pem([pki.identity("proxy-root").certificateDER]))
            .write(to: file("lab-root+proxy-root.pem"))
        for name in ["client-valid", "client-untrusted", "client-expired", "client-wrong-eku"] {
            let id = try pki.identity(name)
            try pem(id.servedChainDER).write(to: file(name + ".crt"))
            try pem([id.privateKeyPKCS8DER], label: "PRIVATE KEY").write(to: file(name + ".key"))
            chmod(file(name + ".key").path, 0o600)
        }
    }

    func file(_ name: String) -> URL { directory.appendingPathComponent(name) }
    func path(_ name: String) -> String { file(name).path }
    func identity(_ name: String) -> Identity {
        guard let id = pki[name] else { fatalError("no identity \(name) in the lab PKI") }
        return id
    }
    func der(_ name: String) -> [UInt8] { identity(name).certificateDER }

    /// A configuration serving `chain` (PKI names, in order) with the key of `keyOf` (default: the first).
    func configuration(_ chain: [String], keyOf: String? = nil) -> ServerTLSConfiguration {
        .makeServerConfiguration(
            chainDER: chain.map(der), privateKeyPKCS8DER: identity(keyOf ?? chain[0]).privateKeyPKCS8DER,
            name: chain[0], serverNames: ["localhost"])
    }

    /// curl's `sha256//…` pin of an identity's key.
    func curlPin(_ name: String) -> String { "sha256//" + identity(name).pins.spkiBase64 }
}

func pem(_ ders: [[UInt8]], label: String = "CERTIFICATE") -> Data {
    var s = ""
    for der in ders {
        let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        s += "-----BEGIN \(label)-----\n\(b64)\n-----END \(label)-----\n"
    }
    return Data(s.utf8)
}

/// DER certificates of every PEM block in `text`, in order.
func derBlocks(inPEM text: String) -> [[UInt8]] {
    var out: [[UInt8]] = []
    var current: String? = nil
    for line in text.split(whereSeparator: \.isNewline) {
        if line.hasPrefix("-----BEGIN CERTIFICATE-----") {
            current = ""
        } else if line.hasPrefix("-----END CERTIFICATE-----") {
            if let c = current, let d = Data(base64Encoded: c) { out.append(Array(d)) }
            current = nil
        } else if current != nil {
            current! += line.trimmingCharacters(in: .whitespaces)
        }
    }
    return out
}

struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs a command-line client with a hard timeout; stdin is `input` then EOF (or kept open for `holdStdin`).
func run(_ arguments: [String], input: String = "", timeout: Duration = .seconds(10)) async -> ProcessResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    do { try p.run() } catch { return ProcessResult(status: -1, stdout: "", stderr: "\(error)", timedOut: false) }
    inp.fileHandleForWriting.write(Data(input.utf8))
    try? inp.fileHandleForWriting.close()
    // Read both pipes concurrently so a chatty client never blocks on a full pipe.
    async let o = Task.detached { out.fileHandleForReading.readDataToEndOfFile() }.value
    async let e = Task.detached { err.fileHandleForReading.readDataToEndOfFile() }.value
    let deadline = ContinuousClock.now + timeout
    var timedOut = false
    while p.isRunning {
        if ContinuousClock.now > deadline {
            timedOut = true
            p.terminate()
            break
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
    p.waitUntilExit()
    let (od, ed) = await (o, e)
    return ProcessResult(
        status: p.terminationStatus, stdout: String(decoding: od, as: UTF8.self),
        stderr: String(decoding: ed, as: UTF8.self), timedOut: timedOut)
}

/// A raw TCP client for hostile behaviour (garbage, truncated ClientHello, silence).
final class RawClient {
    let fd: Int32
    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = in_port_t(UInt16(port).bigEndian)
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            close(fd)
            return nil
        }
    }
    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    deinit { close(fd) }
}

/// Socket inodes of the listening socket and connections on `port` (from /proc/net/tcp and tcp6).
func socketInodes(port: Int) -> Set<String> {
    var inodes = Set<String>()
    let hexPort = String(format: ":%04X", port)
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else { continue }
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count > 9, f[1].hasSuffix(hexPort) else { continue }
            if f[9] != "0" { inodes.insert(String(f[9])) }
        }
    }
    return inodes
}

/// The `socket:[inode]` targets of this process's open descriptors.
func openSocketInodes() -> Set<String> {
    let fm = FileManager.default
    var set = Set<String>()
    for entry in (try? fm.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        if let target = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"),
            target.hasPrefix("socket:[")
        {
            set.insert(String(target.dropFirst(8).dropLast()))
        }
    }
    return set
}

/// Names of this process's threads.
func threadNames() -> [String] {
    let fm = FileManager.default
    return ((try? fm.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap {
        try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

func openFDCount() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count }

/// What each of `fds` points at now (`nil`: closed).
func targets(of fds: [Int32]) -> [String?] {
    fds.map { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}
