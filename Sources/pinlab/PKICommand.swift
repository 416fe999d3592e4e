import ArgumentParser

struct PKICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pki", abstract: "Not built yet.")
    func run() async throws { throw ValidationError("'pinlab pki' is not built yet.") }
}
