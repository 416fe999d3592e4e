import Foundation
import PinningLab
import PinningLabCore
import Testing

@Suite("fixture server features")
struct ServerFeatureTests {
    let f: Fixtures
    init() throws { f = try Fixtures.load() }

    func firstCertificate(port: Int, serverName: String) async -> [UInt8]? {
        let r = await run([
            "openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", serverName, "-showcerts",
        ])
        return derBlocks(inPEM: r.stdout).first
    }

    @Test(
        "SNI selects among identities, each with its own exact chain; the first is the default",
        arguments: EngineKind.allCases)
    func sni(engine: EngineKind) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.identities.append(
            ServerIdentity(
                f.identity("leaf-wrong-host"), chain: [f.der("leaf-wrong-host")], serverNames: ["other.pinning.test"]))
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config)
        defer { server.stopSync() }
        #expect(await firstCertificate(port: server.port, serverName: "other.pinning.test") == f.der("leaf-wrong-host"))
        #expect(await firstCertificate(port: server.port, serverName: "localhost") == f.der("leaf-v1"))
        #expect(await firstCertificate(port: server.port, serverName: "unknown.test") == f.der("leaf-v1"))
        let seen = try #require(await server.settle())
        #expect(seen.map(\.identity) == ["leaf-wrong-host", "leaf-v1", "leaf-v1"])
        #expect(seen.map(\.serverName) == ["other.pinning.test", "localhost", "unknown.test"])
        #expect(seen[0].serverCertificates?.map(\.der) == [f.der("leaf-wrong-host")])
    }

    @Test("live rotation: new connections get the new chain", arguments: EngineKind.allCases)
    func rotation(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        defer { server.stopSync() }
        #expect(await firstCertificate(port: server.port, serverName: "localhost") == f.der("leaf-v1"))
        try server.rotate(to: f.configuration(["leaf-v3-rekey", "lab-intermediate-a"]))
        #expect(server.configuration.generation == 1)
        #expect(await firstCertificate(port: server.port, serverName: "localhost") == f.der("leaf-v3-rekey"))
        let seen = try #require(await server.settle())
        #expect(seen.map(\.generation) == [0, 1])
        // A rotation the engine cannot serve is refused and the old configuration stays.
        #expect(throws: TLSEngineError.self) {
            try server.rotate(to: .makeServerConfiguration(chainDER: [], privateKeyPKCS8DER: []))
        }
        #expect(server.configuration.generation == 1)
    }

    @Test(
        "scheduled rotation: the named connection and those after it get the new chain, the earlier ones the old",
        arguments: EngineKind.allCases)
    func scheduledRotation(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        defer { server.stopSync() }
        try server.rotate(to: f.configuration(["leaf-v3-rekey", "lab-intermediate-a"]), fromConnection: 3)
        try server.rotate(to: f.configuration(["leaf-v2-renewal", "lab-intermediate-a"]), fromConnection: 2)
        #expect(server.configuration.generation == 0, "nothing changes before the named connection")
        var served: [[UInt8]?] = []
        for _ in 0..<4 { served.append(await firstCertificate(port: server.port, serverName: "localhost")) }
        #expect(served == [f.der("leaf-v1"), f.der("leaf-v2-renewal"), f.der("leaf-v3-rekey"), f.der("leaf-v3-rekey")])
        #expect(server.configuration.generation == 2)
        let seen = try #require(await server.settle())
        #expect(seen.map(\.generation) == [0, 1, 2, 2])
        // One the engine cannot serve is refused at once, and nothing is scheduled.
        #expect(throws: TLSEngineError.self) {
            try server.rotate(to: .makeServerConfiguration(chainDER: [], privateKeyPKCS8DER: []), fromConnection: 5)
        }
        #expect(await firstCertificate(port: server.port, serverName: "localhost") == f.der("leaf-v3-rekey"))
    }

    @Test("a cipher restriction for one engine only makes the other say unsupported")
    func cipherRestriction() throws {
        var openSSLOnly = f.configuration(["leaf-v1", "lab-intermediate-a"])
        openSSLOnly.ciphers.openSSLCipherSuites = "TLS_AES_128_GCM_SHA256"
        #expect(EngineKind.openssl.engine.supports(openSSLOnly).isSupported)
        #expect(!EngineKind.gnutls.engine.supports(openSSLOnly).isSupported)
        var gnuTLSOnly = f.configuration(["leaf-v1", "lab-intermediate-a"])
        gnuTLSOnly.ciphers.gnuTLSPriority = "NORMAL:-CIPHER-ALL:+AES-128-GCM"
        #expect(EngineKind.gnutls.engine.supports(gnuTLSOnly).isSupported)
        #expect(!EngineKind.openssl.engine.supports(gnuTLSOnly).isSupported)
    }

    @Test("cipher restrictions are applied", arguments: EngineKind.allCases)
    func cipherApplied(engine: EngineKind) async throws {
        var config = f.configuration(["leaf-v1", "lab-intermediate-a"])
        config.ciphers = CipherPreferences(
            openSSLCipherSuites: "TLS_CHACHA20_POLY1305_SHA256", gnuTLSPriority: "NORMAL:-CIPHER-ALL:+CHACHA20-POLY1305"
        )
        let server = try await FixtureServer.start(engine: engine.engine, configuration: config)
        defer { server.stopSync() }
        let r = await run(["curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), server.url])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(await server.settle()?.first)
        #expect(o.cipherSuite == "TLS_CHACHA20_POLY1305_SHA256")
    }

    @Test("binding a non-loopback address needs allowNonLoopback")
    func nonLoopback() async throws {
        await #expect(throws: TLSEngineError(.invalidConfiguration, "")) {
            _ = try await FixtureServer.start(
                engine: EngineKind.openssl.engine, configuration: f.configuration(["leaf-v1"]),
                options: .init(bindAddress: "0.0.0.0"))
        }
    }

    @Test("no worker thread or no connection is refused, naming the settings and the fix")
    func noCapacity() async throws {
        for options in [FixtureServer.Options(workerThreads: 0), FixtureServer.Options(maxConnections: 0)] {
            let error = await #expect(throws: TLSEngineError(.invalidConfiguration, "")) {
                _ = try await FixtureServer.start(
                    engine: EngineKind.openssl.engine, configuration: f.configuration(["leaf-v1"]), options: options)
            }
            #expect(error?.reason.hasPrefix("workerThreads/maxConnections: ") == true, "\(String(describing: error))")
            #expect(error?.reason.contains("set both to 1 or more") == true, "\(String(describing: error))")
        }
    }

    @Test("settle() waits for a connection still in the listen queue", arguments: EngineKind.allCases)
    func settleIncludesQueued(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        defer { server.stopSync() }
        do { _ = RawClient(port: server.port) }  // connect and close at once
        let seen = try #require(await server.settle(timeout: .seconds(5)))
        #expect(seen.count == 1)
        #expect(seen.first?.closure == .eofBeforeHandshake)
        #expect(seen.first?.handshakeCompleted == false)
        let json = try JSONEncoder().encode(seen)
        let back = try JSONDecoder().decode([Observation].self, from: json)
        #expect(back == seen)
    }

    /// A client that reads the server's flight and hangs up without a word (Node does this when its
    /// `checkServerIdentity` refuses: it destroys the socket) refused the server; the server did not refuse it.
    /// OpenSSL 3 answers the end of file with a decode_error alert of its own (its record layer's SSLfatal); recorded
    /// as sent, it made every such refusal read "was refused by the server (alert decode_error)" — category
    /// protocol, a "wrong reason" note under every correct pinner of that kind — on the OpenSSL engine only.
    @Test(
        "a client that hangs up mid-handshake was not refused by the server", .requires("python3"),
        arguments: EngineKind.allCases)
    func hangUpIsNotAServerRefusal(engine: EngineKind) async throws {
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]))
        defer { server.stopSync() }
        // A real ClientHello (Python's ssl over memory BIOs), the server's whole flight read, then close.
        let script = """
            import socket, ssl, sys, time
            ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
            inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
            obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
            try: obj.do_handshake()
            except ssl.SSLWantReadError: pass
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            s.sendall(out.read())
            s.settimeout(2)
            got, deadline = b"", time.time() + 2
            while time.time() < deadline:
                try: chunk = s.recv(65536)
                except socket.timeout: break
                if not chunk: break
                got += chunk
                inc.write(chunk)
                try:
                    obj.do_handshake()
                except ssl.SSLWantReadError:
                    continue
                except ssl.SSLError:
                    break
                break
            s.close()
            print(len(got))
            """
        let r = await run(["python3", "-c", script, "\(server.port)"], timeout: .seconds(20))
        #expect(
            (Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 500,
            "the server's flight: \(r.stdout) \(r.stderr)")
        let seen = try #require(await server.settle(timeout: .seconds(5)))
        let o = try #require(seen.first)
        #expect(o.handshakeCompleted == false)
        #expect(
            o.alertSent == nil,
            "\(engine): \(String(describing: o.alertSent)) recorded as sent; closure \(o.closure.rawValue)")
        let evidence = ServerEvidence(seen)
        #expect(
            Verdict.refusalPhrase(evidence: evidence, category: nil, alert: nil) == "closed during the handshake",
            "\(engine)")
    }

    @Test("the observation callback sees every connection", arguments: EngineKind.allCases)
    func callback(engine: EngineKind) async throws {
        let box = Box()
        let server = try await FixtureServer.start(
            engine: engine.engine, configuration: f.configuration(["leaf-v1", "lab-intermediate-a"]),
            options: .init(onObservation: { box.append($0.jsonLine()) }))
        defer { server.stopSync() }
        _ = await run(["curl", "-sS", "--max-time", "5", "--cacert", f.path("lab-root.pem"), server.url])
        await server.stop()
        #expect(box.lines.count == 1)
        #expect(box.lines.first?.contains("\"requestLine\":\"GET / HTTP/1.1\"") == true)
    }
}

final class Box: @unchecked Sendable {  // guarded by lock
    private let lock = NSLock()
    private var _lines: [String] = []
    func append(_ s: String) { lock.withLock { _lines.append(s) } }
    var lines: [String] { lock.withLock { _lines } }
}
