import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// `GET /trust/{profile}` hands out roots to install on a device: never one whose key a seed reveals and that is
/// not name-constrained (the state an older PinningLab left in a folder made with `--seed`).
@Suite("Control API: roots handed out for installation", .serialized)
struct ControlTrustTests {
    @Test func aSeededUnconstrainedRootIsRefusedAConstrainedOneIsServed() async throws {
        let dir = TestScratch.root.appendingPathComponent("pinlab-control-seeded-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try await Lab.openPKI(directory: dir, seed: "docs")
        // Mark proxy-root's and lab-root's keys as seeded, as an older version made them.
        let url = dir.appendingPathComponent("state.json")
        var state = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var keys = try #require(state["keys"] as? [String: [String: String]])
        let seeded = try #require(keys["K1"]?["origin"])
        keys["proxy-root"]?["origin"] = seeded
        keys["lab-root"]?["origin"] = seeded
        state["keys"] = keys
        try JSONSerialization.data(withJSONObject: state).write(to: url)
        // Opened anew (Lab.openPKI would return the copy it cached before the edit).
        let pki = try Lab.pki(spec: try Lab.builtInSpec(), options: Lab.libraryPKIOptions(directory: dir, seed: "docs"))
        let control = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled())
        do {
            try await Curl.$token.withValue(control.token) {
                let proxy = try await Curl.get(control.url + "trust/lab-root+proxy-root")
                #expect(proxy.status == 409, "\(proxy.text)")
                #expect(proxy.text.contains("proxy-root") && proxy.text.contains("--rekey"), "\(proxy.text)")
                let lab = try await Curl.get(control.url + "trust/lab-root")
                #expect(lab.status == 200, "lab-root is name-constrained: served even if seeded. \(lab.text)")
            }
        } catch {
            await control.stop()
            throw error
        }
        await control.stop()
    }
}
