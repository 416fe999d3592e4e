public import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabPKI

/// One server to start for `pinlab serve`: an id (identity or scenario), what it presents, what a client should
/// trust and which certificates are worth pinning.
public struct ServeRequest: Sendable {
    public var id: String
    public var configuration: ServerTLSConfiguration
    /// Roots a client of this server should trust (written to the manifest's trust file).
    public var trustRootsDER: [[UInt8]]
    /// Certificates whose pins the manifest lists (usually the served chain and its root).
    public var pinned: [Identity]
    /// Set when no engine can serve the request before any is asked (a scenario naming identities this PKI lacks):
    /// every engine lists it in `manifest.unsupported` with this reason, and nothing is started.
    public var unsupportedReason: String?

    public init(
        id: String, configuration: ServerTLSConfiguration, trustRootsDER: [[UInt8]], pinned: [Identity],
        unsupportedReason: String? = nil
    ) {
        self.id = id
        self.configuration = configuration
        self.trustRootsDER = trustRootsDER
        self.pinned = pinned
        self.unsupportedReason = unsupportedReason
    }
}

/// The JSON manifest `pinlab serve --manifest` writes: everything a client in another language needs.
public struct ServeManifest: Codable, Sendable, Hashable {
    public struct Pin: Codable, Sendable, Hashable {
        public var name: String
        public var role: String
        public var spkiSHA256Base64: String
        public var spkiSHA256Hex: String
        public var certificateSHA256Base64: String
        public var certificateSHA256Hex: String
        /// OkHttp `CertificatePinner` form: `sha256/…`.
        public var okhttp: String
        /// curl `--pinnedpubkey` form: `sha256//…`.
        public var curl: String

        public init(_ identity: Identity) {
            name = identity.name
            role = identity.role.rawValue
            spkiSHA256Base64 = identity.pins.spkiBase64
            spkiSHA256Hex = identity.pins.spkiHex
            certificateSHA256Base64 = identity.pins.certificateBase64
            certificateSHA256Hex = identity.pins.certificateHex
            okhttp = PinFormat.okhttpPin(identity.pins.spkiBase64)
            curl = PinFormat.curlPin(identity.pins.spkiBase64)
        }
    }

    public struct Server: Codable, Sendable, Hashable {
        public var id: String
        public var engine: String
        public var host: String
        public var port: Int
        /// `https://localhost:PORT/`.
        public var url: String
        /// PEM file with the roots a client should trust.
        public var trustFile: String
        public var tlsVersions: [String]
        public var clientAuthentication: String
        public var pins: [Pin]
    }

    /// The lab's Encrypted Client Hello configuration, for a client to offer ECH to these servers (which reject it:
    /// no engine holds the ECH key, so a rejected offer is answered with the public name's chain).
    public struct ECH: Codable, Sendable, Hashable {
        /// The `ECHConfigList`, base64 (Go's `Config.EncryptedClientHelloConfigList`, an HTTPS record's `ech`).
        public var configListBase64: String
        public var publicName: String
        /// The same list, binary, and the base64 file, in the PKI folder.
        public var configListFile: String
        public var configListBase64File: String

        public init(_ configuration: ECHConfiguration, files: ECHFiles) {
            configListBase64 = configuration.configListBase64
            publicName = configuration.publicName
            configListFile = files.configList.path
            configListBase64File = files.configListBase64.path
        }
    }

    public var servers: [Server]
    /// Requests an engine could not serve: `id`, `engine`, `reason`.
    public var unsupported: [[String: String]]
    public var startedAt: Date
    /// The lab's ECH configuration (`pinlab serve` sets it; `nil` in a group started without a lab PKI).
    public var ech: ECH?

    public func json() -> Data {
        (try? JSONOutput.encoder().encode(self)) ?? Data("{}".utf8)
    }
}

/// Several fixture servers started together (one per request and engine), with their manifest. The reusable
/// core of `pinlab serve`.
public final class FixtureServerGroup: Sendable {
    public let servers: [FixtureServer]
    public let manifest: ServeManifest

    private init(servers: [FixtureServer], manifest: ServeManifest) {
        self.servers = servers
        self.manifest = manifest
    }

    /// Starts every request on every engine. With a fixed `options.port`, servers take consecutive ports from it.
    /// An engine that cannot serve a request is listed in `manifest.unsupported`; any other failure stops what
    /// was started and throws.
    public static func start(
        _ requests: [ServeRequest], engines: [any TLSEngine], options: FixtureServer.Options = .init(),
        trustDirectory: URL
    ) async throws -> FixtureServerGroup {
        try FileManager.default.createDirectory(at: trustDirectory, withIntermediateDirectories: true)
        var started: [FixtureServer] = []
        var entries: [ServeManifest.Server] = []
        var unsupported: [[String: String]] = []
        var nextPort = options.listener.port
        do {
            for request in requests {
                if let reason = request.unsupportedReason {
                    for engine in engines {
                        unsupported.append(["id": request.id, "engine": engine.name, "reason": reason])
                    }
                    continue
                }
                let trustFile = trustDirectory.appendingPathComponent("\(request.id).trust.pem")
                try Data(PEM.encode(request.trustRootsDER).utf8).write(to: trustFile)
                for engine in engines {
                    var o = options
                    o.listener.port = nextPort
                    let result = Result { () throws(TLSEngineError) -> FixtureServer in
                        try FixtureServer.startSync(
                            engine: engine, configuration: request.configuration, options: o, label: request.id)
                    }
                    let server: FixtureServer
                    switch result {
                    case .success(let s): server = s
                    case .failure(let e) where e.code == .unsupported:
                        unsupported.append(["id": request.id, "engine": engine.name, "reason": e.reason])
                        continue
                    case .failure(let e): throw e
                    }
                    if nextPort != 0 { nextPort += 1 }
                    started.append(server)
                    entries.append(
                        ServeManifest.Server(
                            id: request.id, engine: engine.name, host: server.host, port: server.port, url: server.url,
                            trustFile: trustFile.path, tlsVersions: request.configuration.versions.map(\.rawValue),
                            clientAuthentication: request.configuration.clientAuthentication.rawValue,
                            pins: request.pinned.map(ServeManifest.Pin.init)))
                }
            }
        } catch {
            for s in started { await s.stop() }
            throw error
        }
        return FixtureServerGroup(
            servers: started, manifest: ServeManifest(servers: entries, unsupported: unsupported, startedAt: Date()))
    }

    /// Stops every server.
    public func stop() async {
        for s in servers { await s.stop() }
    }
}
