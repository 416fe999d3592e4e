import Foundation
import PinningLabPKI
import PinningLabReports

/// A property-list value, written as Apple's XML plist (`plutil -convert xml1` form). Dictionaries keep their order
/// so that exports are stable and read in a teaching order.
enum PropertyList: Hashable, Sendable {
    case string(String)
    case bool(Bool)
    case integer(Int)
    case data([UInt8])
    case array([PropertyList])
    case dictionary([(String, PropertyList)])

    static func == (a: PropertyList, b: PropertyList) -> Bool { a.xml(indent: 0) == b.xml(indent: 0) }
    func hash(into h: inout Hasher) { h.combine(xml(indent: 0)) }

    /// A whole plist document, with an optional comment after the DOCTYPE.
    func document(comment: [String] = []) -> String {
        var s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        s +=
            "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
        if !comment.isEmpty { s += xmlComment(comment) }
        return s + "<plist version=\"1.0\">\n" + xml(indent: 0) + "</plist>\n"
    }

    func xml(indent: Int) -> String {
        let pad = String(repeating: "\t", count: indent)
        switch self {
        case .string(let v): return "\(pad)<string>\(PinningLabReports.xml(v))</string>\n"
        case .bool(let v): return "\(pad)<\(v ? "true" : "false")/>\n"
        case .integer(let v): return "\(pad)<integer>\(v)</integer>\n"
        case .data(let v):
            let b64 = Data(v).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            let lines = b64.split(separator: "\n").map { "\(pad)\($0)\n" }.joined()
            return "\(pad)<data>\n\(lines)\(pad)</data>\n"
        case .array(let items):
            if items.isEmpty { return "\(pad)<array/>\n" }
            return "\(pad)<array>\n" + items.map { $0.xml(indent: indent + 1) }.joined() + "\(pad)</array>\n"
        case .dictionary(let entries):
            if entries.isEmpty { return "\(pad)<dict/>\n" }
            var s = "\(pad)<dict>\n"
            for (k, v) in entries {
                s += "\(pad)\t<key>\(PinningLabReports.xml(k))</key>\n" + v.xml(indent: indent + 1)
            }
            return s + "\(pad)</dict>\n"
        }
    }
}

/// An XML comment block; `--` is not allowed inside a comment, so it is written `- -`.
func xmlComment(_ lines: [String], indent: String = "") -> String {
    let body = lines.map { indent + "     " + $0.replacingOccurrences(of: "--", with: "- -") }.joined(separator: "\n")
    return "\(indent)<!--\n\(body)\n\(indent)-->\n"
}

/// Comment lines for languages with `//` comments.
func slashComment(_ lines: [String], indent: String = "") -> String {
    lines.map { "\(indent)// \($0)" }.joined(separator: "\n") + "\n"
}

/// A Swift, Kotlin or Java string literal (the characters of hosts and base64 pins need no escape but `"` and `\`).
func quoted(_ s: String) -> String {
    "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
}
