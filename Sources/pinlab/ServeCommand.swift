import ArgumentParser

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Not built yet.")
    func run() async throws { throw ValidationError("'pinlab serve' is not built yet.") }
}
