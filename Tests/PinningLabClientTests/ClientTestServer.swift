// `openssl s_server -www -msg` as the independent server under the reference clients: serves exactly the chain
// given, answers one connection, and its message trace tells whether application data arrived (the oracle).
import Foundation
import PinningLab
import PinningLabCore

/// How one test server is configured.
struct ClientTestServerConfig: Sendable, CustomStringConvertible {
    /// Leaf certificate name in the test PKI (`<name>.pem` + `<name>.key`).
    var leaf: String
    /// Certificates sent after the leaf, in order (`-cert_chain`).
    var chain: [String]
    /// When set, client certificates are required (`-Verify 1`) and verified against this CA.
    var requireClientCertificateFrom: String?
    var extraArguments: [String] = []
    /// Listen on ::1 instead of 127.0.0.1.
    var ipv6 = false

    var description: String {
        ([leaf] + chain).joined(separator: "+") + (requireClientCertificateFrom.map { " mTLS(\($0))" } ?? "")
            + (ipv6 ? " [::1]" : "")
    }
}

/// What the server saw during its one connection.
struct ClientTestServerLog: Sendable {
    var text: String

    /// Whether a record of content type application_data (0x17) arrived from the client: in TLS 1.3 the inner
    /// content type of a protected record, in TLS 1.2 the record header's type.
    var receivedApplicationData: Bool {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let tls13 = lines.contains { $0.hasPrefix(">>> TLS 1.3") && $0.hasSuffix("ServerHello") }
        let marker = tls13 ? "InnerContent" : "RecordHeader"
        for (index, line) in lines.enumerated() where line.hasPrefix("<<< ") && line.contains(marker) {
            guard index + 1 < lines.count else { continue }
            let firstByte = lines[index + 1].trimmingCharacters(in: .whitespaces).prefix(2)
            if firstByte == "17" { return true }
        }
        return false
    }

    /// The alert the client sent, e.g. `fatal bad_certificate`, if any.
    var receivedAlert: String? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("<<< ") && $0.contains(", Alert ") })
        else { return nil }
        return line.split(separator: "]").last.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ", ")) }
    }

    /// Whether the ClientHello carried a server_name extension (type 0x0000) naming `host`.
    func clientHelloHasServerName(_ host: String) -> Bool {
        let lines = text.split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("<<< ") && $0.hasSuffix("ClientHello") }) else {
            return false
        }
        let hex = lines[(start + 1)...].prefix(while: { $0.hasPrefix("    ") })
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        let name = host.utf8.map { String(format: "%02x", $0) }.joined(separator: " ")
        // server_name_list length, host_name type 0, name length, name
        let entry =
            String(
                format: "%02x %02x 00 %02x %02x ", (host.utf8.count + 3) >> 8, (host.utf8.count + 3) & 0xff,
                host.utf8.count >> 8, host.utf8.count & 0xff) + name
        return hex.contains(entry)
    }
}

/// One `openssl s_server` process, accepting one connection on 127.0.0.1 (or ::1) and an ephemeral port.
final class ClientTestServer: Sendable {
    let port: Int
    private let process: ChildProcess.Background
    private let logFile: URL

    private init(port: Int, process: ChildProcess.Background, logFile: URL) {
        self.port = port
        self.process = process
        self.logFile = logFile
    }

    /// Starts the server and waits (bounded, without blocking a thread) for its "ACCEPT host:PORT" line.
    static func start(_ config: ClientTestServerConfig, pki: ClientTestPKI) async throws -> ClientTestServer {
        let logFile = pki.directory.appendingPathComponent("s_server-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)

        var arguments = [
            "s_server", config.ipv6 ? "-6" : "-4", "-accept", "0", "-naccept", "1", "-www", "-msg",
            "-cert", pki.path("\(config.leaf).pem"), "-key", pki.path("\(config.leaf).key"),
            "-no-CAfile", "-no-CApath", "-no-CAstore",
        ]
        if !config.chain.isEmpty {
            let chainFile = pki.directory.appendingPathComponent("chain-\(UUID().uuidString).pem")
            var pem = ""
            for name in config.chain { pem += try String(contentsOfFile: pki.path("\(name).pem"), encoding: .utf8) }
            try pem.write(to: chainFile, atomically: true, encoding: .utf8)
            arguments += ["-cert_chain", chainFile.path]
        }
        if let clientCA = config.requireClientCertificateFrom {
            arguments += ["-Verify", "1", "-verify_return_error", "-verifyCAfile", pki.path("\(clientCA).pem")]
        }
        arguments += config.extraArguments

        let process = try ChildProcess.spawnBackground(
            ["openssl"] + arguments, stdoutFile: logFile.path,
            stderrFile: logFile.path)

        for _ in 0..<400 {
            let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                return ClientTestServer(port: port, process: process, logFile: logFile)
            }
            if !process.isRunning { break }
            try? await Task.sleep(for: .milliseconds(25))
        }
        kill(process)
        let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        throw ClientTestPKIError(description: "s_server did not start: \(arguments.joined(separator: " "))\n\(text)")
    }

    /// Waits (bounded) for the server to finish its one connection, stops it, and returns its log.
    func finish() async -> ClientTestServerLog {
        for _ in 0..<200 where process.isRunning { try? await Task.sleep(for: .milliseconds(25)) }
        Self.kill(process)
        return ClientTestServerLog(text: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "")
    }

    private static func kill(_ process: ChildProcess.Background) {
        process.terminate()
    }

    deinit { Self.kill(process) }
}

/// A TCP socket on 127.0.0.1 that listens but never accepts or answers: handshakes against it can only time out.
final class ClientTestSilentListener: @unchecked Sendable {  // immutable after init
    let port: Int
    private let descriptor: Int32

    /// `listening: false`: bound but never listening — a connection is refused, and while this lives no other test
    /// can be given the port (a released port was, once: the "closed" port answered as another test's server).
    init(listening: Bool = true) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientTestPKIError(description: "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound, !listening || listen(fd, 8) == 0 else {
            close(fd)
            throw ClientTestPKIError(description: "bind/listen failed")
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
