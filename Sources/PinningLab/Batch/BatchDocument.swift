public import Foundation
import PinningLabBase
import PinningLabCore
public import PinningLabModel
import PinningLabPKI

/// The document a batch harness reads (`pinlab check --batch`): every cell it must judge, with everything a client
/// needs to connect — and nothing about what is expected (the client must not see the expected row).
///
/// Its JSON form follows ``BatchSchemas/input`` (`pinlab check --print-schema batch-in`).
public struct BatchDocument: Sendable, Hashable, Codable {
    /// Always `pinlab-batch`.
    public var format: String = "pinlab-batch"
    public var formatVersion: Int = 1
    /// How long the client may spend on one cell, in seconds (the server gives up on a silent connection then).
    public var cellTimeoutSeconds: Double
    /// The platform TLS policy the run judges the harness by (`pinlab check --batch --platform`); absent: none named.
    /// A harness that can play several platforms configures itself for this one.
    public var platform: PlatformPolicy?
    /// What the run judges the harness to check beyond its pins (`pinlab check --batch --client-checks`), e.g.
    /// `revocation=hard,ct=required`; absent: nothing declared, and cells that depend on it are undecided.
    public var clientChecks: ClientChecks?
    public var cells: [BatchCell]

    public init(cells: [BatchCell], cellTimeoutSeconds: Double) {
        self.cells = cells
        self.cellTimeoutSeconds = cellTimeoutSeconds
    }

    /// Decodes a document (the harness side).
    public init(json: Data) throws {
        self = try JSONDecoder().decode(BatchDocument.self, from: json)
    }

    /// The document as pretty-printed JSON with sorted keys.
    public func jsonData() throws -> Data { Data(try JSONOutput.string(self).utf8) + Data("\n".utf8) }
}

/// One cell of a batch: a server of its own (scenario × pin profile × engine), reached at `url`.
public struct BatchCell: Sendable, Hashable, Codable {
    /// `scenario/profile/engine`, e.g. `rekey/leaf-spki+backup/gnutls`: the key of the client's answer line.
    public var id: String
    public var scenario: String
    public var profile: PinProfile
    public var engine: String
    /// `https://localhost:PORT/`.
    public var url: String
    /// The name to connect to and to check the certificate against: `localhost`.
    public var host: String
    /// The address the server listens on: `127.0.0.1`.
    public var ip: String
    public var port: Int
    /// PEM file holding every root of the cell's trust profile (what the client's trust store holds).
    public var trustFile: String
    /// The pins of the profile, in every form the command template offers. Empty lists for `none`.
    public var pins: BatchPins
    /// The client certificate to present, when the scenario's server asks for one and the scenario presents one.
    public var clientIdentity: BatchClientIdentity?
    /// The connections of a scenario made of several (`pinlab check --batch --batch-steps`), in order; absent for a
    /// cell of one connection. The harness makes them one after the other with one client — one TLS session cache,
    /// one connection pool — as an app would, and answers each (`"step": N`). `url`, `host` and `port` above are
    /// step 1's.
    public var steps: [BatchStep]?

    public init(
        id: String, scenario: String, profile: PinProfile, engine: String, url: String, host: String, ip: String,
        port: Int, trustFile: String, pins: BatchPins, clientIdentity: BatchClientIdentity?
    ) {
        self.id = id
        self.scenario = scenario
        self.profile = profile
        self.engine = engine
        self.url = url
        self.host = host
        self.ip = ip
        self.port = port
        self.trustFile = trustFile
        self.pins = pins
        self.clientIdentity = clientIdentity
    }

    /// The id of a cell: `scenario/profile/engine`.
    public static func id(scenario: String, profile: PinProfile, engine: String) -> String {
        "\(scenario)/\(profile.rawValue)/\(engine)"
    }
}

/// One connection of a cell of several (``BatchCell/steps``).
public struct BatchStep: Sendable, Hashable, Codable {
    /// 1, 2, …: the `step` of the answer line.
    public var step: Int
    /// `https://HOST:PORT/`.
    public var url: String
    /// The name to connect to and to check the certificate against (it may differ from step to step).
    public var host: String
    public var ip: String
    public var port: Int
    /// The pins the client holds in this step: the cell's, or empty lists where the scenario says the pins are not
    /// in force yet (an app that fetches its pin set after its first connection).
    public var pins: BatchPins

    public init(step: Int, url: String, host: String, ip: String, port: Int, pins: BatchPins) {
        self.step = step
        self.url = url
        self.host = host
        self.ip = ip
        self.port = port
        self.pins = pins
    }
}

/// The pins of one cell, in the forms of the command-template placeholders ({pins}, {pins.curl}, {pins.okhttp},
/// {pins.hex}, {certpins.hex}), and the hosts they are declared for ({pins.domain}, {pins.subdomains},
/// {pins.okhttp.pattern}).
public struct BatchPins: Sendable, Hashable, Codable {
    /// `spki-sha256` (every profile but `leaf-cert`) or `certificate-sha256` (`leaf-cert`).
    public var kind: String
    /// {pins}: base64 SHA-256 hashes.
    public var base64: [String]
    /// {pins.curl}: `sha256//…;sha256//…` for `curl --pinnedpubkey` (empty for `none`).
    public var curl: String
    /// {pins.okhttp}: `sha256/…` for OkHttp's `CertificatePinner`.
    public var okhttp: [String]
    /// {pins.hex}: the same hashes as lowercase hex.
    public var hex: [String]
    /// {certpins.hex}: SHA-256 of the DER certificates of the pinned identities, hex (whatever the profile pins).
    public var certificateHex: [String]
    /// {pins.domain}: the host the pins are declared for (the scenario's pin scope; `host` unless it says
    /// otherwise). Empty for `none`. A client that models pin scopes applies the pins only to hosts in scope.
    public var domain: String
    /// {pins.subdomains}: whether the pins also apply to every subdomain of `domain`.
    public var includeSubdomains: Bool
    /// {pins.okhttp.pattern}: the scope as an OkHttp `CertificatePinner` pattern (`api.pinning.test`,
    /// `**.api.pinning.test`). Empty for `none`.
    public var okhttpPattern: String

    public init(
        kind: String, base64: [String], curl: String, okhttp: [String], hex: [String], certificateHex: [String],
        domain: String = "", includeSubdomains: Bool = false, okhttpPattern: String = ""
    ) {
        self.kind = kind
        self.base64 = base64
        self.curl = curl
        self.okhttp = okhttp
        self.hex = hex
        self.certificateHex = certificateHex
        self.domain = domain
        self.includeSubdomains = includeSubdomains
        self.okhttpPattern = okhttpPattern
    }

    /// No pins (a step whose pins are not in force), of the same kind.
    var emptied: BatchPins { BatchPins(kind: kind, base64: [], curl: "", okhttp: [], hex: [], certificateHex: []) }

    /// The values the command template would substitute for this cell.
    init(_ context: CellContext, kind: PinSet.Kind) {
        let v = context.values
        func list(_ key: String) -> [String] { (v[key] ?? "").split(separator: ",").map(String.init) }
        self.init(
            kind: kind == .certificateSHA256 ? "certificate-sha256" : "spki-sha256", base64: list("pins"),
            curl: v["pins.curl"] ?? "", okhttp: list("pins.okhttp"), hex: list("pins.hex"),
            certificateHex: list("certpins.hex"), domain: v["pins.domain"] ?? "",
            includeSubdomains: v["pins.subdomains"] == "true", okhttpPattern: v["pins.okhttp.pattern"] ?? "")
    }
}

/// The client certificate files of a mutual-TLS cell ({client.cert}, {client.key}, {client.p12}, {client.password}).
public struct BatchClientIdentity: Sendable, Hashable, Codable {
    /// PEM: the client certificate, then its issuer chain.
    public var certificateFile: String
    /// PEM PKCS#8 private key (mode 0600).
    public var keyFile: String
    /// PKCS#12 of certificate and key, when one could be made.
    public var pkcs12File: String?
    public var pkcs12Password: String?

    public init(certificateFile: String, keyFile: String, pkcs12File: String?, pkcs12Password: String?) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.pkcs12File = pkcs12File
        self.pkcs12Password = pkcs12Password
    }
}

/// Where one cell's server listens: the input of ``CheckRunner/batchDocument(_:workDirectory:cellTimeout:)``.
public struct BatchCellAddress: Sendable, Hashable {
    public var scenario: String
    public var profile: PinProfile
    public var engine: String
    public var port: Int
    public init(scenario: String, profile: PinProfile, engine: String, port: Int) {
        self.scenario = scenario
        self.profile = profile
        self.engine = engine
        self.port = port
    }
}

extension CheckRunner {
    /// The batch document for any selection of cells whose servers listen on the given ports (on 127.0.0.1).
    /// Trust files and client certificate files are written to `workDirectory`, which must exist and outlive the
    /// harness run. Throws for an unknown scenario id.
    public func batchDocument(
        _ cells: [BatchCellAddress], workDirectory: URL, cellTimeout: Duration = .seconds(10)
    ) throws -> BatchDocument {
        try batchDocument(
            cells, files: try CellFiles(pki: pki, directory: workDirectory, servesResponders: false),
            cellTimeout: cellTimeout)
    }

    func batchDocument(_ cells: [BatchCellAddress], files: CellFiles, cellTimeout: Duration) throws -> BatchDocument {
        var out: [BatchCell] = []
        for c in cells {
            let s = try catalogue.scenario(c.scenario)
            let ctx = try files.context(for: s, profile: c.profile, port: c.port)
            let identity = ctx.clientCertificateFile.flatMap { cert in
                ctx.clientKeyFile.map {
                    BatchClientIdentity(
                        certificateFile: cert, keyFile: $0, pkcs12File: ctx.clientPKCS12File,
                        pkcs12Password: ctx.clientPKCS12Password)
                }
            }
            out.append(
                BatchCell(
                    id: BatchCell.id(scenario: s.id, profile: c.profile, engine: c.engine), scenario: s.id,
                    profile: c.profile, engine: c.engine, url: ctx.url, host: ctx.host, ip: ctx.ip, port: ctx.port,
                    trustFile: ctx.caFile,
                    pins: BatchPins(ctx, kind: c.profile.pinsCertificates ? .certificateSHA256 : .spkiSHA256),
                    clientIdentity: identity))
        }
        return BatchDocument(cells: out, cellTimeoutSeconds: seconds(cellTimeout))
    }
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
