/// The shell every HTML page of PinningLab shares (the check report, a lab's report, the interception report, the
/// report site, the timeline): one document head, one base style that a page's own rules follow, one foot.
package enum HTMLPage {
    /// Type, headings, code and the ok/bad colours every page starts from.
    package static let baseStyle = """
        body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#1d2330;background:#fbfbfd}
        h1{font-size:22px;margin:0 0 4px}
        code,.mono{font-family:"SF Mono",Menlo,"DejaVu Sans Mono",monospace;font-size:12px}
        .ok{background:#e3f6e8;color:#14532d} .bad{background:#fde8e8;color:#7f1d1d}

        """

    /// Everything up to and including `<body>`: the escaped `title`, then the base style and `style` (the page's own
    /// rules, which win over the base), or with `stylesheet` a link to a shared style sheet instead.
    package static func head(title: String, style: String = "", stylesheet: String? = nil) -> String {
        var h = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(xml(title))</title>

            """
        if let stylesheet {
            h += "<link rel=\"stylesheet\" href=\"\(xml(stylesheet))\">\n"
        } else {
            h += "<style>\n" + baseStyle + style + (style.hasSuffix("\n") || style.isEmpty ? "" : "\n") + "</style>"
        }
        return h + "</head><body>\n"
    }

    /// The end of every page.
    package static let foot = "</body></html>\n"
}
