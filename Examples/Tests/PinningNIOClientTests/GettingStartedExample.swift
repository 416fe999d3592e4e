// GettingStarted's `swift test` example (Sources/PinningLab/PinningLab.docc/GettingStarted.md), compiled and run in
// CI. The lines between the markers are the article's code block (its imports aside), character for character:
// PinningLabTests' ReadmeExampleTests checks that. Here `MyClient`, the reader's own `PinningClient`, is the
// swift-nio-ssl client of this package.
import PinningLabTesting
import Testing

/// The article's client: a `PinningClient` that connects where the target says, with the pins in force.
struct MyClient: PinningClient {
    var name: String { "my-client" }
    func run(_ target: ClientTarget) async -> ClientOutcome { await NIOPinningClient().run(target) }
}

// GettingStarted begin
@Test(arguments: ScenarioID.all)
func myClientPins(_ id: ScenarioID) async throws {
    try await Lab.withServer(id) { server in
        let verdict = await server.verdict(.leafSPKI, running: MyClient())
        #expect(!verdict.status.isDeviation, "\(verdict.reason)")  // pass, policy or stricter
    }
}
// GettingStarted end
