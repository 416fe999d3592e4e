import Foundation
public import PinningLabCore
public import PinningLabModel
import PinningLabPKI
import PinningLabTLSTypes

extension ServerEvidence {
    /// The evidence of the connections one client made: accepted if any of them carried application data.
    public init(_ observations: [Observation]) {
        guard !observations.isEmpty else {
            self = .noConnection
            return
        }
        let o = observations.first { $0.applicationDataReceived } ?? observations.last!
        // close_notify is an orderly end, not a refusal; the level is not part of the evidence.
        func alert(_ a: TLSAlert?) -> TLSAlert? { a.flatMap { $0.isCloseNotify ? nil : TLSAlert(code: $0.code) } }
        self.init(
            connected: true, handshakeCompleted: o.handshakeCompleted,
            applicationDataReceived: o.applicationDataReceived, requestLine: o.requestLine,
            alertReceived: alert(o.alertReceived), alertSent: alert(o.alertSent), serverError: o.error,
            negotiatedVersion: o.tlsVersion?.rawValue, cipherSuite: o.cipherSuite, sni: o.serverName,
            clientCertificateSubject: o.clientCertificateSubject, handshakeMilliseconds: o.handshakeMilliseconds,
            resumption: o.resumption)
        earlyDataBytes = o.earlyDataBytes > 0 ? o.earlyDataBytes : nil
        recordECH(observations, judged: o)
        negotiatedGroup = o.negotiatedGroup
        offered = o.offered
        helloRetryRequest = o.helloRetryRequest == true ? true : nil
        servedCertificateSHA256 = o.servedCertificateSHA256
        servedIdentity = o.serverCertificates == nil ? nil : o.identity
    }
}

extension ServerEvidence {
    /// An ECH offer on the connection judged, and a later connection after a rejected offer that named another host
    /// in clear (no ECH, an SNI other than the outer name): the client fell back to naming its inner host.
    fileprivate mutating func recordECH(_ recorded: [Observation], judged: Observation) {
        echOffered = judged.echOffered == true ? true : nil
        // "Later" is in the order the connections were accepted: a server records a connection when it ends, so a
        // fallback connection that ends first is recorded before the rejected offer it followed.
        let observations = recorded.sorted { $0.id < $1.id }
        guard let offer = observations.firstIndex(where: { $0.echOffered == true }) else { return }
        let outer = observations[offer].serverName
        echClearFallback =
            observations[(offer + 1)...].first {
                $0.echOffered == false && $0.serverName != nil && $0.serverName != outer
            }?.serverName
    }
}
