import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabPKI
public import Testing

/// The command-line tools the test suites call, found on the PATH — one lookup for every suite.
///
/// A test that needs a tool says so with a trait, `@Test(.requires("gnutls-cli"))` or `@Suite(.requires("curl"))`:
/// on a developer's machine without the tool it is reported as skipped, with the package that installs it; in CI
/// (`CI` set), where `.ci/run` installs every tool, it always runs, so a missing tool fails it instead of passing
/// unseen. `swift test` on a machine with only libssl-dev and libgnutls28-dev passes with visible skips.
public enum Tool {
    /// The executable `name` on the PATH of this process, if there is one.
    public static func path(_ name: String) -> String? { ChildProcess.resolve(name) }

    /// Whether this is a CI run (`CI` set): every tool is installed there and a missing one is a failure.
    public static let inCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Whether a test needing `names` runs: always in CI; elsewhere only when each is on the PATH.
    public static func runs(needing names: String...) -> Bool { runs(needing: names) }

    public static func runs(needing names: [String]) -> Bool { inCI || names.allSatisfy { path($0) != nil } }

    /// python3 with `module` importable (`pip install MODULE`).
    public static func hasPythonModule(_ module: String) -> Bool {
        pythonModules.withLock { known in
            if let k = known[module] { return k }
            let has =
                path("python3") != nil
                && ChildProcess.runBlocking(["python3", "-c", "import \(module)"], timeout: .seconds(60)).status == 0
            known[module] = has
            return has
        }
    }
    private static let pythonModules = Locked<[String: Bool]>([:])

    /// How to install `name` (Debian/Ubuntu and Homebrew).
    public static func installHint(_ name: String) -> String {
        let debian: [String: String] = [
            "gnutls-cli": "gnutls-bin", "gnutls-serv": "gnutls-bin", "certtool": "gnutls-bin",
            "xmllint": "libxml2-utils",
            "java": "default-jdk-headless", "javac": "default-jdk-headless", "go": "golang-go", "node": "nodejs",
            "chromium": "chromium", "openssl": "openssl", "curl": "curl", "python3": "python3", "git": "git",
            "pgrep": "procps", "nghttp": "nghttp2-client", "h2load": "nghttp2-client",
        ]
        let brew: [String: String] = [
            "gnutls-cli": "gnutls", "gnutls-serv": "gnutls", "certtool": "gnutls", "xmllint": "libxml2",
            "java": "openjdk", "javac": "openjdk", "go": "go", "node": "node", "chromium": "--cask chromium",
            "openssl": "openssl@3", "curl": "curl", "python3": "python", "git": "git", "nghttp": "nghttp2",
            "h2load": "nghttp2",
        ]
        return "apt-get install \(debian[name] ?? name)" + (brew[name].map { " or brew install \($0)" } ?? "")
    }

    /// Why a test is skipped when `names` are missing: each missing tool and how to install it.
    static func skipReason(_ names: [String]) -> String {
        let missing = names.filter { path($0) == nil }
        return "needs " + missing.map { "\($0) (\(installHint($0)))" }.joined(separator: ", ")
            + "; CI installs it and runs this test"
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite only where every tool in `tools` is on the PATH — skipped with the install hint
    /// elsewhere — and always in CI, where a missing tool fails it.
    public static func requires(_ tools: String..., sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: Tool.runs(needing: tools), Comment(rawValue: Tool.skipReason(tools)), sourceLocation: sourceLocation)
    }

    /// Runs the test only where HTTP/2 can be spoken (nghttp2's runtime library loads, see `HTTP2.availability`):
    /// skipped elsewhere with the package that installs it, always run in CI.
    public static func requiresHTTP2(sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: Tool.inCI || HTTP2.availability.isAvailable,
            Comment(
                rawValue: "needs the nghttp2 library (apt-get install libnghttp2-14 or brew install nghttp2): "
                    + (HTTP2.availability.unavailableReason ?? "available") + "; CI installs it"),
            sourceLocation: sourceLocation)
    }

    /// Like ``requires(_:sourceLocation:)`` for a python3 module (`pip install MODULE`).
    public static func requiresPython(module: String, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: Tool.inCI || Tool.hasPythonModule(module),
            Comment(rawValue: "needs python3 with the \(module) module (pip install \(module)); CI installs it"),
            sourceLocation: sourceLocation)
    }

    /// Like ``requires(_:sourceLocation:)`` for a file a package installs (a jar, say).
    public static func requiresFile(_ path: String, package: String, sourceLocation: SourceLocation = #_sourceLocation)
        -> Self
    {
        .enabled(
            if: Tool.inCI || FileManager.default.fileExists(atPath: path),
            Comment(rawValue: "needs \(path) (apt-get install \(package)); CI installs it"),
            sourceLocation: sourceLocation)
    }
}

/// The threads of this process by thread id, with their names (`/proc/self/task/*/comm`; empty where there is no
/// /proc).
public func threadsByID() -> [String: String] {
    let fm = FileManager.default
    var out: [String: String] = [:]
    for tid in (try? fm.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
        if let name = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8) {
            out[tid] = name.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
    return out
}
