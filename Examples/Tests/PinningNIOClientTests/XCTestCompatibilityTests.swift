// The same helpers from XCTest: PinningLabTesting imports neither XCTest nor Swift Testing.
import PinningLabTesting
import PinningNIOClient
import XCTest

final class XCTestCompatibilityTests: XCTestCase {
    func testBaselineIsAcceptedAndTheProxyRefused() async throws {
        for id in [ScenarioID.baseline, .interceptingProxy] {
            try await Lab.withServer(id, engine: .gnutls) { server in
                let client = try PinningHTTPSClient(for: server, profile: .leafSPKI)
                let verdict = await server.verdict(.leafSPKI) { target in
                    _ = try await client.get(host: target.host, port: target.port, address: target.ip)
                }
                XCTAssertEqual(verdict.status, .pass, "\(id): \(verdict.reason)")
            }
        }
    }
}
