import Foundation
import PinningLab
import PinningLabCore
import PinningLabTLSTypes
import PinningLabTestSupport
import Testing

/// A client that leaves Nagle's algorithm on — the JDK's sockets, Python's bare `socket` — holds a small write until
/// its previous one is acknowledged. A TLS 1.3 server without session tickets answers the client's Finished with
/// nothing, so its delayed ACK (40 ms on Linux) held every such client's request: each accepted cell of the OkHttp and
/// Python batch harnesses took 40 ms more than its handshake. The fixture server now acknowledges at once whenever it
/// waits for its client.
///
/// Judged against a control that has the same round trips and wake-ups but never stalled: an OpenSSL server with
/// TLS 1.3 session tickets, whose NewSessionTicket — written as soon as the client's Finished is read — carries the
/// ACK. (GnuTLS does not write its ticket then: with tickets it stalled too, 42 ms.) Connections alternate among the
/// servers, so a loaded machine slows them alike; with the stall every connection to a subject took ≥ 40 ms more
/// (TCP_DELACK_MIN).
@Suite("a client with Nagle's algorithm on is not held by the server's delayed ACK")
struct DelayedAckTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    /// `Tests/Nagle/nagle_client.py`: TLS 1.3 over a socket with Nagle on, one connection per target in turn.
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Nagle/nagle_client.py").path

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    @Test(
        "TLS 1.3 answers as fast as the control (no 40 ms delayed ACK): both engines without tickets, GnuTLS with them",
        .requires("python3"))
    func noDelayedAckStall() async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.setVersion(.tls13)
        var withTickets = config
        withTickets.resumption = SessionResumption(.tickets)
        let servers = [
            (
                "control: openssl, tickets",
                try await FixtureServer.start(
                    engine: Engines.openssl, configuration: withTickets, label: "nagle-control")
            ),
            (
                "openssl, no tickets",
                try await FixtureServer.start(engine: Engines.openssl, configuration: config, label: "nagle")
            ),
            (
                "gnutls, no tickets",
                try await FixtureServer.start(engine: Engines.gnutls, configuration: config, label: "nagle")
            ),
            (
                "gnutls, tickets",
                try await FixtureServer.start(engine: Engines.gnutls, configuration: withTickets, label: "nagle")
            ),
        ]
        defer { for (_, server) in servers { server.stopSync() } }
        let r = await run(
            ["python3", Self.client, f.path("lab-root.pem"), "15"] + servers.map { "\($0.1.port)" },
            timeout: .seconds(90))
        #expect(r.status == 0, "\(r.stderr)")
        var ms: [Int: [Double]] = [:]
        for line in r.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let port = Int(parts[0]), let v = Double(parts[1]) { ms[port, default: []].append(v) }
        }
        for (_, server) in servers { try #require(ms[server.port]?.count == 15, "\(r.stdout)") }
        let control = Self.median(ms[servers[0].1.port]!)
        for (name, server) in servers.dropFirst() {
            let times = ms[server.port]!
            let gap = Self.median(times) - control
            print(
                "\(name): request → response median \(Self.median(times)) ms, control \(control) ms (gap \(gap) ms): \(times.sorted())"
            )
            #expect(
                gap < 20,
                "\(name): each request waited for the server's delayed ACK: \(times.sorted()), control median \(control) ms"
            )
        }
    }
}
