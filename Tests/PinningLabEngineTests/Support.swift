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

func pem(_ ders: [[UInt8]], label: String = "CERTIFICATE") -> Data { Data(PEM.encode(ders, label: label).utf8) }

/// DER certificates of every PEM block in `text`, in order.
func derBlocks(inPEM text: String) -> [[UInt8]] { PEM.decodeAll(text) }

let childEnvironment: [String: String] = {
    var env = ["PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C"]
    if let home = ProcessInfo.processInfo.environment["HOME"] { env["HOME"] = home }
    return env
}()

struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs a command-line client with a hard timeout; stdin is `input` then EOF.
///
/// posix_spawn and waitpid rather than Foundation's Process, and no reliance on pipe EOF: suites running in
/// parallel spawn processes too, and a child of theirs can inherit a pipe end of ours, which would hold EOF back
/// for as long as that child lives. Output is drained while the client runs and once more after it exits.
func run(_ arguments: [String], input: String = "", timeout: Duration = .seconds(10)) async -> ProcessResult {
    var inP: [Int32] = [-1, -1], outP: [Int32] = [-1, -1], errP: [Int32] = [-1, -1]
    guard pipe(&inP) == 0, pipe(&outP) == 0, pipe(&errP) == 0 else {
        return ProcessResult(status: -1, stdout: "", stderr: "pipe failed", timedOut: false)
    }
    for fd in inP + outP + errP { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    for fd in [outP[0], errP[0], inP[1]] { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
    let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
    posix_spawn_file_actions_init(actions)
    posix_spawn_file_actions_adddup2(actions, inP[0], 0)
    posix_spawn_file_actions_adddup2(actions, outP[1], 1)
    posix_spawn_file_actions_adddup2(actions, errP[1], 2)
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = childEnvironment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, arguments[0], actions, nil, argv, envp)
    posix_spawn_file_actions_destroy(actions)
    actions.deallocate()
    argv.forEach { free($0) }
    envp.forEach { free($0) }
    close(inP[0])
    close(outP[1])
    close(errP[1])
    var out = Data(), err = Data()
    func drain() {
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(outP[0], &buf, buf.count)
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        while true {
            let n = read(errP[0], &buf, buf.count)
            if n <= 0 { break }
            err.append(contentsOf: buf[0..<n])
        }
    }
    defer {
        close(outP[0])
        close(errP[0])
    }
    guard rc == 0 else {
        close(inP[1])
        return ProcessResult(status: -1, stdout: "", stderr: "posix_spawnp \(arguments[0]): \(rc)", timedOut: false)
    }
    let bytes = Array(input.utf8)
    if !bytes.isEmpty { _ = bytes.withUnsafeBytes { write(inP[1], $0.baseAddress, $0.count) } }
    close(inP[1])
    let deadline = ContinuousClock.now + timeout
    var timedOut = false
    var status: Int32 = 0
    while true {
        drain()
        let w = waitpid(pid, &status, WNOHANG)
        if w == pid { break }
        if ContinuousClock.now > deadline && !timedOut {
            timedOut = true
            kill(pid, SIGKILL)
        }
        try? await Task.sleep(for: .milliseconds(3))
    }
    drain()
    let exit: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
    return ProcessResult(
        status: exit, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
        timedOut: timedOut)
}

/// Starts a process in the background with stdin, stdout and stderr on /dev/null; returns its pid.
func spawnBackground(_ arguments: [String]) -> pid_t? {
    let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
    defer { actions.deallocate() }
    posix_spawn_file_actions_init(actions)
    defer { posix_spawn_file_actions_destroy(actions) }
    for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let envp: [UnsafeMutablePointer<CChar>?] = childEnvironment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { envp.forEach { free($0) } }
    var pid: pid_t = 0
    return posix_spawnp(&pid, arguments[0], actions, nil, argv, envp) == 0 ? pid : nil
}

func killAndReap(_ pid: pid_t) {
    kill(pid, SIGKILL)
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

/// A raw TCP client for hostile behaviour (garbage, truncated ClientHello, silence).
final class RawClient {
    let fd: Int32
    init?(port: Int) {
        // Close-on-exec, so that processes other tests spawn meanwhile do not inherit (and keep open) the socket.
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
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
