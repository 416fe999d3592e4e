import Foundation
import PinningLabTesting
import Testing

@Suite("PinningLabTesting helpers")
struct TestingHelpersTests {
    @Test func scenarioIDsCoverTheCatalogueInOrder() throws {
        // The parameterized test below runs over ScenarioID.all: it must not be empty, and it must be the catalogue.
        try #require(!ScenarioID.all.isEmpty)
        #expect(ScenarioID.all.map(\.rawValue) == (try Catalogue.bundled().ids))
        #expect(ScenarioID.rogueCA == ScenarioID("untrusted-rogue"))
    }

    @Test func withServerJudgesAClientAgainstTheRogueCA() async throws {
        let correct = try #require(BuiltInClients.named("correct"))
        try await Lab.withServer(.rogueCA, pkiDirectory: TestLab.directory) { server in
            #expect(server.url.absoluteString == "https://localhost:\(server.port)/")
            #expect(server.expected(.leafSPKI) == .refuse)
            let v = try await server.verdict(.leafSPKI, running: correct)
            #expect(v.status == .pass, "\(v.reason)")
            #expect(v.observed == .refused)
            #expect(v.alert?.contains("unknown_ca") == true, "\(v.alert ?? "no alert")")
        }
    }

    @Test func aClosureThatNeverConnectsFailsAnAcceptCell() async throws {
        try await Lab.withServer(.baseline, engine: Engines.gnutls, pkiDirectory: TestLab.directory) { server in
            let v = await server.verdict(.none) {}
            #expect(v.status == .fail)
            #expect(v.reason.contains("never connected"))
            let backupPins = try server.pins(.leafSPKIBackup)
            #expect(backupPins.hashes.count == 2)
            #expect(server.clientCredentials == nil)
        }
    }

    @Test(arguments: ScenarioID.all)
    func correctClientPassesEveryScenarioThroughTheHelper(_ id: ScenarioID) async throws {
        // GnuTLS serves the whole catalogue (the runner's tests check that no cell is unsupported), so an
        // unsupported scenario is a failure here too, not a pass.
        let correct = try #require(BuiltInClients.named("correct"))
        try await Lab.withServer(id, engine: Engines.gnutls, pkiDirectory: TestLab.directory) { server in
            for profile in [PinProfile.none, .leafSPKI] {
                let v = try await server.verdict(profile, running: correct)
                #expect(v.status == .pass, "\(id) \(profile): \(v.reason)")
            }
        }
    }
}
