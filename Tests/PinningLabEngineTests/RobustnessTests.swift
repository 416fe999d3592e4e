import Foundation
import PinningLab
@testable import PinningLabCore
import Testing

/// Hostile and stalled clients never block a good client or shutdown, and `stop()` frees every resource.
@Suite("hostile clients and clean shutdown")
struct RobustnessTests {
    let f = Fixtures.shared

    /// The first bytes of a real ClientHello record header claiming 512 bytes, then nothing more.
    static let truncatedClientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]

    @Test("garbage, a truncated ClientHello, silence and 200 idle connections leave the server serving",
          arguments: EngineKind.allCases)
    func hostile(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]),
            options: .init(handshakeTimeout: .seconds(20)), label: "hostile")
        let port = server.port

        var hostile: [RawClient] = []
        let garbage = try #require(RawClient(port: port))
        garbage.send(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8) + (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        hostile.append(garbage)
        let truncated = try #require(RawClient(port: port))
        truncated.send(Self.truncatedClientHello)
        hostile.append(truncated)
        for _ in 0..<200 {
            if let c = RawClient(port: port) { hostile.append(c) }
        }
        #expect(hostile.count == 202)

        // A good client is served promptly while all of that is open.
        let start = ContinuousClock.now
        let r = await run([
            "curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), server.url,
        ])
        let elapsed = ContinuousClock.now - start
        #expect(r.status == 0, "\(r.stderr)")
        #expect(elapsed < .seconds(3), "a good client waited \(elapsed)")
        _ = await server.waitForObservations(count: 2, timeout: .seconds(5))
        let before = server.observations()
        #expect(before.contains { $0.applicationDataReceived && $0.requestLine == "GET / HTTP/1.1" })
        #expect(before.contains { $0.closure == .handshakeFailed && !$0.applicationDataReceived }, "garbage")
        #expect(server.connectionsOpen >= 200)

        // Our server's sockets are known by inode; after stop none is open and no worker thread is left.
        let serverInodes = socketInodes(port: port).intersection(openSocketInodes())
        #expect(serverInodes.count >= 201, "the listener and the accepted connections")
        let own = server.ownDescriptors
        let ownBefore = targets(of: own)
        #expect(threadNames().contains { $0.hasPrefix("pl\(port)-") })
        let stopStart = ContinuousClock.now
        await server.stop()
        #expect(ContinuousClock.now - stopStart < .seconds(2))
        hostile.removeAll()
        #expect(openSocketInodes().intersection(serverInodes).isEmpty)
        #expect(zip(ownBefore, targets(of: own)).allSatisfy { $0 != $1 }, "listener and pipes closed")
        #expect(!threadNames().contains { $0.hasPrefix("pl\(port)-") })
        let all = server.observations()
        #expect(all.count == 203)
        #expect(all.filter { $0.closure == .serverStopped }.count >= 200)
        #expect(server.connectionsOpen == 0)
    }

    @Test("a silent client times out without holding up others", arguments: EngineKind.allCases)
    func handshakeTimeout(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]),
            options: .init(handshakeTimeout: .milliseconds(300), maxConnections: 2))
        defer { server.stopSync() }
        let a = try #require(RawClient(port: server.port))
        let b = try #require(RawClient(port: server.port))
        // Both slots are taken; the good client waits in the listen queue until the silent ones time out.
        let r = await run(["curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), server.url])
        #expect(r.status == 0, "\(r.stderr)")
        let seen = try #require(await server.settle())
        #expect(seen.filter { $0.closure == .handshakeTimeout }.count == 2)
        #expect(seen.contains { $0.applicationDataReceived })
        _ = (a, b)
    }

    @Test("stop() closes every descriptor the server opened", arguments: EngineKind.allCases)
    func descriptorsFreed(engine: EngineKind) async throws {
        // Descriptors are process-wide and other suites run in parallel: check this server's own descriptors and
        // sockets by identity rather than a global count.
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        let port = server.port
        let own = server.ownDescriptors
        #expect(own.count == 1 + 2 * 2, "a listener and two wake-up pipes")
        let before = targets(of: own)
        #expect(before.allSatisfy { $0 != nil })
        for _ in 0..<3 {
            _ = await run(["curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), server.url])
        }
        #expect(!socketInodes(port: port).isEmpty)
        await server.stop()
        #expect(zip(before, targets(of: own)).allSatisfy { $0 != $1 }, "still open after stop")
        #expect(socketInodes(port: port).intersection(openSocketInodes()).isEmpty)
        #expect(!threadNames().contains { $0.hasPrefix("pl\(port)-") })
        #expect(server.observations().count == 3)
        #expect(server.connectionsOpen == 0)
    }
}
