// The lab's CT logs as clients are told about them: Google's log list v3 (`log_list.json`, read by Chrome's
// component updater, OkHttp's and Android's CT libraries, certificate-transparency-go) and OpenSSL's CT log file
// (`openssl s_client -ct -ctlogfile FILE`, `SSL_CTX_set_ctlog_list_file`). Unlisted logs appear in neither.
public import Foundation

public enum CTLogList {
    /// Google's log list v3 JSON: one operator per distinct operator name, each log `usable` since `since`, with a
    /// temporal interval covering every lab certificate (a year either side of `since`).
    public static func googleV3JSON(_ logs: [CTLog], since: Date) -> String {
        let listed = logs.filter(\.listed)
        let stamp = iso8601(since)
        var operators: [String] = []
        var order: [String] = []
        for l in listed where !order.contains(l.operatorName) { order.append(l.operatorName) }
        for op in order {
            let entries = listed.filter { $0.operatorName == op }.map { l in
                """
                        {
                          "description": \(json(l.summary ?? "PinningLab lab CT log \(l.name)")),
                          "log_id": \(json(l.logIDBase64)),
                          "key": \(json(l.keyBase64)),
                          "url": \(json(l.url)),
                          "mmd": \(l.mmd),
                          "state": { "usable": { "timestamp": \(json(stamp)) } },
                          "temporal_interval": {
                            "start_inclusive": \(json(iso8601(since.addingTimeInterval(-366 * 86400)))),
                            "end_exclusive": \(json(iso8601(since.addingTimeInterval(366 * 86400))))
                          }
                        }
                """
            }
            operators.append(
                """
                    {
                      "name": \(json(op)),
                      "email": ["ct@pinning.test"],
                      "logs": [
                \(entries.joined(separator: ",\n"))
                      ],
                      "tiled_logs": []
                    }
                """)
        }
        return """
            {
              "version": "1.0",
              "log_list_timestamp": \(json(stamp)),
              "operators": [
            \(operators.joined(separator: ",\n"))
              ]
            }

            """
    }

    /// OpenSSL's CT log file (CTLOG_STORE_load_file): `enabled_logs` names a section per log with `description`
    /// and `key` (base64 DER SubjectPublicKeyInfo).
    public static func openSSLConf(_ logs: [CTLog]) -> String {
        let listed = logs.filter(\.listed)
        var out = "# The lab's CT logs for `openssl s_client -ct -ctlogfile THIS_FILE` (written by PinningLab).\n"
        out += "enabled_logs = \(listed.map(\.name).joined(separator: ","))\n"
        for l in listed {
            // One line per value: OpenSSL's config reader ends a value at the newline.
            let description = (l.summary ?? "PinningLab lab CT log \(l.name)")
                .filter { $0 != "\n" && $0 != "$" && $0 != "#" }
            out += "\n[\(l.name)]\ndescription = \(description)\nkey = \(l.keyBase64)\n"
        }
        return out
    }

    static func iso8601(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    static func json(_ s: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data = try? encoder.encode(s)
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

extension Builder {
    /// Writes `ct/log_list.json` and `ct/ctlogs.cnf` when they do not hold the current logs.
    func writeCTLogLists(_ logs: [CTLog], since: Date) throws {
        let folder = dir.appendingPathComponent("ct", isDirectory: true)
        try Storage.makeDirectory(folder, mode: 0o755)
        for (file, text) in [
            ("log_list.json", CTLogList.googleV3JSON(logs, since: since)),
            ("ctlogs.cnf", CTLogList.openSSLConf(logs)),
        ] {
            let url = folder.appendingPathComponent(file)
            if (try? Storage.readFile(url)).flatMap({ $0 }) == Array(text.utf8) { continue }
            try Storage.writeAtomically(text, to: url, mode: 0o644)
        }
    }
}
