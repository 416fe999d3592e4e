// An engine joins PinningLab by one registry entry (CONTRIBUTING.md: "an engine"): once registered, it is found by
// name, listed, selected by `all`, and every report of a run that selects it carries its cells under its name.
import Foundation
import PinningLab
import PinningLabCore
import PinningLabModel
import PinningLabTesting
import Testing

@Suite("the engine registry")
struct EngineRegistryTests {
    /// A test-only engine: OpenSSL under another name, as a third library's engine would stand beside the two.
    struct RenamedEngine: TLSEngine {
        let base: any TLSEngine
        let name: String
        var libraryVersion: String { "\(base.libraryVersion) (as \(name))" }
        func supports(_ configuration: ServerTLSConfiguration) -> EngineSupport { base.supports(configuration) }
        func makeContext(_ configuration: ServerTLSConfiguration) throws(TLSEngineError) -> any TLSServerContext {
            try base.makeContext(configuration)
        }
    }

    static let registered: Result<any TLSEngine, any Error> = Result {
        let engine = RenamedEngine(base: Engines.openssl, name: "registry-test")
        try Engines.register(engine)
        return engine
    }

    @Test func oneRegistryEntryReachesLookupRunsAndReports() async throws {
        let engine = try Self.registered.get()
        #expect(try Engines.named("registry-test").map(\.name) == ["registry-test"])
        #expect(try Engines.named("REGISTRY-TEST").map(\.name) == ["registry-test"])
        #expect(try Engines.named("all").map(\.name).contains("registry-test"))
        // `both` keeps meaning the two built-in engines, and a run's default stays with them.
        #expect(try Engines.named("both").map(\.name) == ["openssl", "gnutls"])
        #expect(CheckOptions().engines.map(\.name) == ["openssl", "gnutls"])
        #expect(throws: CheckSetupError.self) {
            try Engines.register(RenamedEngine(base: Engines.gnutls, name: "registry-test"))
        }
        #expect(throws: CheckSetupError.self) {
            try Engines.register(RenamedEngine(base: Engines.gnutls, name: "both"))
        }

        let report = try await Lab.check(
            .correct, scenarios: [.baseline, .interceptingProxy], engines: [ServerEngine(engine), .gnutls],
            pkiDirectory: TestLab.directory)
        #expect(report.engines == ["registry-test", "gnutls"])
        let mine = report.verdicts.filter { $0.engine == "registry-test" }
        #expect(mine.count == 12)
        #expect(mine.allSatisfy { $0.status == .pass }, "\(mine.filter { $0.status != .pass }.map(\.reason))")
        // Every report format names it.
        for format in ReportFormat.allCases {
            let text = try report.render(format)
            #expect(text.contains("registry-test"), "the \(format) report does not name the engine")
        }
        // A scenario server on it judges with it (no fallback to OpenSSL by name).
        try await Lab.withServer(.baseline, engine: ServerEngine(engine), pkiDirectory: TestLab.directory) { server in
            let v = await server.verdict(.leafSPKI, running: .correct)
            #expect(v.engine == "registry-test" && v.status == .pass, "\(v.reason)")
        }
    }
}
