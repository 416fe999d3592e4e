import ArgumentParser
import Foundation
import PinningLab
import PinningLabBase
import PinningLabControl
import PinningLabCore
import PinningLabPKI
import PinningLabTLSTypes

#if canImport(Glibc)
    import Glibc
#endif

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve lab PKI identities from local TLS servers (OpenSSL and/or GnuTLS) until interrupted.",
        discussion: """
            Each --identity gets one server per engine on 127.0.0.1 (ephemeral ports unless --port is given: then \
            consecutive ports from it). The table of URLs goes to standard output; --manifest writes JSON with \
            URLs, trust files and pins in every format. Stops on SIGINT/SIGTERM.

            --control 127.0.0.1:PORT also serves the control API (HTTP+JSON, described at /openapi.yaml): list \
            scenarios, start, stop and rotate scenario servers, read their observations, fetch trust anchors, pins \
            and client identities. Port 0 picks a free port; the URL is printed and written to the manifest. Every \
            route but GET /health needs the token printed at start (and written to the manifest, mode 0600) as \
            Authorization: Bearer TOKEN; requests naming another Host (DNS rebinding) or carrying an Origin (a web \
            page) are refused unless --control-allow-origin allows that origin. The live view (GET /live, the \
            address printed as "live view:") shows the scenario servers' connections and verdicts as they happen.

            Example: pinlab serve --identity leaf-v1 --engine both --manifest servers.json --log
            Example: pinlab serve --control 127.0.0.1:0 --manifest control.json
            """)

    @OptionGroup var pki: PKIOptionsGroup

    @Option(name: .customLong("identity"), help: "A PKI identity to serve (repeatable), e.g. leaf-v1.")
    var identities: [String] = []

    @Option(
        name: .customLong("scenario"),
        help: "A catalogue scenario to serve (repeatable), e.g. rekey; see `pinlab scenarios list`.")
    var scenarioIDs: [String] = []

    @Flag(name: .customLong("all"), help: "Serve every scenario of the catalogue.")
    var allScenarios = false

    @Option(
        help:
            "The exact chain to send, comma-separated PKI names (one --identity only). Default: the identity and its issuers without the root."
    )
    var chain: String?

    @Option(help: "openssl, gnutls or both.")
    var engine: String = "both"

    @Option(help: "Offer only this TLS version: 1.0, 1.1, 1.2 or 1.3. Default: 1.2 and 1.3.")
    var tls: String?

    @Option(name: .customLong("client-auth"), help: "none, optional or required.")
    var clientAuth: String = "none"

    @Option(name: .customLong("client-ca"), help: "PKI roots trusted for client certificates (comma-separated).")
    var clientCA: String = "client-ca"

    @Option(
        help:
            "Session resumption of --identity servers: off, ids (TLS 1.2 session IDs), tickets or both. Default: off (every connection is a full handshake)."
    )
    var resumption: String = "off"

    @Flag(
        help:
            "Offer HTTP/2 on --identity servers (ALPN h2, then http/1.1): every stream is answered and its :authority recorded. Needs the nghttp2 library at run time."
    )
    var http2 = false

    @Option(help: "Address to listen on: 127.0.0.1 or ::1; anything else needs --allow-non-loopback.")
    var bind: String = "127.0.0.1"

    @Flag(name: .customLong("allow-non-loopback"), help: "Allow binding a non-loopback address (prints a warning).")
    var allowNonLoopback = false

    @Option(help: "First port (0: ephemeral).")
    var port: Int = 0

    @Option(help: "Write a JSON manifest of the servers here.")
    var manifest: String?

    @Flag(help: "Stream observations as JSON lines on standard output.")
    var log = false

    @Flag(
        name: .customLong("revocation-responder"),
        help:
            "Also serve the lab's OCSP responder and CRLs over HTTP on a free loopback port (printed): OCSP POST /<issuer> or GET /<issuer>/<base64 request>, CRLs GET /<issuer>.crl."
    )
    var revocationResponder = false

    @Option(help: "Serve the control API (HTTP+JSON) on HOST:PORT, e.g. 127.0.0.1:0 (0: a free port).")
    var control: String?

    @Flag(
        name: .customLong("control-allow-remote"),
        help: "Let the control API listen on a non-loopback address and answer non-loopback peers (prints a warning).")
    var controlAllowRemote = false

    @Option(
        name: .customLong("control-allow-origin"),
        help: ArgumentHelp(
            "A web origin whose requests the control API answers, e.g. http://localhost:3000 (repeatable); requests with any other Origin header get 403.",
            valueName: "origin"))
    var controlAllowOrigins: [String] = []

    @Flag(
        name: .customLong("control-no-token"),
        help:
            "Serve the control API without its bearer token (loopback only; prints a warning): any local process — and any web page whose origin you allow — can then start servers and read the lab's keys."
    )
    var controlNoToken = false

    @Option(
        name: .customLong("control-max-servers"),
        help:
            "Scenario servers the control API runs at once (POST /servers, and POST /batch: one per cell and one per extra party of a scenario of several connections); the whole catalogue on both engines (POST /batch {}) needs 1248."
    )
    var controlMaxServers = 32

    func validate() throws {
        guard !identities.isEmpty || !scenarioIDs.isEmpty || allScenarios || control != nil else {
            throw ValidationError(
                "give at least one --identity (e.g. --identity leaf-v1), --scenario ID, --all, or --control 127.0.0.1:0"
            )
        }
        if let control {
            var o = ControlServer.Options()
            do { try o.setAddress(control) } catch { throw ValidationError("--control: \(error)") }
            if !o.hostIsLoopback && !controlAllowRemote {
                throw ValidationError(
                    "--control \(control): refusing a non-loopback address; the control API starts servers and hands out keys, so it listens on 127.0.0.1 or ::1 unless --control-allow-remote is given"
                )
            }
            guard controlMaxServers >= 1 else { throw ValidationError("--control-max-servers must be at least 1") }
            if controlNoToken && !o.hostIsLoopback {
                throw ValidationError(
                    "--control-no-token with --control \(control): refused off loopback, where the token is required; drop --control-no-token and give the token to the clients"
                )
            }
            for origin in controlAllowOrigins {
                do { _ = try ControlServer.Options.normalizedOrigin(origin) } catch {
                    throw ValidationError("--control-allow-origin: \(error)")
                }
            }
        } else {
            for (flag, given) in [
                ("--control-allow-remote", controlAllowRemote), ("--control-no-token", controlNoToken),
                ("--control-allow-origin", !controlAllowOrigins.isEmpty),
            ] where given {
                throw ValidationError("\(flag) applies to --control HOST:PORT; add --control or drop it")
            }
        }
        _ = try chainList()
        _ = try clientCAList()
        if chain != nil && identities.count > 1 {
            throw ValidationError("--chain applies to one --identity; serve several identities without it")
        }
        if let tls, TLSVersion(parsing: tls) == nil {
            throw ValidationError("--tls '\(tls)': use 1.0, 1.1, 1.2 or 1.3")
        }
        guard ClientAuthentication.all.map(\.rawValue).contains(clientAuth) else {
            throw ValidationError("--client-auth '\(clientAuth)': use none, optional or required")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is not in 0...65535") }
        guard SessionResumption.Mode.all.contains(SessionResumption.Mode(rawValue: resumption)) else {
            throw ValidationError(
                "--resumption '\(resumption)': use \(SessionResumption.Mode.all.map(\.rawValue).joined(separator: ", "))"
            )
        }
        if http2 && identities.isEmpty {
            throw ValidationError(
                "--http2 applies to --identity servers (a scenario says its own ALPN); add --identity or drop it")
        }
        if http2, let why = HTTP2.availability.unavailableReason { throw ValidationError("--http2: \(why)") }
        if resumption != "off" && identities.isEmpty {
            throw ValidationError(
                "--resumption applies to --identity servers (a scenario says its own resumption); add --identity or drop it"
            )
        }
    }

    /// --chain: nil for the identity's own chain; an empty list is refused.
    func chainList() throws -> [String]? {
        try commaList(
            chain, option: "--chain", example: "leaf-v1,lab-intermediate-a",
            omitted: "the identity's own chain")
    }

    /// --client-ca: the roots trusted for client certificates; an empty list is refused.
    func clientCAList() throws -> [String] {
        try commaList(clientCA, option: "--client-ca", example: "client-ca", omitted: "client-ca") ?? ["client-ca"]
    }

    func run() async throws {
        let lab = try reportingErrors { try pki.open() }
        let engines = try ServeCommand.engines(engine)
        let requests =
            try identities.map { name in
                try ServeCommand.request(
                    lab: lab, identity: name, chain: try chainList(),
                    tls: tls.flatMap(TLSVersion.init(parsing:)), clientAuth: ClientAuthentication(rawValue: clientAuth),
                    clientCA: try clientCAList(),
                    resumption: SessionResumption.Mode(rawValue: resumption), http2: http2)
            } + ServeCommand.scenarioRequests(lab: lab, ids: scenarioIDs, all: allScenarios)
        var options = FixtureServer.Options(bindAddress: bind, allowNonLoopback: allowNonLoopback, port: port)
        if log {
            options.onObservation = { o in FileHandle.standardOutput.write(Data((o.jsonLine() + "\n").utf8)) }
        }
        let trustDirectory = lab.directory.appendingPathComponent("serve", isDirectory: true)
        let group: FixtureServerGroup
        do {
            group = try await FixtureServerGroup.start(
                requests, engines: engines, options: options, trustDirectory: trustDirectory)
        } catch let e as TLSEngineError {
            throw ValidationError("cannot start the servers: \(e.reason)")
        }
        if group.manifest.servers.isEmpty, !requests.isEmpty, control == nil {
            // Every engine said unsupported: waiting for clients of nothing would hang a script.
            let why = group.manifest.unsupported.map {
                "\($0["id"] ?? "") on \($0["engine"] ?? ""): \($0["reason"] ?? "")"
            }
            throw ValidationError(
                "no engine can serve what was asked, so nothing is listening:\n  " + why.joined(separator: "\n  "))
        }
        let controlServer: ControlServer?
        do {
            controlServer = try await startControl(lab: lab, serverOptions: options)
        } catch {
            await group.stop()
            throw error
        }
        var responder: RevocationResponder?
        if revocationResponder {
            do throws(TLSEngineError) {
                responder = try RevocationResponder(pki: lab, host: bind == "::1" ? "::1" : "127.0.0.1")
            } catch {
                await controlServer?.stop()
                await group.stop()
                throw ValidationError("cannot start the revocation responder: \(error.reason)")
            }
        }
        defer { responder?.stop() }
        // Catch SIGINT/SIGTERM before anyone can read the manifest and signal us (a signal sent right after the
        // manifest appeared was lost while the handler was still being installed).
        let termination = TerminationSignals("pinlab.serve.signals")
        var text = ServeCommand.table(group.manifest) + "\n"
        if let controlServer {
            text += "control: \(controlServer.url) (OpenAPI: \(controlServer.url)openapi.yaml)\n"
            if let token = controlServer.token {
                text += "control token: \(token) (send Authorization: Bearer <token> on every route but GET /health)\n"
            }
            text += "live view: \(controlServer.livePageURL) (the scenario servers' connections as they happen)\n"
        }
        if let responder {
            text +=
                "revocation: \(responder.baseURL) (OCSP: POST \(responder.baseURL)/<issuer>; CRL: GET \(responder.baseURL)/<issuer>.crl)\n"
        }
        if let manifest {
            var served = group.manifest
            served.ech = ServeManifest.ECH(try reportingErrors { try lab.echConfiguration() }, files: lab.echFiles)
            let data = try controlServer.map { try ControlManifest(served, control: $0).json() } ?? served.json()
            do {
                // Readable by its owner only from its first byte: the control API's token is in it.
                try Storage.writeAtomically(Array(data), to: URL(fileURLWithPath: manifest), mode: 0o600)
            } catch {
                await controlServer?.stop()
                await group.stop()
                throw ValidationError("--manifest \(manifest): \(error)")
            }
            text += "manifest: \(manifest)\n"
        }
        // Unbuffered, so that a parent process reading a pipe sees the URLs at once.
        FileHandle.standardOutput.write(Data(text.utf8))
        await termination.wait()
        let status = termination.exitStatus ?? 0
        // However long stopping takes (a handler still running, a server slow to close), the process ends soon.
        startThread(named: "pinlab.exitwatch") {
            Thread.sleep(forTimeInterval: 5)
            FileHandle.standardError.write(Data("pinlab serve: stopping took over 5 s; exiting\n".utf8))
            Foundation.exit(status)
        }
        await controlServer?.stop()
        await group.stop()
        if status != 0 { Foundation.exit(status) }
    }

    /// Starts the control API when --control is given. Servers it starts use the fixture options (bind address,
    /// --log) on ephemeral ports.
    func startControl(lab: LabPKI, serverOptions: FixtureServer.Options) async throws -> ControlServer? {
        guard let control else { return nil }
        var o = ControlServer.Options(
            allowRemoteBind: controlAllowRemote, allowRemotePeers: controlAllowRemote,
            allowedOrigins: controlAllowOrigins,
            requireToken: !controlNoToken)
        do {
            try o.setAddress(control)
        } catch {
            throw ValidationError("--control: \(error)")
        }
        o.serverOptions = serverOptions
        o.serverOptions.listener.port = 0
        o.maxServers = controlMaxServers
        let catalogue: Catalogue
        do {
            catalogue = try Catalogue.bundled()
        } catch {
            throw ValidationError("\(error)")
        }
        let server: ControlServer
        do {
            server = try await ControlServer.start(pki: lab, catalogue: catalogue, options: o)
        } catch let e as ControlServerError {
            throw ValidationError("--control \(control): \(e.reason)")
        }
        if server.token == nil {
            FileHandle.standardError.write(
                Data(
                    """
                    warning: --control-no-token: the control API at \(server.url) answers without a token. Any process on this \
                    machine (any user's) can start and rotate servers and read the lab's leaf and client private keys; only \
                    the Host and Origin checks still keep web pages out. Use it only where the client cannot be given the token.

                    """.utf8))
        }
        return server
    }

    /// The engines named by --engine.
    static func engines(_ name: String) throws -> [any TLSEngine] {
        do {
            return try Engines.named(name)
        } catch {
            throw ValidationError("--engine '\(name)': use \(Engines.names.joined(separator: ", ")) or both")
        }
    }

    /// What one identity is served with: its chain (or the one given, exactly), its key, its root as the trust
    /// file, and the pins of everything in the chain and the root.
    static func request(
        lab: LabPKI, identity name: String, chain: [String]?, tls: TLSVersion?, clientAuth: ClientAuthentication,
        clientCA: [String], resumption: SessionResumption.Mode = .off, http2: Bool = false
    ) throws -> ServeRequest {
        func lookup(_ n: String) throws -> Identity {
            guard let id = lab[n] else {
                throw ValidationError(
                    "no identity '\(n)' in the PKI at \(lab.directory.path); `pinlab pki list` shows the names")
            }
            return id
        }
        let identity = try lookup(name)
        let chainIdentities = try chain.map { try $0.map(lookup) }
        var config = ServerTLSConfiguration.makeServerConfiguration(
            identity, chain: chainIdentities.map { $0.map(\.certificateDER) })
        if let tls { config.setVersion(tls) }
        config.clientAuthentication = clientAuth
        config.resumption = SessionResumption(resumption)
        if http2 { config.alpnProtocols = [HTTP2.alpn, "http/1.1"] }
        if clientAuth != .none { config.clientTrustRootsDER = try clientCA.map { try lookup($0).certificateDER } }
        let root = try lookup(identity.rootName)
        var pinned = chainIdentities ?? ([identity] + identity.issuerChainIdentities(in: lab))
        if !pinned.contains(where: { $0.name == root.name }) { pinned.append(root) }
        return ServeRequest(id: name, configuration: config, trustRootsDER: [root.certificateDER], pinned: pinned)
    }

    static func table(_ m: ServeManifest) -> String {
        var rows = [["ENGINE", "ID", "URL", "LEAF PIN (curl)", "TRUST"]]
        for s in m.servers {
            rows.append([s.engine, s.id, s.url, s.pins.first?.curl ?? "", s.trustFile])
        }
        let widths = (0..<rows[0].count).map { c in rows.map { $0[c].count }.max() ?? 0 }
        var out = rows.map { r in
            r.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
        for u in m.unsupported {
            out += "\nunsupported: \(u["id"] ?? "") on \(u["engine"] ?? ""): \(u["reason"] ?? "")"
        }
        return out
    }
}

/// The serve manifest with the control API's address next to the servers (`--control` with `--manifest`).
struct ControlManifest: Encodable {
    struct Endpoint: Encodable {
        var url: String
        var host: String
        var port: Int
        var openapi: String
        /// `Authorization: Bearer` this; absent with --control-no-token.
        var token: String?
    }
    var manifest: ServeManifest
    var control: Endpoint

    init(_ manifest: ServeManifest, control: ControlServer) {
        self.manifest = manifest
        self.control = Endpoint(
            url: control.url, host: control.host, port: control.port, openapi: control.url + "openapi.yaml",
            token: control.token)
    }

    enum CodingKeys: String, CodingKey { case control }
    func encode(to encoder: any Encoder) throws {
        try manifest.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(control, forKey: .control)
    }

    func json() throws -> Data { try JSONOutput.encoder().encode(self) }
}

extension Identity {
    /// The PKI identities of this identity's issuers, nearest first, without the root.
    func issuerChainIdentities(in lab: LabPKI) -> [Identity] {
        lab.issuers(of: self).filter { $0.name != rootName }
    }
}
