import ArgumentParser

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Not built yet.")
    func run() async throws { throw ValidationError("'pinlab check' is not built yet.") }
}
