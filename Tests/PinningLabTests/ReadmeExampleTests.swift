import Foundation
import Testing

/// The README's `swift test` example is compiled and run in CI as `Examples/Tests/PinningNIOClientTests/
/// ReadmeExample.swift` (against every scenario, profile and engine, with a correct client). This checks that the
/// README shows exactly that code, so the two cannot drift apart.
@Suite("The README's example is the compiled one")
struct ReadmeExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The lines of the first ```swift block after `heading`, imports left out.
    static func readmeBlock(after heading: String) throws -> [String] {
        let text = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(text.range(of: heading), "README has the heading \(heading)")
        let open = try #require(text.range(of: "```swift\n", range: section.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "\n```", range: open.upperBound..<text.endIndex))
        return text[open.upperBound..<close.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.hasPrefix("import ") }.drop { $0.isEmpty }.map { $0 }
    }

    @Test func theSwiftTestExampleIsTheCompiledOne() throws {
        let readme = try Self.readmeBlock(after: "## In `swift test`")
        let file = try String(contentsOf: Self.repository.appendingPathComponent(
            "Examples/Tests/PinningNIOClientTests/ReadmeExample.swift"), encoding: .utf8)
        let begin = try #require(file.range(of: "// README begin\n"))
        let end = try #require(file.range(of: "\n// README end"))
        let compiled = file[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(readme == compiled, "README.md's example and Examples/…/ReadmeExample.swift differ")
        #expect(readme.contains { $0.contains("target.effectivePins") }, "the example configures the pins in force, not the scenario's")
    }
}
