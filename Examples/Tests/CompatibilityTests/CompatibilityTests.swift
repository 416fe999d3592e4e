// The cross-verifier matrix (Compatibility/run.py) must match the committed table, and the BoringSSL regression
// case must behave as documented: a leaf with an IP-address SAN under the lab root's address constraints is refused
// by BoringSSL and accepted by OpenSSL — the reason the lab's leaves carry DNS names only.
//
// Needs the parent package's `pinlab` (`swift build` there) and this package's `compat-verify`
// (`swift build --build-tests` here builds it); CI builds both. The stacks (go, java, node, certtool, gnutls-cli)
// are installed by .ci/run; a missing one is skipped with a printed reason by run.py.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
private let root = examples.deletingLastPathComponent()

private struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a command with posix_spawn (not Foundation's Process, which crashed this project's CI once:
/// swift-corelibs-foundation#5472), its output going to temporary files.
private func run(_ args: [String], environment: [String: String] = [:]) throws -> Run {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
        "compat-\(getpid())-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let outPath = dir.appendingPathComponent("out").path
    let errPath = dir.appendingPathComponent("err").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
    let argv = (["/usr/bin/env"] + args).map { strdup($0) } + [nil]
    let envp = env.map { strdup($0) } + [nil]
    defer { for p in (argv + envp) { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, envp)
    guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EINVAL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let exited = (status & 0x7f) == 0
    return Run(
        status: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f),
        stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}

private func binary(_ env: String, _ fallback: URL) -> String? {
    if let p = ProcessInfo.processInfo.environment[env], FileManager.default.isExecutableFile(atPath: p) { return p }
    return FileManager.default.isExecutableFile(atPath: fallback.path) ? fallback.path : nil
}

@Suite("Cross-verifier compatibility of the lab PKI", .serialized)
struct CompatibilityTests {
    @Test("every stack agrees with the committed matrix; BoringSSL refuses an IP SAN under IP constraints")
    func matrix() throws {
        let pinlab = try #require(
            binary("PINLAB", root.appendingPathComponent(".build/debug/pinlab")),
            "build the parent package first (`swift build` in \(root.path)) or set PINLAB")
        let verify = try #require(
            binary("COMPAT_VERIFY", examples.appendingPathComponent(".build/debug/compat-verify")),
            "build compat-verify first (`swift build --product compat-verify` in \(examples.path)) or set COMPAT_VERIFY"
        )
        let r = try run(
            ["python3", root.appendingPathComponent("Compatibility/run.py").path, "--check", "--details"],
            environment: ["PINLAB": pinlab, "COMPAT_VERIFY": verify])
        print(r.stderr)
        #expect(r.status == 0, "run.py --check failed:\n\(r.stderr)")

        // stack \t case \t result \t detail
        var answers: [String: [String: String]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 3 else { continue }
            answers[f[0], default: [:]][f[1]] = f[2]
        }
        let boring = try #require(answers["BoringSSL (swift-nio-ssl)"], "the BoringSSL stack did not run: \(r.stderr)")
        #expect(boring["leaf-v1"] == "accept")
        #expect(boring["scenario baseline (OpenSSL engine)"] == "accept")
        #expect(boring["scenario baseline (GnuTLS engine)"] == "accept")
        #expect(boring["scenario untrusted-rogue (GnuTLS engine)"] == "refuse")
        // The proof that the suite can fail: put IP SANs back under the IP constraints and BoringSSL refuses.
        #expect(boring["IP SAN under IP constraints"] == "refuse")
        #expect(answers["OpenSSL `openssl verify`"]?["IP SAN under IP constraints"] == "accept")
        // A lab-issued certificate for a real-world name fails wherever trust-anchor constraints are honoured.
        for stack in [
            "OpenSSL `openssl verify`", "GnuTLS `certtool --verify`", "BoringSSL (swift-nio-ssl)",
            "swift-certificates `Verifier`", "Python ssl",
        ] {
            #expect(answers[stack]?["attacker: www.example.com"] == "refuse", "\(stack)")
        }
        // The chains of a CA that moves: the cross-signed rollover is accepted by every stack (with or without the new
        // root trusted); an intermediate as the only anchor splits OpenSSL (no PARTIAL_CHAIN) from GnuTLS and Go.
        for (stack, verdicts) in answers where verdicts["root-rollover-cross-signed"] != nil {
            #expect(verdicts["root-rollover-cross-signed"] == "accept", "\(stack)")
            #expect(verdicts["root-rollover-new-root-trusted"] == "accept", "\(stack)")
        }
        #expect(answers["OpenSSL `openssl verify`"]?["intermediate-as-trust-anchor"] == "refuse")
        #expect(answers["GnuTLS `certtool --verify`"]?["intermediate-as-trust-anchor"] == "accept")
        #expect(answers["Go crypto/x509"].map { $0["intermediate-as-trust-anchor"] == "accept" } != false)
    }
}
