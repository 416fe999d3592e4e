// Security properties of what the lab puts on a machine (issue 12). Covered elsewhere and not repeated here:
// - a lab-issued certificate for a real-world name or address fails verification under the lab root's name
//   constraints: NameConstraintTests (Tests/PinningLabPKITests), PKITests.nameConstraintsKeepTheRootOffRealSites;
// - binding a non-loopback address needs allowNonLoopback: ServerFeatureTests.nonLoopback;
// - key files 0600 and folders 0700 for a small spec: PKITests.permissions.
import Foundation
import PinningLab
import Testing

@testable import PinningLabCore

#if canImport(Glibc)
    import Glibc
#endif

/// The local addresses of the TCP sockets in LISTEN state among `descriptors` (a server's own), read from the
/// kernel's tables (`/proc/net/tcp*`, matched by socket inode through `/proc/self/fd`), not from the server's own
/// account of itself. Matching by inode, not by port, keeps out another listener that happens to hold the same port
/// number in the other address family (another test's server on ::1, say).
func listeningAddresses(ofDescriptors descriptors: [Int32]) throws -> [(address: String, port: Int)] {
    var inodes: Set<Substring> = []
    for fd in descriptors {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
        if target.hasPrefix("socket:["), target.hasSuffix("]") { inodes.insert(target.dropFirst(8).dropLast()) }
    }
    var found: [(String, Int)] = []
    for (table, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let text = try readProcFile(table)
        for line in text.split(separator: "\n").dropFirst() {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count > 9, parts[3] == "0A", inodes.contains(parts[9]) else { continue }  // LISTEN, ours
            let local = parts[1].split(separator: ":")
            guard local.count == 2, let port = Int(local[1], radix: 16) else { continue }
            var bytes: [UInt8] = []
            var i = local[0].startIndex
            while i < local[0].endIndex {
                let j = local[0].index(i, offsetBy: 2)
                bytes.append(UInt8(local[0][i..<j], radix: 16)!)
                i = j
            }
            // The kernel prints each 32-bit word in host (little-endian) order.
            let words = stride(from: 0, to: bytes.count, by: 4).flatMap { bytes[$0..<($0 + 4)].reversed() }
            var text = [CChar](repeating: 0, count: 64)
            inet_ntop(v6 ? AF_INET6 : AF_INET, words, &text, socklen_t(text.count))
            found.append((String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port))
        }
    }
    return found
}

/// The whole of a /proc file (they report a size of 0, so read until EOF).
func readProcFile(_ path: String) throws -> String {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw CocoaError(.fileReadNoSuchFile) }
    defer { close(fd) }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n <= 0 { break }
        data += chunk[0..<n]
    }
    return String(decoding: data, as: UTF8.self)
}

@Suite("Security: what the lab exposes")
struct SecurityTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    @Test("a fixture server with default options listens on loopback only", arguments: EngineKind.allCases)
    func defaultListensOnLoopback(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        defer { server.stopSync() }
        let listening = try listeningAddresses(ofDescriptors: server.ownDescriptors)
        #expect(listening.count == 1, "\(listening)")
        #expect(listening.allSatisfy { $0.address == "127.0.0.1" && $0.port == server.port }, "\(listening)")
    }

    @Test("a scenario server (as Lab.withServer starts it) listens on loopback only", arguments: EngineKind.allCases)
    func scenarioServerListensOnLoopback(engine: EngineKind) async throws {
        let runner = CheckRunner(pki: f.pki, catalogue: try Catalogue.bundled())
        let work = f.file("security-\(engine)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let server = try await runner.startServer("baseline", engine: engine.engine, workDirectory: work)
        let listening = try listeningAddresses(ofDescriptors: server.running.ownDescriptors)
        await server.stop()
        #expect(
            listening.count == 1 && listening.allSatisfy { $0.address == "127.0.0.1" && $0.port == server.port },
            "\(listening)")
    }

    @Test("the lab PKI folder is 0700 and every kept key 0600 (the built-in lab spec)")
    func labPKIPermissions() throws {
        let dir = f.file("pki")
        var st = stat()
        #expect(stat(dir.path, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let keys = dir.appendingPathComponent("keys")
        #expect(stat(keys.path, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: keys.path)
        #expect(names.count >= 10, "\(names)")
        for n in names {
            #expect(stat(keys.appendingPathComponent(n).path, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(n)")
        }
    }

    @Test(
        "the server path harness (fuzz entry point) ends garbage with an observation that claims nothing",
        arguments: EngineKind.allCases)
    func harnessGarbage(engine: EngineKind) throws {
        let h = try ServerPathHarness(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]), label: "fuzz")
        for input in [[], [0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0], Array("GET / HTTP/1.1\r\n\r\n".utf8)]
            as [[UInt8]]
        {
            let o = try #require(h.runRaw(input))
            #expect(!o.handshakeCompleted && !o.applicationDataReceived && o.requestLine == nil && o.label == "fuzz")
        }
    }
}
