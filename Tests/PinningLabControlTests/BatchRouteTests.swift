import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// `POST /batch` and `DELETE /batch/{id}` driven with curl: the batch document of a selection of cells, one server per
/// cell registered under the batch, the Python batch harness of Examples/Batch judging the document, each cell's
/// server's observations read back through the API, and the servers stopped.
@Suite("Control API batch document", .serialized)
struct BatchRouteTests {
    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/Batch/python/pinlab_batch.py").path

    @Test(.requires("curl", "python3"))
    func batchOfASelectionIsStartedJudgedObservedAndStopped() async throws {
        try await ControlTestLab.withControl { control, _ in
            let base = control.url
            let r = try await Curl.request(
                "POST", base + "batch",
                json: #"""
                    {"scenarios": ["baseline", "rekey"], "profiles": ["none", "leaf-spki"], "engines": ["openssl", "gnutls"],
                     "cellTimeoutSeconds": 5}
                    """#)
            #expect(r.status == 201, "\(r.text)")
            let body = try r.json()
            let batch = try #require(body["batch"] as? String)
            #expect(batch.hasPrefix("batch-"))
            let document = try #require(body["document"] as? [String: Any])
            #expect(document["format"] as? String == "pinlab-batch")
            #expect(document["cellTimeoutSeconds"] as? Double == 5)
            let cells = try #require(document["cells"] as? [[String: Any]])
            let ids = cells.compactMap { $0["id"] as? String }
            #expect(
                ids == [
                    "baseline/none/openssl", "baseline/leaf-spki/openssl", "baseline/none/gnutls",
                    "baseline/leaf-spki/gnutls",
                    "rekey/none/openssl", "rekey/leaf-spki/openssl", "rekey/none/gnutls", "rekey/leaf-spki/gnutls",
                ])
            #expect(Set(cells.compactMap { $0["port"] as? Int }).count == 8, "a port of its own per cell")
            let servers = try #require(body["servers"] as? [[String: Any]])
            #expect(servers.compactMap { $0["cell"] as? String } == ids)
            #expect((body["unsupported"] as? [Any])?.isEmpty == true)
            let serverOf = Dictionary(
                uniqueKeysWithValues: servers.compactMap { s in
                    (s["cell"] as? String).flatMap { c in (s["server"] as? String).map { (c, $0) } }
                })

            // Registered like any server: listed with their batch and cell.
            let listed = try #require(try await Curl.get(base + "servers").json()["servers"] as? [[String: Any]])
            #expect(listed.filter { $0["batch"] as? String == batch }.count == 8)
            let one = try await Curl.get(base + "servers/\(try #require(serverOf["rekey/leaf-spki/gnutls"]))").json()
            #expect(one["cell"] as? String == "rekey/leaf-spki/gnutls")
            #expect(one["scenario"] as? String == "rekey" && one["engine"] as? String == "gnutls")

            // The Python harness judges the document as `pinlab check --batch` would hand it over.
            let docFile = TestScratch.root.appendingPathComponent("control-batch-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: docFile) }
            try JSONSerialization.data(withJSONObject: document).write(to: docFile)
            var env = ProcessInfo.processInfo.environment
            env["PINLAB_BATCH"] = docFile.path
            let harness = await ChildProcess.run(
                ["python3", Self.python], environment: env, timeout: TestTimeouts.command)
            #expect(harness.status == 0, "\(harness.stderrText)")
            var claims: [String: String] = [:]
            for line in harness.stdoutText.split(separator: "\n") {
                let a = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                claims[a["id"] as? String ?? ""] = a["claim"] as? String
            }
            #expect(claims.count == 8, "\(harness.stdoutText)")
            for id in ids {
                // rekey under leaf-spki: the client pins K1 and the server now presents K3.
                let refuses = id.hasPrefix("rekey/leaf-spki/")
                #expect(claims[id] == (refuses ? "refused" : "accepted"), "\(id): \(claims[id] ?? "no answer")")
                // The server of that cell, and only it, saw the cell's connection.
                let seen = try await Curl.get(base + "servers/\(try #require(serverOf[id]))/observations?wait=5").json()
                let observations = try #require(seen["observations"] as? [[String: Any]])
                #expect(observations.count == 1, "\(id): \(observations.count) connections")
                #expect(observations.first?["applicationDataReceived"] as? Bool == !refuses, "\(id)")
            }

            // One server stopped on its own, then the rest with the batch.
            let ports = cells.compactMap { $0["port"] as? Int }
            let listening = ports.map { ListeningSockets.inodes(port: $0) }
            #expect(listening.allSatisfy { !$0.isEmpty }, "every cell's server listens before DELETE")
            let single = try #require(serverOf["baseline/none/openssl"])
            #expect(try await Curl.request("DELETE", base + "servers/\(single)").status == 200)
            let stopped = try await Curl.request("DELETE", base + "batch/\(batch)")
            #expect(stopped.status == 200, "\(stopped.text)")
            #expect((try stopped.json()["servers"] as? [Any])?.count == 7)
            let after = try #require(try await Curl.get(base + "servers").json()["servers"] as? [[String: Any]])
            #expect(!after.contains { $0["batch"] as? String == batch })
            let again = try await Curl.request("DELETE", base + "batch/\(batch)")
            #expect(again.status == 404)
            #expect(try again.json()["field"] as? String == "id")
            // Every stopped cell's listening socket is gone (by inode: a freed port may already be another suite's
            // server), and a port nothing listens on refuses curl.
            for (port, inodes) in zip(ports, listening) {
                await ControlTestLab.expectClosed(port: port, listening: inodes)
            }
        }
    }

    /// Malformed bodies get a 4xx JSON error naming the field; a batch over the limit starts nothing (409).
    @Test(.requires("curl"))
    func malformedBatchRequestsGetA4xxNamingTheField() async throws {
        try await ControlTestLab.withControl { control, _ in
            let base = control.url
            func expectError(
                _ json: String?, status: Int, field: String?, sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let r = try await Curl.request("POST", base + "batch", json: json)
                #expect(r.status == status, "\(json ?? "no body"): \(r.text)", sourceLocation: sourceLocation)
                #expect(r.contentType.hasPrefix("application/json"), sourceLocation: sourceLocation)
                let body = try r.json(sourceLocation: sourceLocation)
                #expect(body["status"] as? Int == status, sourceLocation: sourceLocation)
                #expect(body["field"] as? String == field, "\(body)", sourceLocation: sourceLocation)
                #expect((body["error"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
            }
            try await expectError(nil, status: 400, field: "body")
            try await expectError("{", status: 400, field: "body")
            try await expectError(#"["baseline"]"#, status: 400, field: "body")
            try await expectError(#"{"scenario": ["baseline"]}"#, status: 400, field: "scenario")
            try await expectError(#"{"scenarios": "baseline"}"#, status: 400, field: "scenarios")
            try await expectError(#"{"scenarios": []}"#, status: 400, field: "scenarios")
            try await expectError(#"{"scenarios": ["baseline", 3]}"#, status: 400, field: "scenarios")
            try await expectError(#"{"scenarios": ["baseline", "baseline"]}"#, status: 400, field: "scenarios")
            try await expectError(#"{"scenarios": ["no-such"]}"#, status: 404, field: "scenarios")
            try await expectError(
                #"{"scenarios": ["baseline"], "profiles": ["leaf-everything"]}"#, status: 400, field: "profiles")
            try await expectError(#"{"scenarios": ["baseline"], "profiles": null}"#, status: 400, field: "profiles")
            try await expectError(
                #"{"scenarios": ["baseline"], "engines": ["boringssl"]}"#, status: 404, field: "engines")
            try await expectError(
                #"{"scenarios": ["baseline"], "cellTimeoutSeconds": "10"}"#, status: 400, field: "cellTimeoutSeconds")
            try await expectError(
                #"{"scenarios": ["baseline"], "cellTimeoutSeconds": 0}"#, status: 400, field: "cellTimeoutSeconds")
            try await expectError(
                #"{"scenarios": ["baseline"], "cellTimeoutSeconds": 1e9}"#, status: 400, field: "cellTimeoutSeconds")
            try await expectError(
                #"{"scenarios": ["baseline"], "cellTimeoutSeconds": true}"#, status: 400, field: "cellTimeoutSeconds")
            // The whole catalogue is more than the default 32 servers: 409, and nothing started.
            try await expectError("{}", status: 409, field: nil)
            #expect((try await Curl.get(base + "servers").json()["servers"] as? [Any])?.isEmpty == true)
            let del = try await Curl.request("DELETE", base + "batch/no-such")
            #expect(del.status == 404)
            #expect(try del.json()["field"] as? String == "id")
        }
    }

    /// With a larger limit the whole catalogue on both engines is one batch: every cell has a server or is listed as
    /// unsupported, and stopping the control API stops them all.
    @Test(.requires("curl"))
    func wholeCatalogueBatchThroughTheHandler() async throws {
        var o = ControlServer.Options()
        o.maxServers = 2000  // a server per cell, and per party of the scenarios of several connections
        try await ControlTestLab.withControl(o) { control, _ in
            let r = try await Curl.request("POST", control.url + "batch", json: "{}")
            #expect(r.status == 201, "\(r.text.prefix(500))")
            let body = try r.json()
            let cells = try #require((body["document"] as? [String: Any])?["cells"] as? [[String: Any]])
            let unsupported = try #require(body["unsupported"] as? [[String: Any]])
            let catalogue = try Catalogue.bundled()
            #expect(cells.count + unsupported.count == catalogue.scenarios.count * PinProfile.all.count * 2)
            #expect(Set(cells.compactMap { $0["port"] as? Int }).count == cells.count)
            let health = try await Curl.get(control.url + "health").json()
            #expect(health["servers"] as? Int == cells.count)
        }
    }
}
