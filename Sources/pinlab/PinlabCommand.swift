import ArgumentParser

@main
struct Pinlab: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinlab",
        abstract: "A private PKI, misbehaving TLS servers and a verdict matrix for certificate pinning.",
        subcommands: [PKICommand.self, ServeCommand.self, ScenariosCommand.self, ExplainCommand.self, LabCommand.self,
                      CheckCommand.self, DemoCommand.self, BenchCommand.self, ExportCommand.self,
                      ReportCommand.self, InterceptCommand.self]
    )
}
