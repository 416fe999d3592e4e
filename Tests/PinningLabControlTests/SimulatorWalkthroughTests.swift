import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `PinLab` helper of the article "Testing an iOS app in the Simulator", compiled and run here against a live
/// control API (URLSession and Codable, as in an XCTest in the Simulator). The region between the markers must be
/// the article's code, character for character.
@Suite("iOS walk-through: the PinLab helper", .serialized)
struct SimulatorWalkthroughTests {
    @Test func theHelperIsTheArticlesCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try #require(source.range(of: "// BEGIN article code\n"))
        let end = try #require(source.range(of: "// END article code\n"))
        let region = String(source[begin.upperBound..<end.lowerBound])
        let article = try String(
            contentsOf: here.deletingLastPathComponent().appendingPathComponent(
                "../../Sources/PinningLab/PinningLab.docc/TestingAniOSApp.md"),
            encoding: .utf8)
        #expect(article.contains(region), "the PinLab helper here and in TestingAniOSApp.md differ")
    }

    /// What the article's tests do, with curl standing in for the app's client (URLSession on Linux cannot take
    /// the lab root or a pinning delegate).
    @Test(.requires("curl"))
    func theHelperDrivesTheControlAPI() async throws {
        try await ControlTestLab.withControl { control, pki in
            let lab = PinLab(base: URL(string: control.url)!, token: try #require(control.token))
            let backupPins = PinFormat.curlPins([
                try pki.identity("leaf-v1").pins.spkiBase64,
                try pki.identity("leaf-v3-rekey").pins.spkiBase64,
            ])
            let trust = try await Curl.get(control.url + "trust/lab-root")
            let trustFile = TestScratch.root.appendingPathComponent("walkthrough-\(UUID().uuidString).pem")
            try Data(trust.body).write(to: trustFile)
            defer { try? FileManager.default.removeItem(at: trustFile) }
            func client(_ url: URL) async -> Int32 {
                await ChildProcess.run(
                    [
                        "curl", "-s", "-o", "/dev/null", "--cacert", trustFile.path, "--pinnedpubkey", backupPins,
                        url.absoluteString,
                    ], timeout: .seconds(30)
                ).status
            }
            for scenario in ["rekey", "emergency-rekey"] {
                for engine in ["openssl", "gnutls"] {
                    try await lab.withServer(scenario, engine: engine) { server in
                        _ = await client(server.url)
                        let seen = try await lab.observations(server, after: server.connectionsAccepted)
                        let accepted = seen.contains(where: \.applicationDataReceived)
                        #expect(
                            accepted == (server.expect["leaf-spki+backup"] == "accept"),
                            "\(scenario) \(engine): \(seen.map(\.closure))")
                    }
                }
            }
            try await lab.withServer("baseline", engine: "gnutls") { server in
                #expect(await client(server.url) == 0)
                let rotated = try await lab.rotate(server, to: "leaf-v3-rekey")
                #expect(rotated.generation == 1)
                #expect(await client(server.url) == 0)
                let seen = try await lab.observations(server, after: 0)
                #expect(seen.map(\.generation) == [0, 1])
                #expect(seen.allSatisfy { $0.applicationDataReceived })
            }
            await #expect(throws: PinLab.APIError.self) { _ = try await lab.start("no-such", engine: "gnutls") }
            let running = try await Curl.get(control.url + "servers").json()["servers"] as? [Any]
            #expect(running?.isEmpty == true, "withServer stopped every server")
        }
    }
}

// BEGIN article code
/// The PinningLab control API (`pinlab serve --control 127.0.0.1:8765`).
struct PinLab: Sendable {
    struct Server: Decodable, Sendable {
        let id: String
        /// `https://localhost:PORT/`
        let url: URL
        let port: Int
        let generation: Int
        let connectionsAccepted: Int
        /// What a correct client does under each pin profile: "accept" or "refuse".
        let expect: [String: String]
    }

    struct Observation: Decodable, Sendable {
        struct Alert: Decodable, Sendable { let name: String }
        let id: Int
        /// The verdict's oracle: the client trusted the server and sent its request.
        let applicationDataReceived: Bool
        let closure: String
        let serverName: String?
        let alertReceived: Alert?
        let generation: Int
    }

    struct APIError: Error, Decodable, Sendable {
        let status: Int
        let field: String?
        let error: String
    }

    let base: URL
    /// The token `pinlab serve --control` printed (and wrote to its manifest as `control.token`).
    let token: String

    init(
        base: URL = URL(string: ProcessInfo.processInfo.environment["PINLAB_CONTROL"] ?? "http://127.0.0.1:8765/")!,
        token: String = ProcessInfo.processInfo.environment["PINLAB_CONTROL_TOKEN"] ?? ""
    ) {
        self.base = base
        self.token = token
    }

    func start(_ scenario: String, engine: String) async throws -> Server {
        try await call("POST", "servers", body: ["scenario": scenario, "engine": engine])
    }

    func rotate(_ server: Server, to identity: String) async throws -> Server {
        try await call("POST", "servers/\(server.id)/rotate", body: ["identity": identity])
    }

    /// The connections that ended after `after` (pass `server.connectionsAccepted` noted before connecting);
    /// waits up to 5 s for connections still open.
    func observations(_ server: Server, after: Int) async throws -> [Observation] {
        struct Page: Decodable { let observations: [Observation] }
        let page: Page = try await call("GET", "servers/\(server.id)/observations?after=\(after)&wait=5")
        return page.observations
    }

    func stop(_ server: Server) async throws {
        let _: Server = try await call("DELETE", "servers/\(server.id)")
    }

    /// Starts a scenario's server, runs `body`, and stops the server whether `body` throws or not.
    func withServer<T>(_ scenario: String, engine: String, _ body: (Server) async throws -> T) async throws -> T {
        let server = try await start(scenario, engine: engine)
        do {
            let result = try await body(server)
            try await stop(server)
            return result
        } catch {
            try? await stop(server)
            throw error
        }
    }

    private func call<T: Decodable>(_ method: String, _ path: String, body: [String: String]? = nil) async throws -> T {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONEncoder().encode(body)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let http = response as? HTTPURLResponse, (200..<300).contains(http.statusCode) else {
            throw try JSONDecoder().decode(APIError.self, from: data)
        }
        return try JSONDecoder().decode(T.self, from: data)
    }
}
// END article code
