public import Foundation

/// A command template or a run option (an engine name, a shard) that cannot be used, with how to fix it.
public struct CheckSetupError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What is at fault: the client's command template, or an option of the run whatever the client.
    public enum Source: String, Sendable {
        case commandTemplate = "command template"
        case runOption = "run option"
    }
    public var source: Source
    public var problem: String
    public var fix: String
    public init(_ source: Source, problem: String, fix: String) {
        self.source = source
        self.problem = problem
        self.fix = fix
    }
    public var description: String { "\(source.rawValue): \(problem) Fix: \(fix)" }
    public var errorDescription: String? { description }
}
