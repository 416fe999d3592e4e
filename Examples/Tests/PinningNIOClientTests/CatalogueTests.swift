// The swift-nio-ssl pinning client through the whole catalogue, on both engines, every pin profile: every cell
// must be right. A deliberately broken variant (pins matched in the presented chain) must be caught.
import PinningLabTesting
import PinningNIOClient
import Testing

@Suite("swift-nio-ssl pinning client through the catalogue")
struct CatalogueTests {
    /// What no engine of this build serves: GnuTLS's SCTs in the TLS extension, ECH acceptance and retry configs
    /// (OpenSSL 4.0 would), ML-DSA keys (OpenSSL 3.5 would; and the lab PKI here has no post-quantum part).
    static let unservable = [
        "ct-tls-extension-valid", "ech-accepted", "ech-rejected-retry-configs", "dual-certificates-ecdsa-mldsa",
        "post-quantum-rekey", "post-quantum-rekey-pq-root",
    ]

    @Test(arguments: ScenarioID.all, ServerEngine.both)
    func everyCellIsRight(_ id: ScenarioID, _ engine: ServerEngine) async throws {
        try await Lab.withServer(id, engine: engine) { server in
            for profile in PinProfile.all {
                let client = try PinningHTTPSClient(for: server, profile: profile)
                let verdict = await server.verdict(profile, client: "swift-nio-ssl") { target in
                    _ = try await client.get(host: target.host, port: target.port, address: target.ip)
                }
                // Pass, or not a flaw: policy (a revocation or CT check the client does not declare), stricter than
                // required (BoringSSL ends the rollover path at the trusted new root), or unsupported (GnuTLS cannot
                // send SCTs in the TLS extension).
                #expect(!verdict.status.isDeviation, "\(id) \(profile) on \(engine): \(verdict.reason)")
            }
        }
    }

    @Test("pins matched in the presented chain are fooled by a stuffed chain", arguments: ServerEngine.both)
    func brokenVariantIsCaught(_ engine: ServerEngine) async throws {
        try await Lab.withServer(.chainStuffing, engine: engine) { server in
            for profile in [PinProfile.leafSPKI, .intermediateSPKI] {
                let broken = try PinningHTTPSClient(for: server, profile: profile, pinMatching: .presentedChain)
                let verdict = await server.verdict(profile, client: "presented-chain") { target in
                    _ = try await broken.get(host: target.host, port: target.port, address: target.ip)
                }
                #expect(verdict.status == .fail, "\(profile): \(verdict.reason)")
                #expect(verdict.observed == .accepted, "the stuffed chain should have fooled it: \(verdict.reason)")
            }
        }
    }

    @Test("Lab.check runs the client in-process through the catalogue; only the broken variant deviates")
    func labCheck() async throws {
        let good = try await Lab.check(NIOPinningClient(), engines: .both)
        #expect(good.verdicts.count == (ScenarioID.all.count + ScenarioID.withSteps.count) * PinProfile.all.count * 2)
        // The client cannot keep sessions across connections: the scenarios of several are unsupported, not judged.
        // …and what no engine of this build serves.
        #expect(
            Set(good.verdicts.filter { $0.status == .unsupported }.map(\.scenario))
                == Set(ScenarioID.withSteps.map(\.rawValue) + Self.unservable))
        let ms = good.verdicts.map(\.timings.clientMilliseconds).sorted()
        print("swift-nio-ssl client: \(ms.count) cells, median \(ms[ms.count / 2]) ms per cell")
        #expect(
            good.deviations.isEmpty,
            "\(good.deviations.map { "\($0.scenario) \($0.profile) \($0.engine): \($0.reason)" })")
        let bad = try await Lab.check(
            NIOPinningClient(pinMatching: .presentedChain), scenarios: [.chainStuffing], engines: .both)
        #expect(!bad.deviations.isEmpty)
    }
}
