import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// The lab PKI these tests share with the other suites (a temporary folder; keys are made once and kept there).
enum ControlTestLab {
    static let directory = TestPKIFolder.url

    static func pki() async throws -> LabPKI { try await Lab.openPKI(directory: directory) }

    /// Starts a control server on 127.0.0.1 and an ephemeral port, runs `body` (where `Curl` sends the server's
    /// token), and stops it.
    static func withControl<T>(
        _ options: ControlServer.Options = .init(), _ body: (ControlServer, LabPKI) async throws -> T
    ) async throws -> T {
        let pki = try await pki()
        let control = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled(), options: options)
        do {
            let result = try await Curl.$token.withValue(control.token) { try await body(control, pki) }
            await control.stop()
            return result
        } catch {
            await control.stop()
            throw error
        }
    }
}

/// One HTTP exchange made with the curl command-line tool.
struct CurlReply {
    var status: Int
    var contentType: String
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object.
    func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            "not a JSON object: \(text)", sourceLocation: sourceLocation)
    }
}

enum Curl {
    /// The control API's bearer token, sent as `Authorization: Bearer` when set (`ControlTestLab.withControl` sets it).
    @TaskLocal static var token: String?

    /// `curl -X METHOD URL` with an optional JSON body (a POST says `Content-Type: application/json` even without
    /// one) and the task's `token`; the body goes to stdout, the status and media type to stderr.
    static func request(_ method: String, _ url: String, json body: String? = nil, headers: [String] = []) async throws
        -> CurlReply
    {
        var args = [
            "curl", "-s", "-S", "--max-time", "30", "-X", method, "-w", "%{stderr}%{http_code}\n%{content_type}",
        ]
        if let token { args += ["-H", "Authorization: Bearer \(token)"] }
        for h in headers { args += ["-H", h] }
        if body != nil || method == "POST" { args += ["-H", "Content-Type: application/json"] }
        if body != nil { args += ["--data-binary", "@-"] }
        args.append(url)
        let r = await ChildProcess.run(args, input: Array((body ?? "").utf8), timeout: .seconds(40))
        let tail = r.stderrText.split(separator: "\n", omittingEmptySubsequences: false)
        guard r.status == 0, tail.count >= 2, let code = Int(tail[tail.count - 2]) else {
            throw CurlError(description: "curl \(method) \(url) failed (\(r.status)): \(r.stderrText)")
        }
        return CurlReply(status: code, contentType: String(tail[tail.count - 1]), body: r.stdout)
    }

    static func get(_ url: String) async throws -> CurlReply { try await request("GET", url) }
}

struct CurlError: Error, CustomStringConvertible { var description: String }

extension ControlTestLab {
    /// After DELETE: the stopped server's listening socket (`listening`, its inodes) is gone, and a client meets a
    /// closed port — unless another suite's server of this process was given the freed port meanwhile (a new inode),
    /// whose server then is not probed (a TLS client would hold it up).
    static func expectClosed(port: Int, listening: Set<String>, sourceLocation: SourceLocation = #_sourceLocation) async
    {
        let now = ListeningSockets.inodes(port: port)
        #expect(
            now.isDisjoint(with: listening), "the server still listens on \(port) after DELETE",
            sourceLocation: sourceLocation)
        guard now.isEmpty else { return }
        let probe = await ChildProcess.run(
            ["curl", "-s", "-o", "/dev/null", "--max-time", "5", "https://127.0.0.1:\(port)/"], timeout: .seconds(20))
        #expect(
            probe.status == 7 || !ListeningSockets.inodes(port: port).isEmpty,
            "nothing listens on \(port) any more, yet curl did not get 'connection refused' (exit 7): exit \(probe.status)",
            sourceLocation: sourceLocation)
    }
}
