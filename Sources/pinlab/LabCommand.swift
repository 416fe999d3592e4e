import ArgumentParser
import Foundation
import PinningLab
import PinningLabLabs

struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "The teaching labs: list them, show one, grade a learner's client on one.",
        subcommands: [LabListCommand.self, LabShowCommand.self, LabCheckCommand.self])
}

func lab(_ text: String) -> TeachingLab {
    do {
        return try TeachingLabs.named(text)
    } catch {
        fail("\(error)")
    }
}

/// Every lab (labs/labs.yaml, then PINLAB_LABS_DIR's), or exit 2 naming the broken definition's file, field and fix.
func labs() -> [TeachingLab] {
    do {
        return try TeachingLabs.current()
    } catch {
        fail("\(error)")
    }
}

struct LabListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the labs.")

    func run() throws {
        let all = labs()
        let width = max(52, all.map(\.title.count).max() ?? 0)
        for l in all {
            print("\(l.number)  \(l.title.padding(toLength: width, withPad: " ", startingAt: 0))  \(l.pagePath)")
        }
        if let first = all.first {
            print("\nStart with `pinlab lab show \(first.number)`; grade with `\(first.gradeCommand)`.")
        }
    }
}

struct LabShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one lab: goal, scenarios, starter clients and the grading command.")

    @OptionGroup var source: CatalogueOptions

    @Argument(help: "The lab number (1-\(TeachingLabs.all.count)).")
    var number: String

    func run() async throws {
        let l = lab(number)
        let catalogue = source.loadCatalogue()
        let width = max(30, (l.scenarios.map(\.count).max() ?? 0) + 2)
        let scenarios = l.scenarios.map {
            "  \($0.padding(toLength: width, withPad: " ", startingAt: 0))\(catalogue[$0]?.title ?? "(not in this catalogue)")\n"
        }
        let teaching = l.teachingClient.map {
            "  pinlab lab check \(l.number) --client \($0)    (the built-in client that makes the same mistake)\n"
        }
        print(
            """
            Lab \(l.number) — \(l.title)

            Goal
            \(ExplainCommand.wrap(l.goal))

            The starter's mistake
            \(ExplainCommand.wrap(l.mistake))

            Scenarios (pinlab explain ID for each)
            \(scenarios.joined())
            Pin profiles graded: \(l.profiles.map(\.rawValue).joined(separator: ", "))\(l.clientChecks.map { "\nGraded as a client that declares --client-checks \($0)" } ?? "")
            Engines: both (openssl, gnutls)

            Starter clients
              \("\(l.language):".padding(toLength: 7, withPad: " ", startingAt: 0)) \(l.starterPath) (needs \(l.language.needs))
            \(l.hasSwiftStarter ? "  Swift:  \(l.swiftStarterPath) (build once: cd Examples && swift build --product lab-starter)\n" : "")
            Grade it
              \(l.gradeCommand)
            \(l.hasSwiftStarter ? "  pinlab lab check \(l.number) -- \(l.swiftStarterCommand)\n" : "")\(teaching ?? "")
            The whole page, with the background and the questions: \(l.pagePath)
            """)
    }
}

struct LabCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Grade a client on one lab's scenarios and explain every cell it got wrong.",
        discussion: """
            The client is a command after `--`, run once per cell with the placeholders and PINLAB_* environment \
            variables of `pinlab check` (see `pinlab check --help`), or a built-in client (--client NAME). The lab \
            clients in labs/ read the environment, so they need no placeholder:

              pinlab lab check 1 -- python3 labs/01-why-pin/starter.py

            --shard K/N grades only part K of the lab's cells (as `pinlab check --shard`; without it, the shard a CI \
            system gives in the environment, see `pinlab check --help`); --report FILE writes the cells as a check \
            report (JSON), and `pinlab report merge` joins the N shards' reports.

            Exit status: 0 when every cell of the lab is as expected, 1 when any is wrong; 2 for a malformed \
            command line (an unknown lab number lists the valid ones) or when the lab cannot be set up.
            """)

    @OptionGroup var source: CatalogueOptions

    @Argument(help: "The lab number (1-\(TeachingLabs.all.count)).")
    var number: String

    @OptionGroup var clientOptions: ClientRunOptions

    @OptionGroup var baselineOptions: BaselineOptions

    @Option(help: "text, or json (the grade and every wrong cell, for scripts and tests).")
    var format: String = "text"

    @Option(help: "Also write the lab's picture (an HTML page: chains, pins, your row beside the correct row).")
    var html: String?

    @Option(
        help:
            "Also write the cells as a check report (JSON, as `pinlab check --format json`): the input of `pinlab report merge` and `pinlab report site`."
    )
    var report: String?

    @Option(
        help:
            "Grade only part K of N of the lab's cells (e.g. 2/4), as `pinlab check --shard`; join the --report files with `pinlab report merge`. Default: the shard a CI system gives in the environment, else every cell."
    )
    var shard: String?

    @Option(
        help:
            "Cut the shards by the cell costs of an earlier run's JSON report (--report of the whole lab); default $PINLAB_SHARD_WEIGHTS, else costs estimated from each cell's connections."
    )
    var shardWeights: String?

    @Argument(parsing: .postTerminator, help: "The learner's client command (after --).")
    var command: [String] = []

    func validate() throws {
        do {
            _ = try TeachingLabs.named(number)
        } catch let error as UnknownLabError {
            throw ValidationError("\(error)")
        } catch {
            fail("\(error)")
        }
        try clientOptions.requireOneClient(
            command: command,
            missing:
                "give a client: a command after `--` (e.g. -- \(lab(number).starterCommand)), or --client \(BuiltInClients.names.joined(separator: "|"))."
        )
        guard format == "text" || format == "json" else {
            throw ValidationError("--format: '\(format)' is not a format of lab check; use text or json.")
        }
        if let shard { _ = try CellShard(parsing: shard) }
    }

    func run() async throws {
        let l = lab(number)
        let shard = resolveShard(shard)
        let shardWeights = resolveShardWeights(self.shardWeights, shard: shard)
        let subject = clientOptions.subject(command: command, defaultName: command.joined(separator: " "))
        let catalogue = source.loadCatalogue()
        for s in l.scenarios where catalogue[s] == nil {
            fail("lab \(l.number) needs the scenario '\(s)', which is not in this catalogue.")
        }
        requireWritable(html, option: "--html")
        requireWritable(report, option: "--report")
        requireWritable(baselineOptions.writeBaseline, option: "--write-baseline")
        let baseline = baselineOptions.load()
        let pki = await source.openPKI()
        let interrupts = interruptingClientCommands("pinlab.lab.signals")
        defer { interrupts.cancel() }
        let runner = CheckRunner(pki: pki, catalogue: catalogue)
        let engines = try clientOptions.engines()
        var grade: LabGrade
        do {
            var options = l.checkOptions(
                engines: engines, jobs: clientOptions.jobs, timeout: clientOptions.timeoutDuration)
            options.shard = shard
            options.shardWeights = shardWeights
            grade = LabGrade(lab: l, report: try await runner.run(subject, options: options))
        } catch {
            await interrupts.holdIfInterrupted()
            fail("\(error)")
        }
        await interrupts.holdIfInterrupted()
        let changed = baselineOptions.apply(baseline, to: &grade.report)
        if let report { writeOrFail(try grade.report.render(.json), to: report) }
        if format == "json" {
            print(try grade.jsonString(), terminator: "")
        } else {
            print(grade.renderText(color: stdoutIsTerminal), terminator: "")
            if let shard {
                print(
                    "Shard \(shard): only this part of the lab's cells was graded (· not run); join the shards' --report files with `pinlab report merge`."
                )
            }
        }
        if let html {
            let correct: CheckReport?
            if let c = BuiltInClients.named(l.referenceClient) {
                correct = try? await runner.run(
                    .inProcess(c), options: l.checkOptions(engines: engines, jobs: clientOptions.jobs))
            } else {
                correct = nil
            }
            writeOrFail(LabReportHTML.render(grade, correct: correct), to: html)
            if format == "text" { print("The lab's picture: \(html)") }
        }
        baselineOptions.printChanges(grade.report, format: format, output: nil)
        if baseline != nil ? changed : !grade.passed { throw ExitCode(1) }
    }
}
