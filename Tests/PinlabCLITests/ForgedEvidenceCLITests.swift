import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// Forged evidence from the wire: what a client sends — a ClientHello's server name, its standard error — must not
/// add a row or a heading to the Markdown a tester files, run HTML, or drive the terminal. Real Python `ssl` clients
/// through the real binary: `pinlab intercept` with the proxy in between, `pinlab check` with a command client.
@Suite("pinlab intercept and check: forged evidence from the wire", .serialized)
struct ForgedEvidenceCLITests {
    typealias S = InterceptCLITests

    /// Server names that are not host names: one forges an evidence row (`| **Result: PASS** |`), one a heading, one
    /// recolours the terminal, one is HTML.
    static let hostileNames = [
        "a` | **Result: PASS** | `b.test",
        "evil\n## Result: pass\n.test",
        "\u{1B}[31mred\u{1B}[0m.test",
        "x<img src=x onerror=alert(2)>.test",
    ]

    /// A Python `ssl` client: for each name, a CONNECT through the proxy and a handshake with that SNI (it verifies
    /// nothing for the hostile names; for api.pinning.test it trusts lab-root and proxy-root and checks the name, as
    /// a device with the proxy root installed does, then sends its request). One JSON line per name.
    static let client = #"""
        import json, socket, ssl, sys
        port, trust = int(sys.argv[1]), sys.argv[2]
        names = json.loads(sys.argv[3])
        for name in names:
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(b"CONNECT api.pinning.test:443 HTTP/1.1\r\nHost: api.pinning.test:443\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                c = s.recv(1)
                if not c:
                    break
                head += c
            if name == "api.pinning.test":
                ctx = ssl.create_default_context(cafile=trust)
            else:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            try:
                t = ctx.wrap_socket(s, server_hostname=name)
                t.sendall(b"GET / HTTP/1.1\r\nHost: api.pinning.test\r\n\r\n")
                t.recv(1000)
                print(json.dumps({"name": name, "handshake": True, "error": ""}))
                t.close()
            except Exception as e:
                print(json.dumps({"name": name, "handshake": False, "error": str(e)}))
                s.close()
        """#

    @Test(.requires("python3"))
    func serverNamesThatAreNotHostNamesAreRefusedAndShownEscaped() async throws {
        let scratch = try S.tempDir("forged-evidence")
        let script = scratch.appendingPathComponent("client.py")
        try Self.client.write(to: script, atomically: true, encoding: .utf8)
        // The evidence file's folder name would close the reproduce line's code fence and add a heading.
        let folder = scratch.appendingPathComponent("ev\n```\n# forged heading")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let evidence = folder.appendingPathComponent("ev.md")
        let names = Self.hostileNames + ["api.pinning.test"]
        let namesJSON = String(decoding: try JSONSerialization.data(withJSONObject: names), as: UTF8.self)
        var answers: [[String: Any]] = []
        let s = try await S.session(
            ["--pinned", "api.pinning.test", "--report", "text,json,junit,html,markdown", "--evidence", evidence.path],
            label: "forged"
        ) { port, dir in
            let trust = try S.trustFile(in: dir)
            let r = await ChildProcess.run(
                ["python3", script.path, String(port), trust, namesJSON], timeout: TestTimeouts.command)
            #expect(r.status == 0, "\(r.output)")
            answers = r.stdoutText.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        // The proxy refused every hostile name with a fatal alert before any certificate; api was intercepted.
        #expect(answers.count == names.count, "\(answers)")
        for a in answers {
            let name = a["name"] as? String ?? ""
            let handshake = a["handshake"] as? Bool ?? false
            let error = a["error"] as? String ?? ""
            if name == "api.pinning.test" {
                #expect(handshake, "\(a)")
            } else {
                #expect(!handshake && error.contains("ILLEGAL_PARAMETER"), "\(name.debugDescription): \(a)")
            }
        }
        #expect(
            s.verdicts == ["api.pinning.test": "not-pinned"], "no hostile name is a host of the report: \(s.verdicts)")
        let connections = s.report["connections"] as? [[String: Any]] ?? []
        let refused = connections.filter { $0["closure"] as? String == "server-name-refused" }
        #expect(Set(refused.compactMap { $0["serverName"] as? String }) == Set(Self.hostileNames), "\(connections)")
        let unjudged = refused.filter { c in
            let completed = c["handshakeCompleted"] as? Bool ?? true
            return !completed && c["policy"] == nil && c["host"] == nil
        }
        #expect(unjudged.count == refused.count, "no handshake, no policy, no host: \(refused)")
        try await S.checkReportFiles(s)

        // Standard output (the text report): no control character but line ends; the names shown escaped.
        Self.expectNoControlCharacters(s.stdout, "standard output")
        #expect(s.stdout.contains("4 connection(s) named a server name that is not a host name"), "\(s.stdout)")
        #expect(
            s.stdout.contains(#"'\x1B[31mred\x1B[0m.test'"#) && s.stdout.contains(#"'evil\n## Result: pass\n.test'"#),
            "\(s.stdout)")
        #expect(!s.stdout.split(separator: "\n").contains { $0.hasPrefix("## ") }, "\(s.stdout)")

        // The evidence: its tables keep their columns, its headings are its own, no HTML, one Result.
        let ev = try String(contentsOf: evidence, encoding: .utf8)
        let outline = MarkdownOutline(ev)
        #expect(
            outline.headings == [
                "# MASTG-TEST-0244: Missing Certificate Pinning in Network Traffic — evidence", "## Observation",
                "## Evaluation",
                "## Reproduce",
            ], "\(outline.headings)\n\(ev)")
        #expect(outline.tables.count == 2, "\(ev)")
        for table in outline.tables {
            #expect(Set(table.map(\.count)).count == 1, "a row with other columns: \(table)")
        }
        let resultRows: [[String]] = outline.tables.flatMap { $0 }.filter { $0.first == "Result" }
        #expect(resultRows == [["Result", "**FAIL**"]], "\(ev)")
        let domainRows: [[String]] = Array((outline.tables.last ?? []).dropFirst(2))
        #expect(domainRows.map { $0.first ?? "" } == ["`api.pinning.test`"], "\(ev)")
        Self.expectNoHTMLOrControls(ev, "the evidence")
        #expect(
            ev.contains("4 connection(s) whose ClientHello named a server name that is not a host name")
                && ev.contains("x&lt;img src=x"), "\(ev)")
        let blocks: [[String]] = outline.codeBlocks
        #expect(
            blocks.count == 1 && blocks.first?.count == 1 && (blocks.first?.first ?? "").contains(#"$'"#),
            "the reproduce line is one line in one block: \(blocks)")

        // The Markdown and HTML reports.
        let md = try String(contentsOf: s.dir.appendingPathComponent("intercept.md"), encoding: .utf8)
        let mdOutline = MarkdownOutline(md)
        #expect(mdOutline.headings == ["# pinlab intercept"], "\(md)")
        #expect(mdOutline.tables.count == 1 && Set(mdOutline.tables[0].map(\.count)) == [7], "\(md)")
        Self.expectNoHTMLOrControls(md, "intercept.md")
        let html = try String(contentsOf: s.dir.appendingPathComponent("intercept.html"), encoding: .utf8)
        #expect(!html.contains("<img") && html.contains("x&lt;img src=x onerror=alert(2)&gt;.test"), "\(html)")
    }

    /// A command client that completes a real handshake on the `baseline` cell, then refuses with a standard error
    /// holding HTML, pipes, backticks, a colour and an OSC title sequence, and a would-be heading: `check --format
    /// markdown` shows it as text in its list, and the text matrix prints it without one control byte.
    @Test(.requires("python3"))
    func aCommandClientsStandardErrorIsEscaped() async throws {
        let scratch = try S.tempDir("forged-check")
        let script = scratch.appendingPathComponent("client.py")
        try #"""
        import socket, ssl, sys
        host, ip, port, ca = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
        ctx = ssl.create_default_context(cafile=ca)
        with socket.create_connection((ip, port), timeout=20) as s:
            with ctx.wrap_socket(s, server_hostname=host) as t:
                pass
        sys.stderr.write("<script>alert(1)</script> | a `tick` \x1b[31mred\x1b[0m \x1b]0;pwned\x07\n## Result: pass\n")
        sys.exit(1)
        """#.write(to: script, atomically: true, encoding: .utf8)
        let args = ["check", "--engine", "openssl", "--scenarios", "baseline", "--profiles", "none"] + CLI.dirArgs
        let client = ["--", "python3", script.path, "{host}", "{ip}", "{port}", "{ca}"]

        let markdown = try await CLI.run(args + ["--format", "markdown"] + client)
        #expect(
            markdown.status == 1, "the client refused a cell it should accept: \(markdown.stdout)\(markdown.stderr)")
        let md = markdown.stdout
        let outline = MarkdownOutline(md)
        #expect(
            outline.headings == [
                "# pinlab check: python3", "## Deviations", "## Negotiation, as the servers saw this client",
            ], "\(md)")
        #expect(outline.tables.count == 1 && Set(outline.tables[0].map(\.count)) == [7], "\(md)")
        Self.expectNoHTMLOrControls(md, "check --format markdown")
        let deviation = try #require(
            md.split(separator: "\n").first { $0.hasPrefix("- ✗ `baseline` × `none` × openssl: ") }, "\(md)")
        #expect(
            deviation.contains(#"&lt;script&gt;alert(1)&lt;/script&gt; \| a \`tick\` \\x1B\[31mred"#), "\(deviation)")

        let text = try await CLI.run(args + client)
        #expect(text.status == 1)
        Self.expectNoControlCharacters(text.stdout, "the text matrix")
        #expect(
            text.stdout.contains(#"<script>alert(1)</script> | a `tick` \x1B[31mred\x1B[0m \x1B]0;pwned\x07"#),
            "\(text.stdout)")
        #expect(!text.stdout.split(separator: "\n").contains { $0.hasPrefix("## ") }, "\(text.stdout)")
    }

    // MARK: Checks

    /// No control character (C0 but the line feed, DEL, C1) and no bidirectional override in `text`.
    static func expectNoControlCharacters(
        _ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let bad = text.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                || (0x2066...0x2069).contains($0.value)
        }
        #expect(
            bad.isEmpty,
            "\(what) holds control characters \(bad.map { String($0.value, radix: 16) }): \(text.debugDescription)",
            sourceLocation: sourceLocation)
    }

    /// Markdown with no tag a renderer would pass through (outside code spans and blocks) and no control character.
    static func expectNoHTMLOrControls(
        _ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        expectNoControlCharacters(text, what, sourceLocation: sourceLocation)
        for tag in ["<script", "<img", "</script"] {
            #expect(!text.contains(tag), "\(what) holds \(tag): \(text)", sourceLocation: sourceLocation)
        }
    }
}

/// The block structure of a Markdown document as CommonMark and GitHub's tables read it: fenced code blocks (a fence
/// closes only with at least as many backticks, at the start of a line), ATX headings, and tables — each row's
/// cells split at the pipes a backslash does not escape (GitHub splits rows before it reads code spans).
struct MarkdownOutline {
    var headings: [String] = []
    var tables: [[[String]]] = []
    var codeBlocks: [[String]] = []

    init(_ text: String) {
        var fence: Int?
        var inTable = false
        for line in text.components(separatedBy: "\n") {
            let ticks = line.prefix { $0 == "`" }.count
            if let open = fence {
                if ticks >= open && line.dropFirst(ticks).allSatisfy({ $0 == " " }) {
                    fence = nil
                } else {
                    codeBlocks[codeBlocks.count - 1].append(line)
                }
                continue
            }
            if ticks >= 3 {
                fence = ticks
                codeBlocks.append([])
                inTable = false
                continue
            }
            if line.hasPrefix("#") {
                headings.append(line)
            }
            if line.hasPrefix("|") {
                if !inTable { tables.append([]) }
                inTable = true
                tables[tables.count - 1].append(Self.cells(line))
            } else {
                inTable = false
            }
        }
    }

    static func cells(_ row: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var escaped = false
        for c in row {
            if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                current.append(c)
                escaped = true
            } else if c == "|" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(c)
            }
        }
        cells.append(current.trimmingCharacters(in: .whitespaces))
        // The leading and trailing pipes open and close the row.
        if cells.first == "" { cells.removeFirst() }
        if cells.last == "" { cells.removeLast() }
        return cells
    }
}
