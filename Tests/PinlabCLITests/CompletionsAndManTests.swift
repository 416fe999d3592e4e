// The shell completions and the manual page scripts/release ships are generated from the binary's own commands: every
// subcommand the binary has is in each of them.
import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@Suite("shell completions and the manual page name every subcommand")
struct CompletionsAndManTests {
    /// Every visible command of the binary, as the words that name it (`["pki", "init"]`), read from Argument
    /// Parser's own description of the tool (`--experimental-dump-help`), not from the generators under test.
    static func commandPaths() async throws -> [[String]] {
        let dump = try await CLI.run(["--experimental-dump-help"])
        try #require(dump.status == 0, "\(dump.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var paths: [[String]] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard sub["shouldDisplay"] as? Bool ?? true, let name = sub["commandName"] as? String,
                    name != "help"
                else { continue }
                paths.append(path + [name])
                walk(sub, path + [name])
            }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        return paths
    }

    @Test func completionsListEverySubcommand() async throws {
        let paths = try await Self.commandPaths()
        #expect(
            paths.count >= 25 && paths.contains(["pki", "init"]) && paths.contains(["report", "merge"]), "\(paths)")
        for shell in ["bash", "zsh", "fish"] {
            let r = try await CLI.run(["--generate-completion-script", shell])
            #expect(r.status == 0 && !r.stdout.isEmpty, "\(shell): \(r.stderr)")
            for path in paths {
                let name = path.last!
                let parent = (["pinlab"] + path.dropLast()).joined(separator: " ")
                let offered: Bool
                switch shell {
                case "bash":  // each command has its function, and its parent offers its name
                    offered =
                        r.stdout.contains("_pinlab_" + path.joined(separator: "_") + "()")
                        && r.stdout.contains(name)
                case "zsh":  // 'name:abstract' in the parent's list
                    offered = r.stdout.contains("'\(name):")
                default:  // complete -c pinlab … "pinlab pki" … -fa 'init'
                    offered = r.stdout.split(separator: "\n").contains {
                        $0.contains("\"\(parent)\"") && $0.contains("-fa '\(name)'")
                    }
                }
                #expect(offered, "the \(shell) completions do not offer `\(parent) \(name)`")
            }
            #expect(
                !r.stdout.contains("'man:") && !r.stdout.contains("-fa 'man'") && !r.stdout.contains("_pinlab_man()"),
                "\(shell): the hidden man command is offered")
        }
        // bash accepts the script and registers the completion.
        if let bash = Tool.path("bash") {
            let script = try await CLI.run(["--generate-completion-script", "bash"]).stdout
            let file = TestScratch.root.appendingPathComponent("pinlab-completion-\(UUID().uuidString.prefix(8)).bash")
            try script.write(to: file, atomically: true, encoding: .utf8)
            let r = await ChildProcess.run(
                [bash, "-c", "source '\(file.path)' && complete -p pinlab"], timeout: .seconds(30))
            #expect(r.status == 0 && r.stdoutText.contains("pinlab"), "\(r.stdoutText) \(r.stderrText)")
        }
    }

    @Test func manPageNamesEverySubcommand() async throws {
        let paths = try await Self.commandPaths()
        let r = try await CLI.run(["man"])
        #expect(r.status == 0, "\(r.stderr)")
        let page = r.stdout
        #expect(page.hasPrefix(".TH PINLAB 1 "), "\(page.prefix(200))")
        let sections = Set(
            page.split(separator: "\n").filter { $0.hasPrefix(".SS ") }.map {
                $0.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            })
        for path in paths {
            let title = (["pinlab"] + path).joined(separator: " ")
            #expect(sections.contains(title), "pinlab(1) has no section for `\(title)`")
        }
        #expect(
            sections.count == paths.count,
            "sections for commands the binary does not have: \(sections.subtracting(paths.map { (["pinlab"] + $0).joined(separator: " ") }))"
        )
        for heading in [".SH NAME", ".SH SYNOPSIS", ".SH EXIT STATUS", ".SH ENVIRONMENT"] {
            #expect(page.contains("\n\(heading)\n"), "no \(heading)")
        }
        // No line that roff would take for a request it does not know, and groff (when there) renders it without a
        // warning.
        let requests: Set<String> = [
            ".TH", ".SH", ".SS", ".PP", ".nf", ".fi", ".RS", ".RE", ".TP", ".B", ".I", ".BR", ".RI", ".br",
        ]
        for line in page.split(separator: "\n") where line.hasPrefix(".") {
            let request = String(line.split(separator: " ").first ?? "")
            #expect(requests.contains(request), "unexpected roff request: \(line)")
        }
        if let groff = Tool.path("groff") {
            let file = TestScratch.root.appendingPathComponent("pinlab-\(UUID().uuidString.prefix(8)).1")
            try page.write(to: file, atomically: true, encoding: .utf8)
            let rendered = await ChildProcess.run(
                [groff, "-man", "-Tutf8", "-ww", "-K", "utf-8", file.path], timeout: .seconds(60))
            #expect(rendered.status == 0, "\(rendered.stderrText)")
            #expect(rendered.stderrText.isEmpty, "groff warns: \(rendered.stderrText.prefix(2000))")
            #expect(rendered.stdoutText.contains("pinlab pki init"), "\(rendered.stdoutText.prefix(500))")
        }
    }
}
