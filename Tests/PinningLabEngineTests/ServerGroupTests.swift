import Foundation
import PinningLab
import PinningLabCore
import Testing

/// The reusable core of `pinlab serve`: servers on both engines and a manifest a client in any language can use.
@Suite("server group and manifest")
struct ServerGroupTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    @Test("every manifest entry works with curl using only what the manifest says")
    func manifestIsUsable() async throws {
        let leaf = f.identity("leaf-v1")
        let request = ServeRequest(
            id: "leaf-v1", configuration: .makeServerConfiguration(leaf), trustRootsDER: [f.der("lab-root")],
            pinned: [leaf, f.identity("lab-intermediate-a"), f.identity("lab-root")])
        let group = try await FixtureServerGroup.start(
            [request], engines: EngineKind.allCases.map(\.engine), trustDirectory: f.file("group-\(UUID().uuidString)"))
        let manifest = group.manifest
        #expect(manifest.servers.map(\.engine) == ["openssl", "gnutls"])
        #expect(manifest.unsupported.isEmpty)
        for server in manifest.servers {
            let leafPin = try #require(server.pins.first)
            #expect(leafPin.curl == "sha256//" + leaf.pins.spkiBase64)
            #expect(leafPin.okhttp == "sha256/" + leaf.pins.spkiBase64)
            #expect(leafPin.spkiSHA256Hex == leaf.pins.spkiHex)
            #expect(server.pins.map(\.name) == ["leaf-v1", "lab-intermediate-a", "lab-root"])
            let r = await run([
                "curl", "-sS", "--max-time", "5", "--cacert", server.trustFile, "--pinnedpubkey", leafPin.curl,
                server.url,
            ])
            #expect(r.status == 0, "\(server.engine): \(r.stderr)")
            #expect(r.stdout.contains("\"engine\":\"\(server.engine)\""))
        }
        let decoded = try JSONDecoder.iso8601.decode(ServeManifest.self, from: manifest.json())
        #expect(decoded.servers == manifest.servers)
        await group.stop()
    }

    @Test("a request an engine cannot serve is listed as unsupported, the others still start")
    func unsupportedListed() async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.ciphers.gnuTLSPriority = "NORMAL"
        let group = try await FixtureServerGroup.start(
            [ServeRequest(id: "gnutls-only", configuration: config, trustRootsDER: [f.der("lab-root")], pinned: [])],
            engines: EngineKind.allCases.map(\.engine), trustDirectory: f.file("group-\(UUID().uuidString)"))
        #expect(group.manifest.servers.map(\.engine) == ["gnutls"])
        #expect(group.manifest.unsupported.first?["engine"] == "openssl")
        #expect(group.manifest.unsupported.first?["reason"]?.contains("GnuTLS priority") == true)
        await group.stop()
    }
}

extension JSONDecoder {
    static var iso8601: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }
}
