import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabCore

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Server lifecycle")
struct LifecycleTests {
    // Issue 8, defect 1: ServerCore held its Workers and each Worker held the core, and shutdown never broke the
    // cycle, so every stopped server kept its observations, its engine context and its buffers (~12 KiB per
    // start/stop in a release build). Before the fix `core` was still alive here.
    @Test("a stopped server is freed, with its workers", arguments: EngineKind.allCases)
    func stoppedServerIsFreed(_ kind: EngineKind) async throws {
        weak var core: ServerCore?
        weak var worker: AnyObject?
        do {
            let server = try await FixtureServer.start(
                engine: kind.engine,
                configuration: try Fixtures.load().configuration(["leaf-v1", "lab-intermediate-a"]))
            core = server.core
            worker = server.core.workersForTesting.first
            // One connection, so that an observation and a session were made.
            do {
                let client = try #require(RawClient(port: server.port))
                client.send(Array("GET / HTTP/1.1\r\n\r\n".utf8))
            }
            _ = await server.waitForObservations(count: 1, timeout: .seconds(5))
            await server.stop()
        }
        // Freed promptly, not necessarily at this instant: the stop thread's closure and a cancelled settle timer
        // can hold the core for a moment after `stop()` returned (seen under ThreadSanitizer, where a CI run's load
        // once kept it past a fixed 2 s). A leak never frees it, so the wait's bound only decides how long a failure
        // takes to show.
        _ = await eventually(TestTimeouts.exchange) { worker == nil && core == nil }
        #expect(worker == nil, "a Worker outlived its stopped server")
        #expect(core == nil, "the ServerCore outlived its stopped server (a retain cycle)")
    }

    @Test(
        "a server dropped without stop() shuts down on a thread of its own, not the dropping one",
        arguments: EngineKind.allCases)
    func droppedServerShutsDownOffTheDroppingThread(_ kind: EngineKind) async throws {
        let core: ServerCore
        do {
            let server = try await FixtureServer.start(
                engine: kind.engine,
                configuration: try Fixtures.load().configuration(["leaf-v1", "lab-intermediate-a"]))
            core = server.core  // kept, to read where it was shut down; the server itself goes with this scope
            #expect(core.shutdownThreadName == nil)
        }
        // The last reference to the server went on a cooperative thread: joining its workers must not happen there.
        _ = await eventually(TestTimeouts.exchange) { core.shutdownThreadName != nil }
        #expect(core.shutdownThreadName == "pinninglab.drop", "shut down on \(core.shutdownThreadName ?? "no thread")")
        #expect(core.listener.isStopping)
    }

    @Test("stop() does its blocking work on a thread of its own", arguments: EngineKind.allCases)
    func stopRunsOffThePool(_ kind: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: kind.engine, configuration: try Fixtures.load().configuration(["leaf-v1", "lab-intermediate-a"]))
        // Each worker names its own thread as it starts: wait (2 s at most) until both have.
        var own: [String: String] = [:]
        for _ in 0..<200 {
            own = threadsByID().filter { $0.value.hasPrefix("pl\(server.port)-") }
            if own.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(own.count >= 2, "the server's two worker threads: \(own)")
        await server.stop()
        #expect(
            server.core.shutdownThreadName == "pinninglab.stop",
            "shutdown ran on \(server.core.shutdownThreadName ?? "?")")
        // The server's own threads are gone (by thread id: another server may reuse the port number, and its names).
        let left = Set(threadsByID().keys).intersection(own.keys)
        #expect(left.isEmpty, "still running: \(own.filter { left.contains($0.key) })")
    }
}
