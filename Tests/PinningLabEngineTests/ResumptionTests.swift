import Foundation
import PinningLab
import PinningLabCore
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// Session resumption, judged by an independent client: `openssl s_client -sess_out` on the first connection and
/// `-sess_in` on the second, which prints `Reused,` when the server resumed and `New,` when it did not.
@Suite("Session resumption: tickets and session IDs, judged by openssl s_client", .requires("openssl"))
struct ResumptionTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    static let cases: [(EngineKind, TLSVersion)] = EngineKind.allCases.flatMap { e in [(e, .tls12), (e, .tls13)] }

    func configuration(_ version: TLSVersion, _ resumption: SessionResumption) -> ServerTLSConfiguration {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(version)
        config.resumption = resumption
        return config
    }

    /// One s_client connection that sends a request and reads the answer (and with it the TLS 1.3 tickets),
    /// saving the session to `save` and offering the one in `offer`.
    func connect(_ server: FixtureServer, _ version: TLSVersion, save: String? = nil, offer: String? = nil) async
        -> ProcessResult
    {
        var args = [
            "openssl", "s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-CAfile",
            f.path("lab-root.pem"), "-verify_return_error", "-ign_eof", "-crlf",
            version == .tls13 ? "-tls1_3" : "-tls1_2",
        ]
        if let save { args += ["-sess_out", save] }
        if let offer { args += ["-sess_in", offer] }
        return await run(args, input: "GET /resume HTTP/1.1\nHost: localhost\n\n")
    }

    func sessionFile(_ name: String) -> String {
        f.path("session-\(name)-\(UUID().uuidString).pem")
    }

    @Test(
        "the second connection resumes the first one's session (s_client: Reused; observation: resumed)",
        arguments: cases)
    func resumes(engine: EngineKind, version: TLSVersion) async throws {
        let modes: [(SessionResumption.Mode, ResumptionMechanism)] =
            version == .tls13
            ? [(.tickets, .ticket), (.both, .ticket)]
            : [(.tickets, .ticket), (.sessionIDs, .sessionID), (.both, .ticket)]
        for (mode, mechanism) in modes {
            let server = try await FixtureServer.start(
                engine: engine.engine, configuration: configuration(version, SessionResumption(mode)), label: "resume")
            defer { server.stopSync() }
            let file = sessionFile("\(engine)-\(mode)")
            let first = await connect(server, version, save: file)
            #expect(first.status == 0, "\(mode): \(first.stderr)")
            #expect(first.stdout.contains("New, "), "\(mode)")
            let second = await connect(server, version, offer: file)
            #expect(second.status == 0, "\(mode): \(second.stderr)")
            #expect(second.stdout.contains("Reused, "), "\(mode): s_client did not resume")
            let o = await server.waitForObservations(count: 2)
            try #require(o.count == 2)
            #expect(!o[0].resumed && o[0].resumption == nil, "\(mode)")
            #expect(o[1].resumed, "\(mode)")
            #expect(o[1].resumption == mechanism, "\(mode)")
            #expect(o[1].serverName == "localhost", "\(mode)")
            #expect(o[1].tlsVersion == version, "\(mode)")
            #expect(o[1].requestLine == "GET /resume HTTP/1.1", "\(mode)")
        }
    }

    @Test("resumption is off by default: no ticket is issued, no session is resumed", arguments: cases)
    func offByDefault(engine: EngineKind, version: TLSVersion) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: configuration(version, .off), label: "no-resume")
        defer { server.stopSync() }
        let file = sessionFile("\(engine)-off")
        let first = await connect(server, version, save: file)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(!first.stdout.contains("TLS session ticket lifetime hint"), "the server issued a ticket")
        // s_client saves a session only when there is one to resume (never in TLS 1.3 without a ticket).
        if FileManager.default.fileExists(atPath: file) {
            let second = await connect(server, version, offer: file)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout.contains("New, "))
        }
        let o = await server.settle() ?? []
        #expect(!o.isEmpty)
        #expect(o.allSatisfy { !$0.resumed && $0.resumption == nil })
    }

    @Test("IDs alone issue no TLS 1.3 ticket: a TLS 1.3 client cannot resume", arguments: EngineKind.allCases)
    func idsAloneNoTLS13(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: configuration(.tls13, SessionResumption(.sessionIDs)),
            label: "ids-13")
        defer { server.stopSync() }
        let file = sessionFile("\(engine)-ids13")
        let first = await connect(server, .tls13, save: file)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(!first.stdout.contains("TLS session ticket lifetime hint"))
        #expect(!FileManager.default.fileExists(atPath: file), "s_client saved a TLS 1.3 session it could resume")
    }

    @Test("a ticket from server A resumes on server B only when they share the ticket key", arguments: cases)
    func sharedTicketKey(engine: EngineKind, version: TLSVersion) async throws {
        let shared = SessionTicketKey(name: "interceptor")
        // Same name, other bytes: another party.
        let other = SessionTicketKey(name: "interceptor")
        let a = try await FixtureServer.start(
            engine: engine.engine,
            configuration: configuration(version, SessionResumption(.tickets, ticketKey: shared)),
            label: "a")
        defer { a.stopSync() }
        let cases: [(String, SessionResumption, Bool)] = [
            ("shared key", SessionResumption(.tickets, ticketKey: shared), true),
            ("other key of the same name", SessionResumption(.tickets, ticketKey: other), false),
            ("own key", SessionResumption(.tickets), false),
        ]
        for (what, resumption, resumes) in cases {
            let file = sessionFile("\(engine)-a")
            let first = await connect(a, version, save: file)
            #expect(first.status == 0, "\(first.stderr)")
            let b = try await FixtureServer.start(
                engine: engine.engine, configuration: configuration(version, resumption), label: "b")
            defer { b.stopSync() }
            let second = await connect(b, version, offer: file)
            #expect(second.status == 0, "\(what): \(second.stderr)")
            #expect(second.stdout.contains("Reused, ") == resumes, "\(what)")
            let o = try #require(await b.settle()?.first)
            #expect(o.resumed == resumes, "\(what)")
            #expect(o.resumption == (resumes ? .ticket : nil), "\(what)")
        }
    }

    @Test(
        "two servers with the same configuration and no shared key are two parties: no resumption across them",
        arguments: cases)
    func ownKeysAreOwn(engine: EngineKind, version: TLSVersion) async throws {
        let config = configuration(version, SessionResumption(.both))
        let a = try await FixtureServer.start(engine: engine.engine, configuration: config, label: "a")
        defer { a.stopSync() }
        let b = try await FixtureServer.start(engine: engine.engine, configuration: config, label: "b")
        defer { b.stopSync() }
        let file = sessionFile("\(engine)-own")
        _ = await connect(a, version, save: file)
        let second = await connect(b, version, offer: file)
        #expect(second.stdout.contains("New, "))
        let o = try #require(await b.settle()?.first)
        #expect(!o.resumed)
    }

    @Test("a server rotated to a new configuration does not resume what it issued before", arguments: cases)
    func rotationRefusesToResume(engine: EngineKind, version: TLSVersion) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: configuration(version, SessionResumption(.both)), label: "rotate")
        defer { server.stopSync() }
        let file = sessionFile("\(engine)-rotate")
        _ = await connect(server, version, save: file)
        var rotated = f.configuration(["leaf-emergency-rekey", "lab-intermediate-a"])
        rotated.setVersion(version)
        rotated.resumption = SessionResumption(.both)
        try server.rotate(to: rotated)
        let second = await connect(server, version, offer: file)
        #expect(second.stdout.contains("New, "))
        let o = await server.waitForObservations(count: 2)
        try #require(o.count == 2)
        #expect(!o[1].resumed)
        #expect(o[1].generation == 1)
    }
}
