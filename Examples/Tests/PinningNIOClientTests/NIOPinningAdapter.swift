// How a swift-nio-ssl client plugs into PinningLab: the scenario server hands over the trust roots, the pins of a
// profile and the client identity as Swift values; the client connects to `localhost` on the server's port.
import PinningLabTesting
import PinningNIOClient

extension PinningHTTPSClient {
    /// The client an app built for `server`'s scenario would hold under `profile`: its pins, where they are
    /// declared for the host it asks for (`pinsApply`; pins declared for other hosts are not configured).
    init(for server: ScenarioServer, profile: PinProfile, pinMatching: PinMatching = .validatedChain) throws {
        let pins = server.pinsApply ? Set(try server.pins(profile).nioPins) : []
        try self.init(
            trustRootsDER: server.trustRootsDER, pins: pins, pinMatching: pinMatching,
            clientIdentity: server.clientCredentials.map {
                ClientIdentity(certificateChainDER: $0.certificateChainDER, privateKeyPKCS8DER: $0.privateKeyPKCS8DER)
            },
            timeout: .seconds(5))
    }
}

extension PinSet {
    var nioPins: [PinningHTTPSClient.Pin] {
        hashes.map { kind == .certificateSHA256 ? .certificateSHA256($0) : .spkiSHA256($0) }
    }
}

/// The same client as a `PinningClient`, so that `Lab.check` can run it through the whole catalogue at once.
struct NIOPinningClient: PinningClient {
    var pinMatching: PinningHTTPSClient.PinMatching = .validatedChain
    var name: String { pinMatching == .validatedChain ? "swift-nio-ssl" : "swift-nio-ssl-presented-chain" }

    func run(_ target: ClientTarget) async -> ClientOutcome {
        do {
            let client = try PinningHTTPSClient(
                trustRootsDER: target.trustRootsDER, pins: target.pinsApply ? Set(target.pins.nioPins) : [],
                pinMatching: pinMatching,
                clientIdentity: target.clientCredentials.map {
                    .init(certificateChainDER: $0.certificateChainDER, privateKeyPKCS8DER: $0.privateKeyPKCS8DER)
                },
                timeout: target.timeout)
            let response = try await client.get(host: target.host, port: target.port, address: target.ip)
            return .accepted(response.statusLine)
        } catch let e as PinningClientError {
            return .refused(.init(rawValue: e.refusal.category), e.refusal.detail)
        } catch {
            return .refused(.other, "\(error)")
        }
    }
}
