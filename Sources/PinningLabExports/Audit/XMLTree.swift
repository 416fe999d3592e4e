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

    /// Deeper nesting is refused while parsing: real configurations nest fewer than 20 levels, and every walk of the
    /// tree then stays far from the end of a thread's stack.
    static let maxDepth = 256
    /// Larger files are refused before parsing: libxml2 gives up at about 10 MB of input without its "huge" option
    /// (with an "internal error"), and a configuration is a few KB.
    static let maxBytes = 8 * 1024 * 1024

    init(name: String, attributes: [String: String], line: Int, parent: XMLElementNode?) {
        self.name = name
        self.attributes = attributes
        self.line = line
        self.parent = parent
    }

    deinit {
        // Releases the subtree level by level: the default release of `children` recurses once per level.
        var pending = children
        children = []
        while var n = pending.popLast() {
            if isKnownUniquelyReferenced(&n) {
                pending += n.children
                n.children = []
            }
        }
    }

    func children(_ name: String) -> [XMLElementNode] { children.filter { $0.name == name } }
    func child(_ name: String) -> XMLElementNode? { children.first { $0.name == name } }
    var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Parses `data` into its root element; malformed XML is an error naming the file, the line, what is wrong and
    /// the fix. Refused before or while parsing: files over ``maxBytes``, any encoding but UTF-8 and US-ASCII (see
    /// ``encodingProblem(_:file:)``), entity declarations, and nesting deeper than ``maxDepth``.
    static func parse(_ data: Data, file: String) throws(PinConfigError) -> XMLElementNode {
        guard data.count <= maxBytes else {
            throw PinConfigError(
                file: file,
                problem:
                    "is \(megabytes(data.count)), larger than the \(megabytes(maxBytes)) pinlab audit reads in an XML "
                    + "configuration (a network security config or an Info.plist is a few KB).",
                fix: "give the configuration file itself, or a copy with only the pinning part.")
        }
        if let (line, problem, fix) = encodingProblem(data, file: file) {
            throw PinConfigError(file: file, line: line, problem: problem, fix: fix)
        }
        if let (line, name) = entityDeclaration(in: data) {
            throw PinConfigError(
                file: file, line: line,
                problem:
                    "the DOCTYPE declares the entity '\(name)': DTD entities are not supported (Android's and Apple's "
                    + "readers of these files do not expand them, and text after a reference to one would be lost here).",
                fix: "write the value literally where &\(name); is used, and remove the <!ENTITY …> declarations.")
        }
        let builder = TreeBuilder(file: file)
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false  // never fetch a DTD or an entity
        parser.delegate = builder
        builder.parser = parser
        let ok = parser.parse()
        if !ok || builder.root == nil || builder.error != nil {
            let line = builder.error?.line ?? parser.lineNumber
            let (problem, fix) =
                builder.error.map { ($0.problem, $0.fix) }
                ?? TreeBuilder.describe(parser.parserError.map { ($0 as NSError).code }, file: file)
            throw PinConfigError(file: file, line: max(line, 1), problem: problem, fix: fix)
        }
        return builder.root!
    }

    /// The line and name of the first `<!ENTITY` declared in the document's DOCTYPE, if any: a scan of the prolog
    /// only (comments, processing instructions and quoted literals skipped), which ends at the root element.
    static func entityDeclaration(in data: Data) -> (line: Int, name: String)? {
        let b = [UInt8](data)
        var i = 0
        var line = 1
        var inDoctype = false
        var inSubset = false
        func starts(_ s: StaticString) -> Bool {
            let n = s.utf8CodeUnitCount
            guard i + n <= b.count else { return false }
            return s.withUTF8Buffer { u in (0..<n).allSatisfy { b[i + $0] == u[$0] } }
        }
        /// Moves past `end`, counting lines; at the end of the data when it never comes.
        func skip(past end: StaticString) {
            let first = end.withUTF8Buffer { $0[0] }
            while i < b.count {
                if b[i] == UInt8(ascii: "\n") { line += 1 }
                if b[i] == first && starts(end) {
                    i += end.utf8CodeUnitCount
                    return
                }
                i += 1
            }
        }
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\n") {
                line += 1
                i += 1
                continue
            }
            if c == UInt8(ascii: "<") && starts("<!--") {
                i += 4
                skip(past: "-->")
                continue
            }
            if c == UInt8(ascii: "<") && starts("<?") {
                i += 2
                skip(past: "?>")
                continue
            }
            if !inDoctype {
                if c == UInt8(ascii: "<") && starts("<!DOCTYPE") {
                    inDoctype = true
                    i += 9
                    continue
                }
                if c == UInt8(ascii: "<") { return nil }  // the root element (or markup the parser will refuse)
                i += 1
                continue
            }
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                i += 1
                if c == UInt8(ascii: "'") { skip(past: "'") } else { skip(past: "\"") }
                continue
            }
            if inSubset && c == UInt8(ascii: "<") && starts("<!ENTITY") {
                i += 8
                var name: [UInt8] = []
                while i < b.count, [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "%")].contains(b[i]) { i += 1 }
                while i < b.count, name.count < 60, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">")].contains(b[i]) {
                    name.append(b[i])
                    i += 1
                }
                return (line, String(decoding: name, as: UTF8.self))
            }
            if c == UInt8(ascii: "[") { inSubset = true }
            if c == UInt8(ascii: "]") { inSubset = false }
            if c == UInt8(ascii: ">") && !inSubset { inDoctype = false }
            i += 1
        }
        return nil
    }

    static func megabytes(_ n: Int) -> String {
        n >= 1024 * 1024 ? String(format: "%.1f MB", Double(n) / 1_048_576) : "\(n) bytes"
    }

    /// Why `data` is refused before parsing for its encoding, if it is: the line, the problem and the fix.
    ///
    /// pinlab audit reads UTF-8 (and its subset US-ASCII) only, as Android and Apple write these files: a byte-order
    /// mark of UTF-16 or UTF-32, a declared encoding other than UTF-8 or US-ASCII, a byte that is not part of a UTF-8
    /// character (or not US-ASCII when the file declares US-ASCII) and a NUL byte are refused. Every byte the XML
    /// parser then sees is UTF-8 it need not convert: swift-corelibs-foundation's `XMLParser` traps on a comment that
    /// is not UTF-8, which libxml2 passed on unchecked when the file declared an encoding it did not know.
    static func encodingProblem(_ data: Data, file: String) -> (line: Int, problem: String, fix: String)? {
        let boms: [([UInt8], String)] = [
            ([0x00, 0x00, 0xFE, 0xFF], "UTF-32"), ([0xFF, 0xFE, 0x00, 0x00], "UTF-32"),
            ([0xFE, 0xFF], "UTF-16"), ([0xFF, 0xFE], "UTF-16"),
        ]
        if let (bom, name) = boms.first(where: { data.starts(with: $0.0) }) {
            return (
                1,
                "the file is \(name) (it starts with the byte-order mark "
                    + bom.map { String(format: "%02X", $0) }.joined(separator: " ")
                    + "); pinlab audit reads UTF-8 only, as Android and Apple write these files.",
                "convert a copy to UTF-8 and declare encoding=\"UTF-8\" in it: iconv -f \(name) -t UTF-8 \(file) > copy.xml."
            )
        }
        var ascii = false
        if let (line, value) = declaredEncoding(data) {
            let name = escapedName(value)
            switch String(decoding: value, as: UTF8.self).lowercased() {
            case "utf-8", "utf8": break
            case "us-ascii", "ascii": ascii = true
            default:
                let known = value.allSatisfy {
                    (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "'")
                }
                return (
                    line,
                    "the <?xml …?> declaration says encoding=\"\(name)\"; pinlab audit reads UTF-8 (and US-ASCII) "
                        + "only, as Android and Apple write these files.",
                    "save the file as UTF-8 and declare encoding=\"UTF-8\""
                        + (known ? " (if it really is \(name): iconv -f \(name) -t UTF-8 \(file) > copy.xml)." : ".")
                )
            }
        }
        // The common case in one fast pass: valid UTF-8, no NUL byte, and all US-ASCII when that is declared.
        if String(data: data, encoding: .utf8) != nil && !data.contains(0) && !(ascii && data.contains { $0 >= 0x80 }) {
            return nil
        }
        var line = 1
        var iterator = data.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar):
                let first = scalar.first ?? 0
                if first == 0 {
                    return (
                        line, "byte 0x00 (NUL), which XML does not allow (a UTF-16 file without its byte-order mark?).",
                        "save the file as UTF-8 (iconv -f UTF-16 -t UTF-8 \(file) > copy.xml converts a UTF-16 copy), or remove the byte."
                    )
                }
                if ascii && first >= 0x80 {
                    return (
                        line, String(format: "byte 0x%02X is not US-ASCII, the encoding the file declares.", first),
                        "declare encoding=\"UTF-8\" if the file is UTF-8, or write the character as a reference (&#xE9; for é)."
                    )
                }
                if scalar.count == 1 && first == UInt8(ascii: "\n") { line += 1 }
                offset += scalar.count
            case .emptyInput:
                return nil
            case .error:
                return (
                    line,
                    String(
                        format: "not UTF-8: byte 0x%02X is not part of a UTF-8 character",
                        data[data.startIndex + offset])
                        + "; pinlab audit reads UTF-8 only, as Android and Apple write these files.",
                    "save the file as UTF-8 (iconv -f ISO-8859-1 -t UTF-8 \(file) > copy.xml converts a Latin-1 copy), "
                        + "or remove the character."
                )
            }
        }
    }

    /// The line and value of `encoding="…"` in the `<?xml …?>` declaration the document starts with (after a UTF-8
    /// byte-order mark), if it has one; the value's raw bytes, at most 64 of them.
    static func declaredEncoding(_ data: Data) -> (line: Int, value: [UInt8])? {
        var b = [UInt8](data.prefix(1024))
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { b.removeFirst(3) }
        let space: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        guard b.starts(with: Array("<?xml".utf8)), b.count > 5, space.contains(b[5]) else { return nil }
        let end = (5..<b.count).first { b[$0] == UInt8(ascii: ">") } ?? b.count
        let key = Array("encoding".utf8)
        guard let at = (5..<max(5, end - key.count + 1)).first(where: { Array(b[$0..<$0 + key.count]) == key }) else {
            return nil
        }
        var i = at + key.count
        while i < end, space.contains(b[i]) || b[i] == UInt8(ascii: "=") { i += 1 }
        var value: [UInt8] = []
        let quote = i < end && (b[i] == UInt8(ascii: "\"") || b[i] == UInt8(ascii: "'")) ? b[i] : nil
        if quote != nil { i += 1 }
        while i < end, value.count < 64, b[i] != quote,
            quote != nil || !(space.contains(b[i]) || b[i] == UInt8(ascii: "?"))
        {
            value.append(b[i])
            i += 1
        }
        return (1 + b[..<at].filter { $0 == 0x0A }.count, value)
    }

    /// An encoding name for a message: printable ASCII as it is, any other byte as \xNN.
    static func escapedName(_ value: [UInt8]) -> String {
        value.map {
            (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "\\")
                ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0)
        }
        .joined()
    }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    struct Failure {
        var line: Int
        var problem: String
        var fix: String
    }
    var root: XMLElementNode?
    var stack: [XMLElementNode] = []
    weak var parser: XMLParser?
    var error: Failure?
    let file: String

    init(file: String) { self.file = file }

    func fail(_ parser: XMLParser, line: Int? = nil, _ problem: String, fix: String) {
        guard error == nil else { return }
        error = Failure(line: line ?? parser.lineNumber, problem: problem, fix: fix)
        parser.abortParsing()
    }

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        guard error == nil else { return }
        guard stack.count < XMLElementNode.maxDepth else {
            fail(
                parser, "elements are nested deeper than \(XMLElementNode.maxDepth) levels (<\(name)> here).",
                fix: "close each element where it ends (a configuration nests fewer than 20 levels; a missing end tag "
                    + "nests everything after it).")
            return
        }
        let node = XMLElementNode(name: name, attributes: attributes, line: parser.lineNumber, parent: stack.last)
        if let top = stack.last { top.children.append(node) } else { root = node }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard error == nil else { return }
        // Checked here too: not every XMLParser reports a mismatched end tag.
        if let top = stack.last, top.name != name {
            fail(
                parser, "malformed XML: </\(name)> closes <\(top.name)> opened at line \(top.line).",
                fix: "close each element with its own end tag, innermost first (xmllint --noout \(file) shows where).")
            return
        }
        _ = stack.popLast()
    }

    func parserDidEndDocument(_ parser: XMLParser) {
        if let open = stack.last, error == nil {
            error = Failure(
                line: open.line, problem: "malformed XML: <\(open.name)> opened at line \(open.line) is never closed.",
                fix: "add </\(open.name)> where the element ends.")
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard error == nil else { return }
        stack.last?.text += string
    }

    // Entity declarations: Android's and Apple's readers of these files do not expand them, and libxml2 expands them
    // only in part here (text after an entity reference is lost), so a document declaring any is refused.
    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        refuseEntity(parser, name)
    }

    func parser(
        _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
    ) {
        refuseEntity(parser, name)
    }

    func parser(
        _ parser: XMLParser, foundUnparsedEntityDeclarationWithName name: String, publicID: String?, systemID: String?,
        notationName: String?
    ) {
        refuseEntity(parser, name)
    }

    func refuseEntity(_ parser: XMLParser, _ name: String) {
        fail(
            parser,
            "the DOCTYPE declares the entity '\(name)': DTD entities are not supported (Android's and Apple's "
                + "parsers of these files do not expand them).",
            fix: "write the value literally where &\(name); is used, and remove the <!ENTITY …> declarations.")
    }

    func parser(_ parser: XMLParser, parseErrorOccurred error: any Error) {
        guard self.error == nil else { return }
        let (problem, fix) = Self.describe((error as NSError).code, file: file)
        self.error = Failure(line: parser.lineNumber, problem: problem, fix: fix)
    }

    /// libxml2's error codes (the codes XMLParser reports), in words, with a fix.
    static func describe(_ code: Int?, file: String) -> (problem: String, fix: String) {
        let check = "correct the XML at that line (xmllint --noout \(file) shows the exact column)."
        guard let code else {
            return ("the file holds no XML element.", "give a network_security_config.xml or an Info.plist.")
        }
        let known: [Int: (String, String)] = [
            1: (
                "the XML parser stopped at one of its limits (a text, name or attribute value too long, or the "
                    + "document too large).", "give the configuration file itself; configurations are a few KB."
            ),
            2: (
                "the XML parser ran out of memory.", "give the configuration file itself; configurations are a few KB."
            ),
            3: (
                "the document does not start with XML (<?xml …?> or an element).",
                "give an XML file; remove anything before the first '<'."
            ),
            4: ("the document is empty.", "give a network_security_config.xml or an Info.plist with its content."),
            5: (
                "the document ends inside an element (the file is cut short, or an element is never closed).",
                "restore the end of the file, or close every element (xmllint --noout \(file) shows where)."
            ),
            6: ("a hexadecimal character reference (&#x…;) is not valid.", check),
            7: ("a decimal character reference (&#…;) is not valid.", check),
            8: ("a character reference names a character XML does not allow.", check),
            9: (
                "a character XML does not allow (a control character, or text in another encoding than the one declared).",
                "remove the character, or save the file in the encoding its <?xml encoding=…?> declares (UTF-8 if none)."
            ),
            22: (
                "'&' starts no entity reference (write &amp; for a literal '&').",
                "write & as &amp; in text and attribute values."
            ),
            23: (
                "an entity reference has no closing ';' (write &amp; for a literal '&').",
                "write & as &amp; in text and attribute values."
            ),
            26: (
                "an entity is not defined (only &amp; &lt; &gt; &quot; &apos; are).",
                "write the character itself, or &amp; for '&'."
            ),
            27: (
                "an entity is not defined (only &amp; &lt; &gt; &quot; &apos; are).",
                "write the character itself, or &amp; for '&'."
            ),
            31: ("the declared encoding is unknown.", "declare encoding=\"UTF-8\" and save the file as UTF-8."),
            32: ("the declared encoding is not supported.", "declare encoding=\"UTF-8\" and save the file as UTF-8."),
            33: ("a quoted value does not start with a quote.", check),
            34: ("a quoted value is never closed (a missing \" or ').", "close the quote."),
            38: ("an attribute is missing its value", "write name=\"value\"."),
            39: ("an attribute is not quoted", "write name=\"value\", with the quotes."),
            40: ("an attribute value is never closed (a missing \" or ').", "close the quote."),
            41: ("an attribute is malformed", "write name=\"value\"."),
            42: ("an attribute is written twice on the same element.", "keep one of them."),
            44: ("a literal in the DOCTYPE is never closed.", check),
            45: ("a comment is never closed (<!-- without -->).", "close the comment with -->."),
            46: ("a processing instruction (<?…?>) is malformed.", check),
            47: ("a processing instruction (<?…?>) is never closed.", "close it with ?>."),
            57: ("the <?xml …?> declaration is not closed.", "write <?xml version=\"1.0\" encoding=\"UTF-8\"?>."),
            61: ("the DOCTYPE is never closed.", "close the <!DOCTYPE …> declaration with >."),
            62: ("']]>' appears in text (it ends a CDATA section).", "write ]]&gt; instead."),
            63: ("a CDATA section is never closed (<![CDATA[ without ]]>).", "close it with ]]>."),
            64: (
                "an <?xml …?> declaration appears after the start of the document.",
                "keep one declaration, on the first line."
            ),
            65: ("a space is missing (between attributes, or in a declaration).", check),
            68: (
                "a name is expected here ('<' must start an element; write &lt; for a literal '<').",
                "write < in text as &lt;."
            ),
            73: ("an end tag is malformed", "write </name>."),
            74: ("an end tag is expected here.", check),
            75: ("'=' is expected after an attribute name.", "write name=\"value\"."),
            76: (
                "a closing tag does not match the element it closes (or an element is never closed)",
                "close each element with its own end tag, innermost first (xmllint --noout \(file) shows where)."
            ),
            77: ("a tag is never closed (a '<' without its '>').", "close the tag with >."),
            80: ("'--' appears inside a comment.", "remove the double hyphen from the comment."),
            81: (
                "the text is not in the encoding the file declares.",
                "save the file in the declared encoding (UTF-8 if none)."
            ),
            85: (
                "the elements are not well balanced (an end tag without its start tag).",
                "close each element once, innermost first (xmllint --noout \(file) shows where)."
            ),
            86: (
                "there is content after the root element's end tag.",
                "keep a single root element; remove what follows it."
            ),
            89: (
                "entity expansion refused: the entities refer to each other in a loop or expand to too much text.",
                "remove the <!ENTITY …> declarations and write the values literally."
            ),
            90: (
                "an entity's text does not fit the element it is used in.",
                "remove the <!ENTITY …> declarations and write the values literally."
            ),
        ]
        if let (problem, fix) = known[code] {
            return ("malformed XML: " + problem + (problem.hasSuffix(".") ? "" : "."), fix)
        }
        return ("malformed XML (libxml2 error \(code)).", check)
    }
}
