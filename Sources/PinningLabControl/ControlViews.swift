import Foundation
import PinningLab
import PinningLabCore

/// The JSON shapes of the control API (the `components/schemas` of openapi.yaml).

/// Finds the PKI identity of a certificate seen on the wire.
struct IdentityIndex: Sendable {
    private let byDER: [Data: Identity]
    init(_ pki: LabPKI) {
        var m: [Data: Identity] = [:]
        for id in pki.identities { m[Data(id.certificateDER)] = id }
        byDER = m
    }
    func identity(_ der: [UInt8]) -> Identity? { byDER[Data(der)] }
}

/// One certificate: its PKI name (when it is one of the lab's) and its pins.
struct CertificateView: Encodable, Sendable {
    @NullWhenAbsent var name: String?
    @NullWhenAbsent var spkiSHA256: String?
    @NullWhenAbsent var certificateSHA256: String?

    init(der: [UInt8], index: IdentityIndex) {
        let id = index.identity(der)
        name = id?.name
        spkiSHA256 = id?.pins.spkiBase64
        certificateSHA256 = id?.pins.certificateBase64
    }
}

/// A running scenario server.
struct ServerView: Encodable, Sendable {
    struct ClientIdentity: Encodable, Sendable {
        var name: String
        var certificateFile: String?
        var keyFile: String?
        var pkcs12File: String?
        var pkcs12Password: String?
        /// `GET /identities/{name}?format=p12` and friends.
        var url: String
    }

    var id: String
    var scenario: String
    var engine: String
    /// `https://localhost:PORT/`: clients reach every server as `localhost`.
    var url: String
    var host: String
    var ip: String
    var port: Int
    /// Rotations so far (0 until the first).
    var generation: Int
    /// The chain the server sends now, in order.
    var chain: [CertificateView]
    var tlsVersions: [String]
    var clientAuthentication: String
    /// The trust profile of the scenario's client, its PEM file and where to fetch it.
    var trust: String
    var trustFile: String
    var trustURL: String
    var clientIdentity: ClientIdentity?
    /// What a correct client does under each pin profile: `accept` or `refuse`.
    var expect: [String: String]
    var connectionsAccepted: Int
    var startedAt: Date
    /// The batch that started it (`POST /batch`) and the cell it serves; absent for `POST /servers`.
    var batch: String?
    var cell: String?
    /// A scenario made of several connections: the server of each party its steps name (the client connects to
    /// these, not to `port`, in the steps), and the steps in order. Absent for a scenario of one connection.
    var parties: [PartyView]?
    var steps: [StepView]?

    /// One party's server: where it listens, what it sends, whether it resumes and speaks HTTP/2.
    struct PartyView: Encodable, Sendable {
        var name: String
        var ip: String
        var port: Int
        var chain: [CertificateView]
        var tlsVersions: [String]
        var resumption: String
        var earlyData: Bool
        var alpn: [String]
        var connectionsAccepted: Int
        /// `GET /servers/{id}/observations?party=NAME`.
        var observations: String
    }

    /// One connection of the scenario: the host the client asks for, the party (and port) that answers, whether
    /// the pins are in force, and what a correct client does under each profile.
    struct StepView: Encodable, Sendable {
        var step: Int
        var host: String
        var party: String
        var port: Int
        var url: String
        var pins: String
        var earlyData: Bool
        /// A chain the party's server rotates to before this step: `POST /servers/{id}/rotate` with
        /// `{"party": …, "chain": […]}` does it.
        var rotateTo: [String]?
        var expect: [String: String]
    }

    init(_ e: ServerRegistry.Entry, index: IdentityIndex) {
        let s = e.server
        let (config, generation) = s.running.configuration
        id = e.id
        scenario = s.scenario.id
        engine = s.engine
        url = s.url.absoluteString
        host = s.host
        ip = s.ip
        port = s.port
        self.generation = generation
        chain = (config.identities.first?.chainDER ?? []).map { CertificateView(der: $0, index: index) }
        tlsVersions = config.versions.map(\.rawValue)
        clientAuthentication = config.clientAuthentication.rawValue
        trust = s.scenario.client.trust.rawValue
        trustFile = s.trustFile.path
        trustURL = "/trust/" + trust
        clientIdentity = s.clientCredentials.map { c in
            let name = s.scenario.client.present ?? ""
            return ClientIdentity(
                name: name, certificateFile: c.certificateFile, keyFile: c.keyFile, pkcs12File: c.pkcs12File,
                pkcs12Password: c.pkcs12Password, url: "/identities/\(name)")
        }
        expect = Dictionary(uniqueKeysWithValues: PinProfile.all.map { ($0.rawValue, s.expected($0).rawValue) })
        connectionsAccepted = s.running.connectionsAccepted
        startedAt = e.startedAt
        batch = e.batch
        cell = e.cell
        if s.scenario.isMultiStep {
            let id = e.id
            parties = e.parties.keys.sorted().compactMap { name in
                guard let p = e.parties[name] else { return nil }
                let (c, _) = p.configuration
                return PartyView(
                    name: name, ip: s.ip, port: p.port,
                    chain: (c.identities.first?.chainDER ?? []).map { CertificateView(der: $0, index: index) },
                    tlsVersions: c.versions.map(\.rawValue), resumption: c.resumption.mode.rawValue,
                    earlyData: c.resumption.maxEarlyData > 0, alpn: c.alpnProtocols,
                    connectionsAccepted: p.connectionsAccepted,
                    observations: "/servers/\(id)/observations?party=\(name)")
            }
            steps = s.scenario.steps.enumerated().map { i, step in
                let port = e.parties[step.party]?.port ?? s.port
                let host = PinScope.normalizedHost(step.host)
                return StepView(
                    step: i + 1, host: step.host, party: step.party, port: port, url: "https://\(host):\(port)/",
                    pins: step.pins.rawValue, earlyData: step.earlyData, rotateTo: step.rotateTo,
                    expect: Dictionary(
                        uniqueKeysWithValues: PinProfile.all.map { ($0.rawValue, step.expected($0).rawValue) }))
            }
        }
    }
}

/// An observation with the PKI names of the certificates in it.
struct ObservationView: Encodable, Sendable {
    var observation: Observation
    var serverChain: [CertificateView]?
    var clientChain: [CertificateView]

    init(_ o: Observation, index: IdentityIndex) {
        observation = o
        serverChain = o.serverCertificates?.map { CertificateView(der: $0.der, index: index) }
        clientChain = o.clientCertificates.map { CertificateView(der: $0.der, index: index) }
    }

    enum CodingKeys: String, CodingKey { case serverChain, clientChain }
    func encode(to encoder: any Encoder) throws {
        // The observation's own fields, then the names next to them in the same object.
        try observation.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(serverChain, forKey: .serverChain)
        try c.encode(clientChain, forKey: .clientChain)
    }
}

struct ObservationsView: Encodable, Sendable {
    var server: String
    var connectionsAccepted: Int
    var observations: [ObservationView]
}

/// One pin of a scenario's client under a profile.
struct PinView: Encodable, Sendable {
    var identity: String
    var key: String
    var kind: String
    var base64: String
    var hex: String
}

struct ScenarioPinsView: Encodable, Sendable {
    var scenario: String
    var profile: String
    var expect: String
    var pins: [PinView]
}

/// One identity of the lab PKI.
struct IdentityView: Encodable, Sendable {
    var name: String
    var role: String
    var issuer: String
    var root: String
    var key: String
    var keyType: String
    var subject: String
    var hosts: [String]
    var notBefore: Date
    var notAfter: Date
    var spkiSHA256: String
    var certificateSHA256: String

    init(_ id: Identity) {
        name = id.name
        role = id.role.rawValue
        issuer = id.issuerName
        root = id.rootName
        key = id.keyName
        keyType = id.keyType.rawValue
        subject = id.subject
        hosts = id.hosts
        notBefore = id.notBefore
        notAfter = id.notAfter
        spkiSHA256 = id.pins.spkiBase64
        certificateSHA256 = id.pins.certificateBase64
    }
}

struct HealthView: Encodable, Sendable {
    var status = "ok"
    var engines: [String]
    var scenarios: Int
    var servers: Int
    var pkiDirectory: String
}

/// `POST /batch`: the batch's id, the document a harness reads, which server serves which cell, and the cells left
/// out because their engine cannot serve them exactly.
struct BatchView: Encodable, Sendable {
    struct CellServer: Encodable, Sendable {
        /// The cell's id in the document: `rekey/leaf-spki/openssl`.
        var cell: String
        /// The server's id in this API: `GET /servers/{id}/observations` reads what it saw.
        var server: String
        var port: Int
    }
    struct Unsupported: Encodable, Sendable {
        var cell: String
        var reason: String
    }
    var batch: String
    var document: BatchDocument
    var servers: [CellServer]
    var unsupported: [Unsupported]
}

/// `DELETE /batch/{id}`: the servers it stopped, as they were.
struct StoppedBatchView: Encodable, Sendable {
    var batch: String
    var servers: [ServerView]
}
