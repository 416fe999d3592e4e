import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// The control API driven with a real HTTP client (curl), serving real TLS servers that real TLS clients (curl,
/// openssl s_client) connect to.
@Suite("Control API", .serialized)
struct ControlAPITests {
    /// The issue's proof: start `rekey` on GnuTLS, connect, read the observation, rotate to `leaf-v1`, see the
    /// new chain on the wire, stop.
    @Test(.requires("curl", "openssl"))
    func startConnectObserveRotateStopWithCurl() async throws {
        try await ControlTestLab.withControl { control, pki in
            let base = control.url
            let health = try await Curl.get(base + "health")
            #expect(health.status == 200)
            #expect(try health.json()["status"] as? String == "ok")

            // Start rekey on GnuTLS.
            let started = try await Curl.request(
                "POST", base + "servers", json: #"{"scenario": "rekey", "engine": "gnutls"}"#)
            #expect(started.status == 201, "\(started.text)")
            let server = try started.json()
            let id = try #require(server["id"] as? String)
            #expect(id.hasPrefix("rekey-gnutls-"))
            #expect(server["engine"] as? String == "gnutls")
            #expect(server["host"] as? String == "localhost")
            #expect(server["ip"] as? String == "127.0.0.1")
            let port = try #require(server["port"] as? Int)
            let url = try #require(server["url"] as? String)
            #expect(url == "https://localhost:\(port)/")
            let trustFile = try #require(server["trustFile"] as? String)
            let chain = try #require(server["chain"] as? [[String: Any]])
            #expect(chain.compactMap { $0["name"] as? String } == ["leaf-v3-rekey", "lab-intermediate-a"])
            #expect((server["expect"] as? [String: String])?["leaf-spki"] == "refuse")
            #expect((server["expect"] as? [String: String])?["leaf-spki+backup"] == "accept")

            // Connect: curl trusting the lab root accepts; curl pinned to K1 (leaf-v1) refuses.
            let leafV1Pin = try pki.identity("leaf-v1").pins.spkiBase64
            let accepting = await ChildProcess.run(
                ["curl", "-s", "-o", "/dev/null", "--cacert", trustFile, url], timeout: .seconds(30))
            #expect(accepting.status == 0, "\(accepting.stderrText)")
            let pinned = await ChildProcess.run(
                [
                    "curl", "-s", "-o", "/dev/null", "--cacert", trustFile, "--pinnedpubkey",
                    PinFormat.curlPin(leafV1Pin), url,
                ],
                timeout: .seconds(30))
            #expect(pinned.status == 90, "curl pinned to K1 refuses the re-keyed leaf (exit 90): \(pinned.stderrText)")

            // Read the observations.
            let seen = try await Curl.get(base + "servers/\(id)/observations?wait=5").json()
            let observations = try #require(seen["observations"] as? [[String: Any]])
            try #require(observations.count == 2, "\(seen)")
            #expect(observations[0]["applicationDataReceived"] as? Bool == true)
            #expect(observations[0]["requestLine"] as? String == "GET / HTTP/1.1")
            #expect(observations[0]["serverName"] as? String == "localhost")
            #expect(observations[0]["generation"] as? Int == 0)
            #expect(observations[0]["tlsVersion"] as? String != nil)
            #expect(observations[1]["applicationDataReceived"] as? Bool == false, "the pinned client sent nothing")
            #expect(
                (observations[0]["serverChain"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
                    == ["leaf-v3-rekey", "lab-intermediate-a"])
            let after = try await Curl.get(base + "servers/\(id)/observations?after=1").json()
            #expect((after["observations"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [2])

            // Rotate to leaf-v1.
            let rotated = try await Curl.request(
                "POST", base + "servers/\(id)/rotate", json: #"{"identity": "leaf-v1"}"#)
            #expect(rotated.status == 200, "\(rotated.text)")
            let r = try rotated.json()
            #expect(r["generation"] as? Int == 1)
            let newChain = try #require(r["chain"] as? [[String: Any]])
            #expect(newChain.compactMap { $0["name"] as? String } == ["leaf-v1", "lab-intermediate-a"])
            #expect(newChain.first?["spkiSHA256"] as? String == leafV1Pin)

            // The new chain on the wire: openssl s_client's leaf is leaf-v1, byte for byte, and its SPKI pin,
            // computed by openssl, is the PKI's.
            let wire = await ChildProcess.run(
                ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-showcerts"],
                input: Array("Q\n".utf8), timeout: .seconds(30))
            let sent = PEM.decodeAll(wire.stdoutText)
            #expect(
                sent == [
                    try pki.identity("leaf-v1").certificateDER, try pki.identity("lab-intermediate-a").certificateDER,
                ],
                "s_client saw \(sent.count) certificates: \(wire.stderrText)")
            let leafPEM = TestScratch.root.appendingPathComponent("control-wire-\(UUID().uuidString).pem")
            defer { try? FileManager.default.removeItem(at: leafPEM) }
            try PEM.encode(try #require(sent.first)).write(to: leafPEM, atomically: true, encoding: .utf8)
            let spki = await ChildProcess.run(
                [
                    "sh", "-c",
                    "openssl x509 -pubkey -noout -in \"$1\" | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
                    "sh", leafPEM.path,
                ],
                timeout: .seconds(30))
            #expect(spki.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == leafV1Pin)

            // The client pinned to K1 is now accepted, by a connection of generation 1.
            let nowAccepted = await ChildProcess.run(
                [
                    "curl", "-s", "-o", "/dev/null", "--cacert", trustFile, "--pinnedpubkey",
                    PinFormat.curlPin(leafV1Pin), url,
                ],
                timeout: .seconds(30))
            #expect(nowAccepted.status == 0, "\(nowAccepted.stderrText)")
            let later = try await Curl.get(base + "servers/\(id)/observations?after=3&wait=5").json()
            let last = try #require((later["observations"] as? [[String: Any]])?.last)
            #expect(last["generation"] as? Int == 1)
            #expect(last["applicationDataReceived"] as? Bool == true)
            // GnuTLS records the Certificate message it sent: the observation names the chain on the wire.
            let wireNames = (last["serverChain"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            #expect(wireNames == ["leaf-v1", "lab-intermediate-a"], "captured: \(String(describing: wireNames))")

            // Stop: the server is gone from the API and from the port.
            let listening = ListeningSockets.inodes(port: port)
            #expect(!listening.isEmpty, "the server listens on \(port) before DELETE")
            let stopped = try await Curl.request("DELETE", base + "servers/\(id)")
            #expect(stopped.status == 200)
            let gone = try await Curl.get(base + "servers/\(id)")
            #expect(gone.status == 404)
            #expect(try gone.json()["field"] as? String == "id")
            await ControlTestLab.expectClosed(port: port, listening: listening)
            #expect(try await Curl.get(base + "servers").json()["servers"] as? [Any] != nil)
        }
    }

    /// Malformed requests get a 4xx with a JSON error that names the field; unknown things get 404.
    @Test(.requires("curl"))
    func badRequestsGetA4xxNamingTheField() async throws {
        try await ControlTestLab.withControl { control, _ in
            let base = control.url
            func expectError(
                _ method: String, _ path: String, json: String? = nil, status: Int, field: String?,
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let r = try await Curl.request(method, base + path, json: json)
                #expect(r.status == status, "\(method) /\(path): \(r.text)", sourceLocation: sourceLocation)
                #expect(r.contentType.hasPrefix("application/json"), sourceLocation: sourceLocation)
                let body = try r.json(sourceLocation: sourceLocation)
                #expect(body["status"] as? Int == status, sourceLocation: sourceLocation)
                #expect(body["field"] as? String == field, "\(body)", sourceLocation: sourceLocation)
                #expect(
                    body["field"] != nil, "`field` is always present, null when no single field is: \(body)",
                    sourceLocation: sourceLocation)
                #expect((body["error"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
            }
            try await expectError("POST", "servers", json: "{", status: 400, field: "body")
            try await expectError("POST", "servers", json: "[1]", status: 400, field: "body")
            try await expectError("POST", "servers", status: 400, field: "body")
            try await expectError("POST", "servers", json: #"{"scenario": "rekey"}"#, status: 400, field: "engine")
            try await expectError(
                "POST", "servers", json: #"{"scenario": 7, "engine": "gnutls"}"#, status: 400, field: "scenario")
            try await expectError(
                "POST", "servers", json: #"{"scenario": "rekey", "engine": "gnutls", "port": 1}"#, status: 400,
                field: "port")
            try await expectError(
                "POST", "servers", json: #"{"scenario": "no-such", "engine": "gnutls"}"#, status: 404, field: "scenario"
            )
            try await expectError("POST", "servers", json: #"{"scenario": "no-such"}"#, status: 404, field: "scenario")
            try await expectError(
                "POST", "servers", json: #"{"scenario": "rekey", "engine": "boringssl"}"#, status: 404, field: "engine")
            try await expectError("GET", "servers/no-such-server", status: 404, field: "id")
            try await expectError("DELETE", "servers/no-such-server", status: 404, field: "id")
            try await expectError("GET", "servers/no-such-server/observations", status: 404, field: "id")
            try await expectError(
                "POST", "servers/no-such-server/rotate", json: #"{"identity": "leaf-v1"}"#, status: 404, field: "id")
            try await expectError("GET", "scenarios/no-such", status: 404, field: "id")
            try await expectError("GET", "scenarios/rekey/pins", status: 400, field: "profile")
            try await expectError("GET", "scenarios/rekey/pins?profile=leaf-everything", status: 400, field: "profile")
            try await expectError(
                "GET", "scenarios/rekey/pins?profile=leaf-spki&format=xml", status: 400, field: "format")
            try await expectError(
                "GET", "scenarios/rekey/pins?profile=leaf-cert&format=okhttp", status: 400, field: "format")
            try await expectError("GET", "identities/no-such", status: 404, field: "name")
            try await expectError("GET", "identities/lab-root?format=key", status: 400, field: "format")
            try await expectError("GET", "identities/leaf-v1?format=pem&password=x", status: 400, field: "password")
            try await expectError("GET", "pins?names=leaf-v1,,lab-root", status: 400, field: "names")
            try await expectError("GET", "pins?names=leaf-v1,no-such", status: 404, field: "names")
            try await expectError("GET", "trust/no-such-root", status: 404, field: "profile")
            try await expectError("GET", "trust/lab-root+proxy-root?format=der", status: 400, field: "format")
            try await expectError("PATCH", "servers", status: 405, field: nil)
            try await expectError("GET", "no/such/route", status: 404, field: nil)

            // Against a running server: bad observation queries and rotations.
            let started = try await Curl.request(
                "POST", base + "servers", json: #"{"scenario": "baseline", "engine": "openssl"}"#)
            let id = try #require(try started.json()["id"] as? String)
            try await expectError("GET", "servers/\(id)/observations?after=-1", status: 400, field: "after")
            try await expectError("GET", "servers/\(id)/observations?wait=60", status: 400, field: "wait")
            try await expectError("POST", "servers/\(id)/rotate", json: "{}", status: 400, field: "identity")
            try await expectError(
                "POST", "servers/\(id)/rotate", json: #"{"identity": "no-such"}"#, status: 404, field: "identity")
            try await expectError("POST", "servers/\(id)/rotate", json: #"{"chain": []}"#, status: 400, field: "chain")
            try await expectError(
                "POST", "servers/\(id)/rotate", json: #"{"chain": ["leaf-v1", 3]}"#, status: 400, field: "chain")
            try await expectError(
                "POST", "servers/\(id)/rotate", json: #"{"identity": "leaf-v1", "chain": ["lab-intermediate-a"]}"#,
                status: 400, field: "chain")
            let unchanged = try await Curl.get(base + "servers/\(id)").json()
            #expect(unchanged["generation"] as? Int == 0, "failed rotations change nothing")
        }
    }

    /// Trust anchors, pins and client identities, checked with openssl.
    @Test(.requires("curl", "openssl"))
    func trustAnchorsPinsAndClientIdentities() async throws {
        try await ControlTestLab.withControl { control, pki in
            let base = control.url
            let trust = try await Curl.get(base + "trust/lab-root+proxy-root")
            #expect(trust.status == 200)
            #expect(
                PEM.decodeAll(trust.text) == [
                    try pki.identity("lab-root").certificateDER, try pki.identity("proxy-root").certificateDER,
                ])
            let der = try await Curl.get(base + "trust/lab-root?format=der")
            #expect(der.contentType == "application/pkix-cert")
            #expect(der.body == (try pki.identity("lab-root").certificateDER))

            let curlPins = try await Curl.get(base + "pins?names=leaf-v1,leaf-v3-rekey&format=curl")
            #expect(
                curlPins.text
                    == PinFormat.curl.render([try pki.identity("leaf-v1"), try pki.identity("leaf-v3-rekey")]))
            for format in PinFormat.all {
                let r = try await Curl.get(base + "pins?format=\(format.rawValue)")
                #expect(r.status == 200, "\(format)")
            }
            // `+` is written %2B in a query (a bare `+` is a space in form encoding).
            let profile = try await Curl.get(base + "scenarios/rekey/pins?profile=leaf-spki%2Bbackup").json()
            #expect(profile["expect"] as? String == "accept")
            #expect(
                (profile["pins"] as? [[String: Any]])?.compactMap { $0["identity"] as? String } == [
                    "leaf-v1", "leaf-v3-rekey",
                ])
            let okhttp = try await Curl.get(base + "scenarios/rekey/pins?profile=leaf-spki%2Bbackup&format=okhttp")
            #expect(
                okhttp.text
                    == "sha256/\(try pki.identity("leaf-v1").pins.spkiBase64)\nsha256/\(try pki.identity("leaf-v3-rekey").pins.spkiBase64)\n"
            )
            let certPins = try await Curl.get(base + "scenarios/baseline/pins?profile=leaf-cert").json()
            #expect((certPins["pins"] as? [[String: Any]])?.first?["kind"] as? String == "cert-sha256")
            // A scenario of the post-quantum part on a PKI made without it: 422 naming what is missing, never a 500.
            if pki["leaf-pq-rekey"] == nil {
                let pq = try await Curl.get(base + "scenarios/post-quantum-rekey/pins?profile=leaf-spki%2Bbackup")
                #expect(pq.status == 422, "\(pq.text)")
                #expect(pq.text.contains("leaf-pq-rekey") && pq.text.contains("pinlab pki init --post-quantum"))
            }

            let dir = TestScratch.root.appendingPathComponent("control-ids-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            func save(_ r: CurlReply, _ name: String) throws -> String {
                let f = dir.appendingPathComponent(name)
                try Data(r.body).write(to: f)
                return f.path
            }
            let p12 = try await Curl.get(base + "identities/client-valid?format=p12")
            #expect(p12.contentType == "application/x-pkcs12")
            let p12File = try save(p12, "client.p12")
            let read = await ChildProcess.run(
                ["openssl", "pkcs12", "-in", p12File, "-passin", "pass:\(pki.pkcs12Password)", "-nokeys", "-clcerts"],
                timeout: .seconds(30))
            #expect(read.status == 0, "\(read.stderrText)")
            #expect(PEM.decodeAll(read.stdoutText).first == (try pki.identity("client-valid").certificateDER))
            let own = try await Curl.get(base + "identities/client-valid?format=p12&password=s3cret")
            let ownFile = try save(own, "own.p12")
            #expect(
                await ChildProcess.run(["openssl", "pkcs12", "-in", ownFile, "-passin", "pass:s3cret", "-noout"]).status
                    == 0)
            #expect(
                await ChildProcess.run(["openssl", "pkcs12", "-in", ownFile, "-passin", "pass:wrong", "-noout"]).status
                    != 0)
            let pem = try await Curl.get(base + "identities/client-valid")
            #expect(PEM.decodeAll(pem.text) == [try pki.identity("client-valid").certificateDER])
            let cer = try await Curl.get(base + "identities/client-valid?format=der")
            #expect(cer.body == (try pki.identity("client-valid").certificateDER))
            let key = try await Curl.get(base + "identities/client-valid?format=key")
            let keyFile = try save(key, "client.key")
            #expect(await ChildProcess.run(["openssl", "pkey", "-noout", "-in", keyFile]).status == 0)

            let scenarios = try await Curl.get(base + "scenarios").json()
            let ids = (scenarios["scenarios"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == (try Catalogue.bundled().ids))
            let identities = try await Curl.get(base + "identities").json()
            #expect((identities["identities"] as? [Any])?.count == pki.identities.count)
        }
    }

    /// A scenario of several connections through the API: `POST /servers` starts a server per party and says, per
    /// step, which host to ask for and which port answers. openssl s_client plays the steps of
    /// resumption-after-unpinned-handshake (a session saved from step 1, offered in step 2) and the party's
    /// observations (`?party=`) show the second connection resumed; a party rotates (`"party"` in the rotate body);
    /// `DELETE` stops the parties too.
    @Test(.requires("curl", "openssl"))
    func scenarioOfSeveralConnectionsStartsItsParties() async throws {
        try await ControlTestLab.withControl { control, pki in
            let base = control.url
            let started = try await Curl.request(
                "POST", base + "servers",
                json: #"{"scenario": "resumption-after-unpinned-handshake", "engine": "openssl"}"#)
            #expect(started.status == 201, "\(started.text)")
            let server = try started.json()
            let id = try #require(server["id"] as? String)
            let parties = try #require(server["parties"] as? [[String: Any]], "\(started.text)")
            #expect(parties.compactMap { $0["name"] as? String } == ["interceptor"])
            let interceptor = try #require(parties.first)
            let port = try #require(interceptor["port"] as? Int)
            #expect(interceptor["resumption"] as? String == "tickets")
            #expect((interceptor["chain"] as? [[String: Any]])?.first?["name"] as? String == "proxy-leaf-api")
            let steps = try #require(server["steps"] as? [[String: Any]])
            #expect(steps.count == 2)
            #expect(steps.compactMap { $0["port"] as? Int } == [port, port])
            #expect(steps.compactMap { $0["pins"] as? String } == ["absent", "in-force"])
            #expect((steps.last?["expect"] as? [String: String])?["leaf-spki"] == "refuse")
            #expect(steps.first?["url"] as? String == "https://api.pinning.test:\(port)/")

            let dir = TestScratch.root.appendingPathComponent("control-steps-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let session = dir.appendingPathComponent("session.pem").path
            func connect(_ extra: [String]) async -> ChildProcess.Result {
                await ChildProcess.run(
                    [
                        "openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "api.pinning.test",
                        "-tls1_3", "-ign_eof",
                    ] + extra,
                    input: Array("GET / HTTP/1.1\r\nHost: api.pinning.test\r\nConnection: close\r\n\r\n".utf8),
                    timeout: .seconds(30))
            }
            let first = await connect(["-sess_out", session])
            #expect(first.stdoutText.contains("New, TLSv1.3"), "\(first.output)")
            let second = await connect(["-sess_in", session])
            #expect(second.stdoutText.contains("Reused, TLSv1.3"), "\(second.output)")
            let seen = try await Curl.get(base + "servers/\(id)/observations?party=interceptor&wait=5").json()
            let observations = try #require(seen["observations"] as? [[String: Any]])
            #expect(observations.count == 2)
            #expect(observations.map { $0["resumed"] as? Bool ?? false } == [false, true], "\(observations)")
            let main = try await Curl.get(base + "servers/\(id)/observations").json()
            #expect(
                (main["observations"] as? [Any])?.isEmpty == true,
                "the scenario server saw none of the steps' connections")
            let unknown = try await Curl.get(base + "servers/\(id)/observations?party=nobody")
            #expect(unknown.status == 400 && unknown.text.contains("interceptor"), "\(unknown.text)")

            let rotated = try await Curl.request(
                "POST", base + "servers/\(id)/rotate",
                json: #"{"party": "interceptor", "identity": "proxy-leaf-shared"}"#)
            #expect(rotated.status == 200, "\(rotated.text)")
            let after = try rotated.json()["parties"] as? [[String: Any]]
            #expect((after?.first?["chain"] as? [[String: Any]])?.first?["name"] as? String == "proxy-leaf-shared")

            let listening = ListeningSockets.inodes(port: port)
            #expect(!listening.isEmpty, "the party listens on \(port) before DELETE")
            #expect(try await Curl.request("DELETE", base + "servers/\(id)").status == 200)
            await ControlTestLab.expectClosed(port: port, listening: listening)
            _ = pki
        }
    }

    /// The cap on servers counts servers, not starts: a scenario of several connections takes one per party too.
    /// With room for two, resumption-after-unpinned-handshake (its server and the interceptor) fills it, and the
    /// next start is refused with 409 naming what it needs.
    @Test(.requires("curl"))
    func theServerCapCountsParties() async throws {
        var o = ControlServer.Options()
        o.maxServers = 2
        try await ControlTestLab.withControl(o) { control, _ in
            let first = try await Curl.request(
                "POST", control.url + "servers",
                json: #"{"scenario": "resumption-after-unpinned-handshake", "engine": "openssl"}"#)
            #expect(first.status == 201, "\(first.text)")
            let second = try await Curl.request(
                "POST", control.url + "servers", json: #"{"scenario": "baseline", "engine": "openssl"}"#)
            #expect(second.status == 409, "\(second.text)")
            #expect(second.text.contains("2 of the 2"), "\(second.text)")
        }
    }

    /// A mutual-TLS scenario: the server's JSON says which client identity to present, the client fetches it as
    /// PKCS#12 from the API, presents it, and the observation names it.
    @Test(.requires("curl"))
    func mutualTLSClientIdentityIsObserved() async throws {
        try await ControlTestLab.withControl { control, pki in
            let base = control.url
            let s = try await Curl.request(
                "POST", base + "servers", json: #"{"scenario": "mtls-required-valid", "engine": "openssl"}"#
            ).json()
            let id = try #require(s["id"] as? String)
            let client = try #require(s["clientIdentity"] as? [String: Any])
            #expect(client["name"] as? String == "client-valid")
            let cert = try #require(client["certificateFile"] as? String)
            let key = try #require(client["keyFile"] as? String)
            let r = await ChildProcess.run(
                [
                    "curl", "-s", "-o", "/dev/null", "--cacert", try #require(s["trustFile"] as? String), "--cert",
                    cert, "--key", key,
                    try #require(s["url"] as? String),
                ], timeout: .seconds(30))
            #expect(r.status == 0, "\(r.stderrText)")
            let seen = try await Curl.get(base + "servers/\(id)/observations?wait=5").json()
            let o = try #require((seen["observations"] as? [[String: Any]])?.first)
            #expect((o["clientChain"] as? [[String: Any]])?.first?["name"] as? String == "client-valid")
            #expect((o["clientCertificates"] as? [[String: Any]])?.isEmpty == false)
            #expect(o["applicationDataReceived"] as? Bool == true)
            _ = pki
        }
    }

    /// Loopback only unless told: binding elsewhere is refused, and a non-loopback peer gets 403.
    @Test func refusesToListenOnANonLoopbackAddress() async throws {
        let pki = try await ControlTestLab.pki()
        for host in ["0.0.0.0", "192.0.2.2", "::"] {
            var o = ControlServer.Options()
            o.host = host
            await #expect(throws: ControlServerError.self, "\(host)") {
                let c = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled(), options: o)
                await c.stop()
            }
        }
        var bad = ControlServer.Options()
        #expect(throws: ControlServerError.self) { try bad.setAddress("example.com:80") }
        #expect(throws: ControlServerError.self) { try bad.setAddress("127.0.0.1:99999") }
        #expect(throws: ControlServerError.self) { try bad.setAddress("127.0.0.1") }
        #expect(throws: ControlServerError.self) { try bad.setAddress("::1:80") }
        try bad.setAddress("[::1]:0")
        #expect(bad.host == "::1" && bad.port == 0)
        try bad.setAddress("localhost:8080")
        #expect(bad.host == "localhost" && bad.port == 8080)
    }

    /// A port in use is reported with the bind error (not as a listening timeout).
    @Test func aPortInUseIsAClearError() async throws {
        try await ControlTestLab.withControl { first, pki in
            var o = ControlServer.Options()
            o.port = first.port
            do {
                let second = try await ControlServer.start(pki: pki, catalogue: try Catalogue.bundled(), options: o)
                await second.stop()
                Issue.record("a second control API started on port \(first.port)")
            } catch let e as ControlServerError {
                #expect(e.reason.contains("cannot listen on 127.0.0.1:\(first.port)"), "\(e.reason)")
            }
        }
    }

    @Test func loopbackPeersOnly() {
        for ip in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "::FFFF:127.0.0.1"] {
            #expect(ControlServer.isLoopbackPeer(ip), "\(ip)")
        }
        for ip in ["192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "", "localhost", "0.0.0.0"] {
            #expect(!ControlServer.isLoopbackPeer(ip), "\(ip)")
        }
    }

    /// A real peer on this machine's non-loopback address gets 403 from a control API that listens everywhere
    /// but was not told to answer remote peers; the same API answers over loopback.
    @Test(
        .enabled(
            if: Tool.runs(needing: "curl") && NonLoopback.address != nil,
            "this machine has no non-loopback IPv4 address"))
    func nonLoopbackPeerGets403() async throws {
        let address = try #require(NonLoopback.address)
        var o = ControlServer.Options(allowRemoteBind: true, allowRemotePeers: false)
        o.host = "0.0.0.0"
        try await ControlTestLab.withControl(o) { control, _ in
            let remote = try await Curl.get("http://\(address):\(control.port)/health")
            #expect(remote.status == 403, "\(remote.text)")
            #expect((try remote.json()["error"] as? String)?.contains("loopback") == true)
            let local = try await Curl.get("http://127.0.0.1:\(control.port)/health")
            #expect(local.status == 200)
        }
    }
}

enum NonLoopback {
    /// The first global IPv4 address of this machine (`ip -4 -o addr show scope global`), if any.
    static let address: String? = {
        let r = ChildProcess.runBlocking(["ip", "-4", "-o", "addr", "show", "scope", "global"], timeout: .seconds(10))
        guard r.status == 0 else { return nil }
        for line in r.stdoutText.split(separator: "\n") {
            let f = line.split(separator: " ")
            if let i = f.firstIndex(of: "inet"), i + 1 < f.count, let ip = f[i + 1].split(separator: "/").first {
                return String(ip)
            }
        }
        return nil
    }()
}
