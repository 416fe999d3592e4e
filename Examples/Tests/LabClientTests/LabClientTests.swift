// The Swift lab clients (Labs/Starters and Labs/Instructor) graded exactly as `pinlab lab check N -- …` grades
// them: through PinningLab's CheckRunner, each cell running the built executable on real servers, both engines.
import Foundation
import PinningLab
import PinningLabLabs
import Testing

@Suite("Swift lab clients", .serialized)
struct LabClientTests {
    /// The executables are built next to the test bundle (`swift build` builds them: the test target depends on them).
    static func executable(_ name: String) throws -> String {
        var candidates: [URL] = []
        for b in Bundle.allBundles where b.bundlePath.hasSuffix(".xctest") {
            candidates.append(b.bundleURL.deletingLastPathComponent())
        }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent())
        for dir in candidates {
            let url = dir.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url.path }
        }
        throw CancellationError()
    }

    static func grade(_ lab: TeachingLab, executable name: String) async throws -> LabGrade {
        let path = try #require(try? executable(name), "\(name) was not built; run `swift build` in Examples first")
        let client = CommandClient(
            name: "\(name) \(lab.number)", template: try CommandTemplate([path, String(lab.number)]),
            timeout: .seconds(20))
        return try await lab.grade(.command(client), runner: try CheckRunner.lab(), jobs: 4, timeout: .seconds(20))
    }

    // Labs of several connections have no Swift starter (SwiftNIO SSL offers no client session resumption).
    @Test("the Swift reference solution passes", arguments: TeachingLabs.all.filter(\.hasSwiftStarter).map(\.number))
    func solutionPasses(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let g = try await Self.grade(lab, executable: "lab-solution")
        #expect(g.passed, "\(g.renderText())")
        #expect(g.report.engines == ["openssl", "gnutls"])
        #expect(g.cellsRun == lab.scenarios.count * lab.profiles.count * 2)
        #expect(g.report.verdicts.filter { $0.status == .pass }.count == g.cellsRun)
    }

    @Test(
        "the Swift starter fails for exactly the lab's reason, on both engines",
        arguments: TeachingLabs.all.filter(\.hasSwiftStarter).map(\.number))
    func starterFailsForTheLabsReason(_ number: Int) async throws {
        let lab = try TeachingLabs.named(String(number))
        let g = try await Self.grade(lab, executable: "lab-starter")
        #expect(!g.passed)
        #expect(g.cellsRun == lab.scenarios.count * lab.profiles.count * 2)
        #expect(g.failingCells == lab.starterFails, "\(g.renderText())")
        #expect(g.failingOnEveryEngine == lab.starterFails, "\(g.renderText())")
    }
}
