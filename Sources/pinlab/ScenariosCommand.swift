import ArgumentParser

struct ScenariosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "scenarios", abstract: "Not built yet.")
    func run() async throws { throw ValidationError("'pinlab scenarios' is not built yet.") }
}
