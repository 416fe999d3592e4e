import ArgumentParser

struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "explain", abstract: "Not built yet.")
    func run() async throws { throw ValidationError("'pinlab explain' is not built yet.") }
}
