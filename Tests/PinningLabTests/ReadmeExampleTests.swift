import Foundation
import Testing

/// The README's `swift test` example is compiled and run in CI as `Examples/Tests/PinningNIOClientTests/
/// ReadmeExample.swift` (against every scenario, profile and engine, with a correct client). This checks that the
/// README shows exactly that code, so the two cannot drift apart.
@Suite("The README's example is the compiled one")
struct ReadmeExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The lines of the first ```swift block after `heading` in `document`, imports left out.
    static func readmeBlock(after heading: String, in document: String = "README.md") throws -> [String] {
        let text = try String(contentsOf: repository.appendingPathComponent(document), encoding: .utf8)
        let section = try #require(text.range(of: heading), "README has the heading \(heading)")
        let open = try #require(text.range(of: "```swift\n", range: section.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "\n```", range: open.upperBound..<text.endIndex))
        return text[open.upperBound..<close.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init).filter { !$0.hasPrefix("import ") }.drop { $0.isEmpty }.map { $0 }
    }

    /// The lines between `// MARKER begin` and `// MARKER end` of a compiled example file.
    static func compiledBlock(_ file: String, marker: String) throws -> [String] {
        let text = try String(contentsOf: repository.appendingPathComponent(file), encoding: .utf8)
        let begin = try #require(text.range(of: "// \(marker) begin\n"), "\(file) has the \(marker) markers")
        let end = try #require(text.range(of: "\n// \(marker) end"))
        return text[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).map(
            String.init)
    }

    @Test func theSwiftTestExampleIsTheCompiledOne() throws {
        let readme = try Self.readmeBlock(after: "## In `swift test`")
        let compiled = try Self.compiledBlock(
            "Examples/Tests/PinningNIOClientTests/ReadmeExample.swift", marker: "README")
        #expect(readme == compiled, "README.md's example and Examples/…/ReadmeExample.swift differ")
        #expect(
            readme.contains { $0.contains("target.effectivePins") },
            "the example configures the pins in force, not the scenario's")
    }

    /// GettingStarted's example too: compiled and run against every scenario in the Examples package.
    @Test func theGettingStartedExampleIsTheCompiledOne() throws {
        let article = try Self.readmeBlock(
            after: "## Judge a client from a Swift test",
            in: "Sources/PinningLab/PinningLab.docc/GettingStarted.md")
        let compiled = try Self.compiledBlock(
            "Examples/Tests/PinningNIOClientTests/GettingStartedExample.swift",
            marker: "GettingStarted")
        #expect(article == compiled, "GettingStarted.md's example and Examples/…/GettingStartedExample.swift differ")
        // `!status.isDeviation` refuses fail, disagree and error; `!= .fail` would let .disagree through.
        #expect(
            article.contains { $0.contains("!verdict.status.isDeviation") }
                && !article.contains { $0.contains("!= .fail") },
            "the example checks !status.isDeviation (`!= .fail` lets .disagree through)")
    }
}
