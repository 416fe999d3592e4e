import Foundation
import PinningLab
import PinningLabCore
import Testing

/// How the steps of a cell read after the fact (batch harnesses, one command for every step) find their requests:
/// by HTTP/2 stream first, on whichever connection carried it, then by connection. The end-to-end proof is
/// StepRealClientTests.nodeHTTP2Coalescing and BatchCLITests.okhttpAcrossSteps; these are the corners.
@Suite("Step evidence read after the fact")
struct StepEvidenceTests {
    // steps: cdn, then api; party interceptor
    static let scenario = try! Catalogue.bundled().scenario("h2-coalescing-pinned-host")

    static func connection(_ id: Int, sni: String, data: Bool, completed: Bool = true) -> Observation {
        Observation(
            id: id, label: "interceptor", engine: "openssl", startedAt: Date(), peerAddress: "127.0.0.1",
            serverName: sni, handshakeCompleted: completed, closure: Observation.Closure(rawValue: "eof"),
            applicationDataReceived: data, requestLine: data ? "PRI * HTTP/2.0" : nil, totalMilliseconds: 1)
    }

    static func stream(_ sequence: Int, on connection: Int, authority: String, sni: String) -> ObservedHTTP2Stream {
        ObservedHTTP2Stream(
            sequence: sequence, connection: connection, serverName: sni,
            stream: HTTP2Stream(id: Int32(2 * sequence - 1), authority: authority, method: "GET", path: "/"))
    }

    @Test func aCoalescedRequestIsFoundOnTheEarlierConnection() {
        let e = StepEvidence.assign(
            Self.scenario, connections: ["interceptor": [Self.connection(1, sni: "cdn.pinning.test", data: true)]],
            streams: [
                "interceptor": [
                    Self.stream(1, on: 1, authority: "cdn.pinning.test:443", sni: "cdn.pinning.test"),
                    Self.stream(2, on: 1, authority: "API.pinning.test.:443", sni: "cdn.pinning.test"),
                ]
            ])
        #expect(e.map(\.applicationDataReceived) == [true, true])
        #expect(
            e[1].requestLine?.contains("on connection 1, opened in an earlier step with SNI cdn.pinning.test") == true,
            "\(e[1].requestLine ?? "")")
        #expect(e[0].requestLine?.contains("opened in an earlier step") == false)
    }

    @Test func aRefusedStepTakesItsOwnConnectionNotTheOneALaterStepUses() {
        // Step 1's connection failed its handshake; step 2 opened a connection of its own and sent its stream there.
        let e = StepEvidence.assign(
            Self.scenario,
            connections: [
                "interceptor": [
                    Self.connection(1, sni: "cdn.pinning.test", data: false, completed: false),
                    Self.connection(2, sni: "api.pinning.test", data: true),
                ]
            ],
            streams: ["interceptor": [Self.stream(1, on: 2, authority: "api.pinning.test", sni: "api.pinning.test")]])
        #expect(e.map(\.applicationDataReceived) == [false, true])
        #expect(e[0].sni == "cdn.pinning.test" && e[1].sni == "api.pinning.test")
    }

    @Test func aRequestWithAnotherAuthorityStillReachedTheParty() {
        // Step 2's request went out on a connection of its own with an :authority no step names (an address): it
        // reached the interceptor all the same, so the step was accepted.
        let e = StepEvidence.assign(
            Self.scenario,
            connections: [
                "interceptor": [
                    Self.connection(1, sni: "cdn.pinning.test", data: true),
                    Self.connection(2, sni: "api.pinning.test", data: true),
                ]
            ],
            streams: [
                "interceptor": [
                    Self.stream(1, on: 1, authority: "cdn.pinning.test", sni: "cdn.pinning.test"),
                    Self.stream(2, on: 2, authority: "127.0.0.1:8443", sni: "api.pinning.test"),
                ]
            ])
        #expect(e.map(\.applicationDataReceived) == [true, true])
        #expect(e[1].sni == "api.pinning.test")
    }

    @Test func noConnectionAndNoStreamIsNoConnection() {
        let e = StepEvidence.assign(
            Self.scenario, connections: ["interceptor": [Self.connection(1, sni: "cdn.pinning.test", data: true)]],
            streams: ["interceptor": [Self.stream(1, on: 1, authority: "cdn.pinning.test", sni: "cdn.pinning.test")]])
        #expect(e[1].connected == false, "\(e[1])")
    }
}
