import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabCore
import PinningLabPKI

struct ScenariosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenarios",
        abstract: "List and validate the scenario catalogue.",
        subcommands: [List.self, Validate.self],
        defaultSubcommand: List.self
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "One line per scenario: id, expected row (none leaf-cert leaf-spki +backup int-spki root-spki), title.")

        @OptionGroup var source: CatalogueSource

        @Option(help: "text, json or markdown (the table of the Catalogue article).")
        var format: String = "text"

        @Option(help: "Only scenarios with this tag.")
        var tag: String?

        func validate() throws {
            guard ["text", "json", "markdown"].contains(format) else {
                throw ValidationError("--format: use text, json or markdown.")
            }
        }

        func run() async throws {
            var scenarios = source.load().scenarios
            if let tag { scenarios = scenarios.filter { $0.tags.contains(tag) } }
            if format == "json" {
                print(try JSONOutput.string(scenarios))
                return
            }
            if format == "markdown" {
                print(Catalogue(scenarios: scenarios).markdownTable(), terminator: "")
                return
            }
            let width = (scenarios.map(\.id.count).max() ?? 10) + 2
            for s in scenarios {
                print(s.id.padding(toLength: width, withPad: " ", startingAt: 0) + s.expectedRow + "  " + s.title)
            }
        }
    }

    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a folder of scenario files; every problem names the file, the line and the field.")

        @Argument(help: "The folder of scenario files (default: the bundled catalogue).")
        var folder: String?

        func run() async throws {
            let c = CatalogueSource(folder: folder).load()
            print("\(c.scenarios.count) scenarios, all valid.")
        }
    }
}

extension ServeCommand {
    /// Serve requests for catalogue scenarios (`pinlab serve --scenario ID` / `--all`): each scenario's exact
    /// chain, versions and client authentication; its trust profile as the trust file; and the pins of the
    /// client built for it (pinned leaf first, then the backup key, the intermediate and the root).
    static func scenarioRequests(lab: LabPKI, ids: [String], all: Bool) throws -> [ServeRequest] {
        guard all || !ids.isEmpty else { return [] }
        let catalogue: Catalogue
        do {
            catalogue = try Catalogue.bundled()
        } catch {
            throw ValidationError("\(error)")
        }
        let runner = CheckRunner(pki: lab, catalogue: catalogue)
        let selected: [Scenario]
        do {
            selected = all ? catalogue.scenarios : try ids.map { try catalogue.scenario($0) }
        } catch {
            throw ValidationError("--scenario: \(error)")
        }
        return try selected.map { s in
            let configuration: ServerTLSConfiguration
            do {
                configuration = try runner.serverConfiguration(for: s)
            } catch let e as TLSEngineError where e.code == .unsupported {
                // No engine can serve it with this PKI (the post-quantum part is missing): listed as unsupported.
                return ServeRequest(
                    id: s.id, configuration: ServerTLSConfiguration(identities: []), trustRootsDER: [], pinned: [],
                    unsupportedReason: e.reason)
            }
            var pinned: [Identity] = []
            for p in [PinProfile.leafSPKIBackup, .intermediateSPKI, .rootSPKI] {
                for id in try s.pinnedIdentities(for: p, in: lab) where !pinned.contains(where: { $0.name == id.name })
                {
                    pinned.append(id)
                }
            }
            return ServeRequest(
                id: s.id, configuration: configuration,
                trustRootsDER: try s.trustRoots(in: lab).map(\.certificateDER), pinned: pinned)
        }
    }
}
