import ArgumentParser
import Foundation

/// `pinlab man`: the manual page, pinlab(1), in roff, generated from the same command tree and help text as
/// `pinlab help` (so it cannot list a subcommand the binary does not have, or miss one). Hidden: scripts/release
/// writes it to share/man/man1/pinlab.1 in the tarball, beside the shell completions that
/// `pinlab --generate-completion-script bash|zsh|fish` prints.
struct ManCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "man",
        abstract: "Print the manual page pinlab(1) in roff (man ./pinlab.1 shows it).",
        shouldDisplay: false
    )

    func run() throws {
        print(Self.page(), terminator: "")
    }

    /// Every visible command below `command`, depth first, with the words that name it (`["pki", "init"]`).
    static func commands(
        below command: any ParsableCommand.Type, path: [String] = []
    ) -> [(path: [String], type: any ParsableCommand.Type)] {
        command.configuration.subcommands.filter { $0.configuration.shouldDisplay }.flatMap { sub in
            let p = path + [sub._commandName]
            return [(p, sub)] + commands(below: sub, path: p)
        }
    }

    /// Text for roff: backslashes and hyphens escaped, no line taken for a request.
    static func roff(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let escaped = line.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
            return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
        }.joined(separator: "\n")
    }

    /// A subcommand's help without its OVERVIEW paragraph (the section says it first).
    static func helpBody(_ type: any ParsableCommand.Type) -> String {
        var text = Pinlab.helpMessage(for: type, columns: 78)
        if text.hasPrefix("OVERVIEW:"), let end = text.range(of: "\n\n") { text = String(text[end.upperBound...]) }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func page() -> String {
        let root = Pinlab.configuration
        var out = """
            .TH PINLAB 1 "" "pinlab \(pinlabVersion)" "User Commands"
            .SH NAME
            pinlab \\- \(roff(root.abstract))
            .SH SYNOPSIS
            .B pinlab
            .I subcommand
            .RI [ options ]
            .br
            .B pinlab help
            .I subcommand
            .SH DESCRIPTION
            \(roff(root.abstract))
            The subcommands are below, each with its options as
            .B pinlab help
            prints them.
            .SH COMMANDS

            """
        for (path, type) in commands(below: Pinlab.self) {
            out += ".SS \"pinlab \(path.joined(separator: " "))\"\n"
            if !type.configuration.abstract.isEmpty { out += roff(type.configuration.abstract) + "\n" }
            out += ".PP\n.nf\n.RS 4\n" + roff(helpBody(type)) + "\n.RE\n.fi\n"
        }
        out += """
            .SH EXIT STATUS
            The same for every subcommand:
            .TP
            .B 0
            the client conforms, or the command did its job;
            .TP
            .B 1
            a cell deviates (a client accepted what it must refuse, or refused what it must accept);
            .TP
            .B 2
            a usage or setup problem: a bad option, a missing file, a client that cannot run.
            .PP
            A subcommand's help lists any other status it uses.
            .SH ENVIRONMENT
            .TP
            .B PINLAB_DIR
            The lab PKI folder of library use (Lab in a Swift test); the command line uses \\-\\-dir, else the
            nearest .pinninglab/ in the current folder or above it.
            .TP
            .B PINLAB_TRACE
            When set, the time each step of opening the lab PKI takes, on standard error.
            .SH FILES
            .TP
            .I .pinninglab/
            The lab PKI folder (keys, mode 0700), in the current folder or the nearest one above.
            .SH SEE ALSO
            .BR curl (1),
            .BR openssl (1).
            Shell completions:
            .B pinlab \\-\\-generate\\-completion\\-script bash|zsh|fish.

            """
        return out
    }
}
