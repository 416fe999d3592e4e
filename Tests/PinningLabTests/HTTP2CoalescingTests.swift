import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// h2-coalescing-pinned-host: a connection kept open over HTTP/2 for the unpinned CDN, reused for the pinned API.
/// The verdict comes from the interceptor's record of the streams it answered, never from the client's word.
@Suite("HTTP/2 connection coalescing", .requiresHTTP2())
struct HTTP2CoalescingTests {
    @Test func theScenarioOffersHTTP2OnTheInterceptor() throws {
        let s = try Catalogue.bundled().scenario("h2-coalescing-pinned-host")
        #expect(s.parties["interceptor"]?.alpn == ["h2", "http/1.1"])
        #expect(s.parties["interceptor"]?.offersHTTP2 == true)
        #expect(s.server.alpn == ["http/1.1"], "the genuine server keeps the default")
        #expect(s.steps.map(\.host) == ["cdn.pinning.test", "api.pinning.test"])
        #expect(s.expectedRow == "A X X X X X")
    }

    @Test func anUnknownALPNProtocolIsNamedWithItsField() throws {
        let yaml = """
            id: alpn-test
            title: ALPN
            teaching: A server that offers a protocol no fixture server speaks.
            server:
              chain: [leaf-v1, lab-intermediate-a]
              tls: {alpn: [h3]}
            client:
              trust: lab-root
            expect: {none: accept, leaf-cert: accept, leaf-spki: accept, leaf-spki+backup: accept, intermediate-spki: accept, root-spki: accept}
            """
        let e = #expect(throws: ScenarioError.self) { try ScenarioLoader.parse(yaml: yaml, file: "alpn-test.yaml") }
        #expect(e?.field == "server.tls.alpn[0]")
        #expect(e?.description.contains("'h3' is not an ALPN protocol") == true, "\(String(describing: e))")
        #expect(e?.fix.contains("h2") == true)
    }

    @Test("correct coalesces only where no pin applies; the server recorded where each request went")
    func correctClient() async throws {
        // A generous cell timeout: the servers close a connection idle that long, and on a loaded machine (a full
        // `swift test` starting hundreds of tests on two cores) the CDN's kept connection was once closed before the
        // second step came, so the API's request rightly went on a connection of its own.
        let report = try await TestLab.runner().run(
            .inProcess(BuiltInClients.named("correct")!),
            options: CheckOptions(scenarios: ["h2-coalescing-pinned-host"], timeout: .seconds(60)))
        #expect(report.verdicts.count == PinProfile.all.count * 2)
        #expect(report.verdicts.allSatisfy { $0.status == .pass }, "\(report.verdicts.map(\.reason))")
        for v in report.verdicts {
            let steps = try #require(v.steps)
            #expect(steps[0].observed == .accepted)
            #expect(
                steps[0].evidence?.requestLine?.contains(":authority cdn.pinning.test:") == true,
                "\(steps[0].evidence?.requestLine ?? "-")")
            if v.profile == .none {
                // No pins: the API's request rides the CDN's connection, as the server recorded.
                let line = steps[1].evidence?.requestLine ?? ""
                #expect(
                    line.contains(":authority api.pinning.test:")
                        && line.contains("opened in an earlier step with SNI cdn.pinning.test"), "\(line)")
            } else {
                // Pinned: not on the CDN's connection; a connection of its own, refused in its handshake.
                #expect(steps[1].observed == .refused)
                #expect(steps[1].evidence?.applicationDataReceived == false)
                #expect(steps[1].evidence?.sni == "api.pinning.test", "\(v.engine) \(v.profile)")
            }
        }
    }

    @Test("coalesces-without-pins sends the pinned API's request on the CDN's connection: every pinned cell fails")
    func coalescingClient() async throws {
        let report = try await TestLab.runner().run(
            .inProcess(BuiltInClients.named("coalesces-without-pins")!),
            options: CheckOptions(scenarios: ["h2-coalescing-pinned-host"]))
        let failed = report.verdicts.filter { $0.status == .fail }
        #expect(Set(failed.map(\.profile)) == Set(PinProfile.all.filter { $0 != .none }))
        #expect(failed.count == (PinProfile.all.count - 1) * 2)
        #expect(report.verdicts.filter { $0.profile == .none }.allSatisfy { $0.status == .pass })
        for v in failed {
            let step = try #require(v.steps?[1])
            #expect(step.status == .fail)
            let line = step.evidence?.requestLine ?? ""
            #expect(
                line.contains(":authority api.pinning.test:")
                    && line.contains("on connection 1, opened in an earlier step with SNI cdn.pinning.test"), "\(line)")
        }
    }
}
