/// Text that came from outside — a ClientHello's server name, a request line, a client's standard error, a
/// command template — as the text and Markdown outputs show it. The one place that escapes it: the check reports
/// (`ReportText.swift`), the intercept reports and evidence (`PinningLabIntercept`) call these, never their own.
/// (HTML and XML go through ``xml(_:)``.)
package enum TextEscaping {
    /// For a terminal or a text file: every control character — C0 (line breaks and ESC included), DEL, C1 (0x9B is
    /// a CSI on 8-bit terminals) — and the Unicode line separators and bidirectional controls (which reorder what a
    /// reader sees) become visible escapes: `\n`, `\r`, `\t`, `\x1B`, `\u{202E}`. A client cannot move the cursor,
    /// recolour, retitle the terminal or forge a line of the report.
    package static func terminal(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: needsEscape) else { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count + 8)
        for u in s.unicodeScalars {
            guard needsEscape(u) else {
                out.unicodeScalars.append(u)
                continue
            }
            switch u {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let hex = String(u.value, radix: 16, uppercase: true)
                out += u.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{" + hex + "}"
            }
        }
        return out
    }

    /// For Markdown (CommonMark, GitHub's tables), inline or in one table cell: ``terminal(_:)`` first (no line
    /// break survives, so nothing can start a row, a heading or a list item), then a backslash before `\`, `` ` ``,
    /// `|`, `*`, `[` and `]` (no code span, cell break, emphasis or link can open), and `&`, `<`, `>` as entities (no
    /// HTML: `<script>` is shown, not run).
    package static func markdown(_ s: String) -> String {
        var out = ""
        for u in terminal(s).unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\\", "`", "|", "*", "[", "]": out += "\\" + String(u)
            default: out.unicodeScalars.append(u)
            }
        }
        return out
    }

    /// `s` as a Markdown code span when that shows it exactly (no backtick, pipe, backslash, `<`, `>`, `&` or control
    /// character: a host name, a request line), else ``markdown(_:)``: a hostile value never closes the span or a
    /// table cell, and no renderer that ignores code spans finds a tag in it.
    package static func markdownCode(_ s: String) -> String {
        let plain =
            !s.isEmpty && !s.unicodeScalars.contains { needsEscape($0) || "`|\\<>&".unicodeScalars.contains($0) }
        return plain ? "`" + s + "`" : markdown(s)
    }

    /// Whether `u` is shown as an escape by ``terminal(_:)``.
    static func needsEscape(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x00..<0x20, 0x7F...0x9F: return true
        // Line and paragraph separators, the bidirectional marks, embeddings, overrides and isolates.
        case 0x2028, 0x2029, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
