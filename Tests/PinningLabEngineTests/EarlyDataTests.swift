import Foundation
import PinningLab
import PinningLabCore
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// TLS 1.3 early data (0-RTT), judged by an independent client: `openssl s_client -sess_in FILE -early_data FILE`
/// sends the file as early data on a resumed session and prints whether the server accepted it; the observation
/// counts the bytes that arrived before the handshake completed.
@Suite("Early data (0-RTT): counted per connection, judged by openssl s_client", .requires("openssl"))
struct EarlyDataTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    static let request = "GET /early HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"

    func configuration(maxEarlyData: UInt32) -> ServerTLSConfiguration {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(.tls13)
        config.resumption = SessionResumption(.tickets, maxEarlyData: maxEarlyData)
        return config
    }

    /// One s_client connection: saves its session to `save`, offers the one in `offer`, and sends `early` as early
    /// data (else the request on stdin after the handshake).
    func connect(_ server: FixtureServer, save: String? = nil, offer: String? = nil, early: String? = nil) async
        -> ProcessResult
    {
        var args = [
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-CAfile",
            f.path("lab-root.pem"), "-verify_return_error", "-ign_eof", "-tls1_3",
        ]
        if let save { args += ["-sess_out", save] }
        if let offer { args += ["-sess_in", offer] }
        if let early { args += ["-early_data", early] }
        return await run(args, input: early == nil ? Self.request : "")
    }

    func scratch(_ name: String) -> String { f.path("early-\(name)-\(UUID().uuidString)") }

    @Test(
        "a resumed client's early data is accepted and counted; without early data the count is 0",
        arguments: EngineKind.allCases)
    func counted(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: configuration(maxEarlyData: 16384), label: "early")
        defer { server.stopSync() }
        let session = scratch("session.pem")
        let body = scratch("request.txt")
        try Data(Self.request.utf8).write(to: URL(fileURLWithPath: body))
        let first = await connect(server, save: session)
        #expect(first.status == 0, "\(first.stderr)")
        let early = await connect(server, offer: session, early: body)
        #expect(early.status == 0, "\(early.stderr)")
        #expect(early.stdout.contains("Reused, "), "s_client did not resume")
        #expect(early.stdout.contains("Early data was accepted"), "\(early.stdout)")
        // A fresh session for the next attempt: a ticket is for one use.
        let again = scratch("session2.pem")
        _ = await connect(server, save: again)
        let late = await connect(server, offer: again)
        #expect(late.stdout.contains("Reused, "))
        let o = await server.waitForObservations(count: 4)
        try #require(o.count == 4)
        #expect(o[0].earlyDataBytes == 0 && !o[0].resumed)
        #expect(o[1].resumed)
        #expect(o[1].earlyDataBytes == Self.request.utf8.count)
        #expect(o[1].requestLine == "GET /early HTTP/1.1")
        #expect(o[1].applicationDataReceived)
        #expect(o[3].resumed)
        #expect(o[3].earlyDataBytes == 0, "a request sent after the handshake is not early data")
        #expect(o[3].requestLine == "GET /early HTTP/1.1")
    }

    @Test(
        "a server that allows no early data (the default) issues tickets without it: nothing arrives as early data",
        arguments: EngineKind.allCases)
    func offByDefault(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: configuration(maxEarlyData: 0), label: "no-early")
        defer { server.stopSync() }
        let session = scratch("session.pem")
        let body = scratch("request.txt")
        try Data(Self.request.utf8).write(to: URL(fileURLWithPath: body))
        _ = await connect(server, save: session)
        let second = await connect(server, offer: session, early: body)
        #expect(second.stdout.contains("Reused, "))
        #expect(!second.stdout.contains("Early data was accepted"))
        let o = await server.settle() ?? []
        #expect(o.count == 2)
        #expect(o.allSatisfy { $0.earlyDataBytes == 0 })
    }
}
