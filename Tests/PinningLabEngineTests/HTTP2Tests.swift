import Foundation
import PinningLab
import PinningLabCore
import PinningLabTestSupport
import Testing

/// HTTP/2 on the fixture servers (nghttp2, loaded at run time): real clients negotiate `h2` with both engines, and
/// the server records, per connection, the `:authority` of every stream.
@Suite("HTTP/2 on both engines", .requiresHTTP2())
struct HTTP2Tests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    /// leaf-v1 (localhost, api.pinning.test) offering `h2` then `http/1.1`.
    func start(_ engine: EngineKind) async throws -> FixtureServer {
        var c = f.configuration(["leaf-v1", "lab-intermediate-a"])
        c.alpnProtocols = [HTTP2.alpn, "http/1.1"]
        return try await FixtureServer.start(engine: engine.engine, configuration: c, label: "h2")
    }

    func curl(_ server: FixtureServer, _ extra: [String], paths: [String] = ["/"]) async -> ProcessResult {
        let urls = paths.map { "https://api.pinning.test:\(server.port)\($0)" }
        return await run(
            [
                "curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"),
                "--resolve", "api.pinning.test:\(server.port):127.0.0.1", "-w", "\\n%{http_version}\\n",
            ] + extra + urls)
    }

    @Test(
        "curl --http2 negotiates h2; the server answers the stream and records its :authority",
        .requires("curl"), arguments: EngineKind.allCases)
    func curlHTTP2(engine: EngineKind) async throws {
        let server = try await start(engine)
        defer { server.stopSync() }
        let r = await curl(server, ["--http2"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n2\n"), "curl's %{http_version}: \(r.stdout)")
        #expect(r.stdout.contains("\"alpn\":\"h2\""), "\(r.stdout)")
        #expect(r.stdout.contains("\"authority\":\"api.pinning.test:\(server.port)\""), "\(r.stdout)")
        let o = try #require(await server.settle()?.first)
        #expect(o.alpn == "h2")
        #expect(o.serverName == "api.pinning.test")
        #expect(o.applicationDataReceived)
        #expect(o.requestLine == "GET / HTTP/2")
        #expect(o.closure == .responseSent, "\(o.error ?? "")")
        #expect(o.http2Streams?.map(\.authority) == ["api.pinning.test:\(server.port)"])
        let live = server.http2Streams()
        #expect(live.map(\.connection) == [o.id])
        #expect(live.first?.serverName == "api.pinning.test")
    }

    @Test(
        "two URLs in one curl --http2 run are two streams on one connection, each recorded",
        .requires("curl"), arguments: EngineKind.allCases)
    func twoStreams(engine: EngineKind) async throws {
        let server = try await start(engine)
        defer { server.stopSync() }
        let r = await curl(server, ["--http2"], paths: ["/first", "/second"])
        #expect(r.status == 0, "\(r.stderr)")
        let seen = try #require(await server.settle())
        #expect(seen.count == 1, "\(seen.map(\.closure))")
        #expect(seen.first?.http2Streams?.map(\.path) == ["/first", "/second"])
        #expect(server.http2Streams().map(\.stream.id) == [1, 3])
    }

    @Test(
        "a client that offers only http/1.1 still gets HTTP/1.1 from a server that offers h2",
        .requires("curl"), arguments: EngineKind.allCases)
    func http1Fallback(engine: EngineKind) async throws {
        let server = try await start(engine)
        defer { server.stopSync() }
        let r = await curl(server, ["--http1.1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n1.1\n"), "\(r.stdout)")
        let o = try #require(await server.settle()?.first)
        #expect(o.alpn == "http/1.1")
        #expect(o.requestLine == "GET / HTTP/1.1")
        #expect(o.http2Streams == nil)
        #expect(server.http2Streams().isEmpty)
    }

    @Test(
        "garbage after ALPN h2 is an HTTP/2 protocol error: recorded, the server keeps serving",
        .requires("openssl"), arguments: EngineKind.allCases)
    func garbage(engine: EngineKind) async throws {
        let server = try await start(engine)
        defer { server.stopSync() }
        let r = await run(
            [
                "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "api.pinning.test",
                "-alpn", "h2", "-quiet", "-CAfile", f.path("lab-root.pem"),
            ],
            input: "GET / HTTP/1.1\r\nHost: api.pinning.test\r\n\r\n")
        _ = r
        let o = try #require(await server.settle()?.first)
        #expect(o.alpn == "h2")
        #expect(o.http2Streams == [])
        #expect(o.closure != .responseSent)
        #expect(o.error?.contains("HTTP/2") == true, "\(o.closure) \(o.error ?? "")")
        let again = await curl(server, ["--http2"])
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test("nghttp negotiates h2 and its :authority is recorded", .requires("nghttp"), arguments: EngineKind.allCases)
    func nghttpClient(engine: EngineKind) async throws {
        let server = try await start(engine)
        defer { server.stopSync() }
        // nghttp does not verify certificates: the judge here is the server's record of the negotiated protocol.
        let r = await run(["nghttp", "-n", "-H", ":authority: api.pinning.test", "https://127.0.0.1:\(server.port)/"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.alpn == "h2")
        #expect(o.http2Streams?.map(\.authority) == ["api.pinning.test"])
    }
}

@Suite("HTTP/2 under load", .requiresHTTP2())
struct HTTP2LoadTests {
    @Test(
        "h2load: 600 streams on one connection, 10 at a time, are all answered (closed streams make room)",
        .requires("h2load"), arguments: EngineKind.allCases)
    func manyStreams(engine: EngineKind) async throws {
        let f = try Fixtures.load()
        var c = f.configuration(["leaf-v1", "lab-intermediate-a"])
        c.alpnProtocols = [HTTP2.alpn, "http/1.1"]
        let server = try await FixtureServer.start(engine: engine.engine, configuration: c, label: "h2-load")
        defer { server.stopSync() }
        let r = await run(
            ["h2load", "-n", "600", "-c", "1", "-m", "10", "https://127.0.0.1:\(server.port)/"], timeout: .seconds(30))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Application protocol: h2"), "\(r.stdout)")
        #expect(r.stdout.contains("600 succeeded, 0 failed"), "\(r.stdout)")
        let o = try #require(await server.settle()?.first)
        #expect(o.http2Streams?.count == 256, "the observation keeps the first 256 streams")
        #expect(server.http2Streams().count == 600, "every stream is recorded as it arrives")
    }
}
