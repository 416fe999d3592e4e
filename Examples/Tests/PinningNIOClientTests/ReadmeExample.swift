// The README's `swift test` example, compiled and run in CI. The lines between the markers are the README's code
// block (its imports aside), character for character: PinningLabTests' ReadmeExampleTests checks that. Here
// `MyPinnedClient`, the reader's own client in the README, is the swift-nio-ssl client of this package.
import PinningLabTesting
import PinningNIOClient
import Testing

/// The README's client: trust roots, the pins in force (SPKI or certificate hashes) and an optional client identity.
struct MyPinnedClient {
    let client: PinningHTTPSClient

    init(roots: [[UInt8]], pins: PinSet, identity: ClientCredentials?) throws {
        client = try PinningHTTPSClient(
            trustRootsDER: roots, pins: Set(pins.nioPins),
            clientIdentity: identity.map {
                PinningHTTPSClient.ClientIdentity(
                    certificateChainDER: $0.certificateChainDER, privateKeyPKCS8DER: $0.privateKeyPKCS8DER)
            },
            timeout: .seconds(5))
    }

    func get(host: String, address: String, port: Int) async throws {
        _ = try await client.get(host: host, port: port, address: address)
    }
}

// README begin
@Test(arguments: ScenarioID.all, ServerEngine.both)
func pinsCorrectly(_ id: ScenarioID, _ engine: ServerEngine) async throws {
    try await Lab.withServer(id, engine: engine) { server in  // 127.0.0.1, ephemeral port, stops after the closure
        for profile in PinProfile.all {
            // The target holds what a client built for this cell holds: the pins in force for the host it asks for
            // (none where the scenario declares them for other hosts), the host name to verify, the address to
            // connect to, the trust roots and the client identity.
            let verdict = await server.verdict(profile) { target in  // throwing = refusing: a result
                let client = try MyPinnedClient(
                    roots: target.trustRootsDER, pins: target.effectivePins,
                    identity: target.clientCredentials)
                try await client.get(host: target.host, address: target.ip, port: target.port)
            }
            // pass, policy, stricter, unsupported
            #expect(!verdict.status.isDeviation, "\(id) \(profile): \(verdict.reason)")
        }
    }
}
// README end
