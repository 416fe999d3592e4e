import Foundation
import PinningLab
import PinningLabGnuTLS
import PinningLabOpenSSL
import PinningLabTestSupport
import Testing

@testable import PinningLabCore

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
    /// Built once per test process; a failure fails each suite that needs it (its init throws) instead of killing
    /// the whole test process.
    private static let shared = Result { try Fixtures() }
    static func load() throws -> Fixtures { try shared.get() }

    let pki: LabPKI
    let directory: URL

    private init() throws {
        directory = TestScratch.root.appendingPathComponent(
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
    /// The identity `name`; an unknown name fails the calling test (and returns the lab's first identity, so that
    /// the test goes on to its end instead of killing the process).
    func identity(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> Identity {
        if let id = pki[name] { return id }
        Issue.record("no identity \(name) in the lab PKI", sourceLocation: sourceLocation)
        return pki.identities[0]
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

/// The environment of the tools these tests run: this process's PATH (so that a run with tools hidden from the PATH
/// hides them here too), the C locale.
let childEnvironment: [String: String] = {
    var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin", "LANG": "C"]
    if let home = ProcessInfo.processInfo.environment["HOME"] { env["HOME"] = home }
    return env
}()

struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs a command-line client with a hard timeout; stdin is `input` then EOF. Through the package's
/// `ChildProcess` (pipes made close-on-exec atomically under its spawn lock, output drained on a dedicated thread),
/// so a child another suite spawns at the same moment never inherits one of our pipe ends.
/// A tool that cannot be started (not installed) fails the test that ran it — a test needing a tool says so with
/// `.requires("tool")`, and is then skipped where the tool is missing, never passed on an empty result.
func run(
    _ arguments: [String], input: String = "", timeout: Duration = .seconds(10),
    sourceLocation: SourceLocation = #_sourceLocation
) async -> ProcessResult {
    let r = await ChildProcess.run(arguments, environment: childEnvironment, input: Array(input.utf8), timeout: timeout)
    if let why = r.launchError {
        Issue.record(
            "cannot run \(arguments.first ?? "?"): \(why) (\(Tool.installHint(arguments.first ?? "?")))",
            sourceLocation: sourceLocation)
        return ProcessResult(status: -1, stdout: "", stderr: why, timedOut: false)
    }
    return ProcessResult(status: r.status, stdout: r.stdoutText, stderr: r.stderrText, timedOut: r.timedOut)
}

/// Starts a process in the background with stdin, stdout and stderr on /dev/null; returns its pid.
func spawnBackground(_ arguments: [String]) -> pid_t? {
    let actions = UnsafeMutablePointer<posix_spawn_file_actions_t>.allocate(capacity: 1)
    defer { actions.deallocate() }
    posix_spawn_file_actions_init(actions)
    defer { posix_spawn_file_actions_destroy(actions) }
    for fd: Int32 in [0, 1, 2] {
        posix_spawn_file_actions_addopen(actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    let envp: [UnsafeMutablePointer<CChar>?] = childEnvironment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for p in envp { free(p) } }
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
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc != 0 {
            close(fd)
            return nil
        }
    }
    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
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

func openFDCount() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count }

/// What each of `fds` points at now (`nil`: closed).
func targets(of fds: [Int32]) -> [String?] {
    fds.map { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}
