import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML element with the line it starts on: what `pinlab audit` reads network security configs and property
/// lists into, so that every finding and every error names its line.
final class XMLElementNode: @unchecked Sendable {  // built by one parser on one thread, then only read
    let name: String
    let attributes: [String: String]
    let line: Int
    var text = ""
    var children: [XMLElementNode] = []
    weak var parent: XMLElementNode?

    init(name: String, attributes: [String: String], line: Int, parent: XMLElementNode?) {
        self.name = name
        self.attributes = attributes
        self.line = line
        self.parent = parent
    }

    func children(_ name: String) -> [XMLElementNode] { children.filter { $0.name == name } }
    func child(_ name: String) -> XMLElementNode? { children.first { $0.name == name } }
    var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Whether an ancestor (or this element) is named `name`.
    func isInside(_ name: String) -> Bool {
        var n: XMLElementNode? = self
        while let e = n {
            if e.name == name { return true }
            n = e.parent
        }
        return false
    }

    /// Parses `data` into its root element; malformed XML is an error naming the file and line.
    static func parse(_ data: Data, file: String) throws(PinConfigError) -> XMLElementNode {
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false  // never fetch a DTD or an entity
        parser.delegate = builder
        builder.parser = parser
        let ok = parser.parse()
        if !ok || builder.root == nil || builder.errorLine != nil {
            let line = builder.errorLine ?? parser.lineNumber
            let reason = builder.errorText ?? parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            throw PinConfigError(
                file: file, line: max(line, 1), problem: "malformed XML (\(reason)).",
                fix: "check the file with xmllint --noout \(file).")
        }
        return builder.root!
    }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    var root: XMLElementNode?
    var stack: [XMLElementNode] = []
    weak var parser: XMLParser?
    var errorLine: Int?
    var errorText: String?

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        let node = XMLElementNode(name: name, attributes: attributes, line: parser.lineNumber, parent: stack.last)
        if let top = stack.last { top.children.append(node) } else { root = node }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        // Checked here too: not every XMLParser reports a mismatched end tag.
        if let top = stack.last, top.name != name, errorLine == nil {
            errorLine = parser.lineNumber
            errorText = "</\(name)> closes <\(top.name)> opened at line \(top.line)"
            parser.abortParsing()
        }
        _ = stack.popLast()
    }

    func parserDidEndDocument(_ parser: XMLParser) {
        if let open = stack.last, errorLine == nil {
            errorLine = open.line
            errorText = "<\(open.name)> opened at line \(open.line) is never closed"
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { stack.last?.text += string }

    func parser(_ parser: XMLParser, parseErrorOccurred error: any Error) {
        if errorLine == nil {
            errorLine = parser.lineNumber
            let code = (error as NSError).code
            let known: [Int: String] = [
                4: "the document is empty", 5: "the document ends inside an element",
                76: "a closing tag does not match the element it closes (or an element is never closed)",
                73: "an end tag is malformed", 23: "an entity reference is malformed", 26: "an entity is not defined",
                39: "an attribute is not quoted", 41: "an attribute is malformed", 38: "an attribute is missing its value",
            ]
            errorText = known[code] ?? "XML error \(code): \((error as NSError).localizedDescription)"
        }
    }
}
