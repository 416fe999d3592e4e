// The names the Swift blocks of README.md and the DocC articles assume the reader has: their own pinning client, their
// app's API client, and the code an article tells them to copy. scripts/check-doc-snippets writes every block to
// Generated/ beside this file and builds this target (CONTRIBUTING.md, "Swift blocks in the documents").
// These are stand-ins with the shapes the documents use; nothing here runs.
import Foundation
import PinningLab
import PinningNIOClient
// BatchHarnesses: "Copy SwiftBatchHarness.swift into the app's test target" — its names are in every block's scope.
@_exported import SwiftBatchHarness

/// The reader's pinning client (README, PinningLabTesting): built from what the target hands over.
struct MyPinnedClient {
    init(roots: [[UInt8]], pins: PinSet, identity: ClientCredentials? = nil) throws {}
    func get(host: String, address: String, port: Int) async throws {}
}

/// The reader's client as a `PinningClient` (GettingStarted).
struct MyClient: PinningClient {
    var name: String { "my-client" }
    func run(_ target: ClientTarget) async -> ClientOutcome { .accepted() }
}

/// The reader's connect-and-request function (PinningLabTesting).
func connect(_ target: ClientTarget) async throws {}

/// The app's networking layer (TestingAniOSApp, step 5).
struct MyAPIClient {
    init(baseURL: URL) {}
    func fetchStatus() async throws -> String { "" }
}

extension PinningHTTPSClient {
    /// The adapter PinningClientAdapters points to (Examples/Tests/PinningNIOClientTests/NIOPinningAdapter.swift).
    init(for server: ScenarioServer, profile: PinProfile) throws {
        try self.init(trustRootsDER: server.trustRootsDER)
    }
}

#if canImport(Security)
    import Security

    /// The reader's SPKI hash (PinningClientAdapters, URLSession): SHA-256 of the certificate's DER SubjectPublicKeyInfo.
    func spkiSHA256(_ certificate: SecCertificate) -> Data { Data() }
#endif
