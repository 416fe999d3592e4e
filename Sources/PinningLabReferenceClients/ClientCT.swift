// A Certificate Transparency check by OpenSSL's own CT code (SSL_enable_ct with SSL_CT_VALIDATION_STRICT and a CT log
// file): the independent "refuses" judge for the lab's SCT scenarios, which `openssl s_client -ct` (permissive in
// OpenSSL 3.0) is not. Strict means at least one SCT, embedded or from the TLS extension, that validates against a
// log of the file; OpenSSL counts no operators, so one valid SCT is enough. It is the reference clients' one client
// context and session (ClientContext, ClientSession: the ATS floor, every OpenSSL call checked) with OpenSSL's CT
// validation turned on instead of the reference clients' own CT decision.
internal import CPinningLabOpenSSL
internal import Foundation
internal import PinningLabCore
internal import PinningLabModel
internal import PinningLabOpenSSL  // the handle owners (Handles.swift)

/// What a strict OpenSSL CT client concluded about one server.
package struct OpenSSLCTVerdict: Sendable, CustomStringConvertible {
    /// The handshake completed: the chain verified and at least one SCT validated.
    package var accepted: Bool
    /// `SCT validation status` of each SCT OpenSSL saw, in its words (`valid`, `invalid`, `unknown log`, …).
    package var statuses: [String]
    /// Why it refused (OpenSSL's verify result and error queue), empty when it accepted.
    package var reason: String
    package var description: String {
        "\(accepted ? "accepted" : "refused") [\(statuses.joined(separator: ", "))]\(reason.isEmpty ? "" : ": \(reason)")"
    }
}

/// The check could not run (an unreadable log file, no connection): no verdict.
package struct OpenSSLCTCheckError: Error, CustomStringConvertible {
    package var description: String
}

/// Which of OpenSSL's own CT policies a connection applies (`SSL_enable_ct`).
enum OpenSSLCTValidation {
    /// At least one SCT that validates against a log of the store, or the handshake fails.
    case strict
    /// Every SCT is validated and reported; none is required.
    case permissive

    var mode: Int32 { Int32(self == .strict ? SSL_CT_VALIDATION_STRICT : SSL_CT_VALIDATION_PERMISSIVE) }
}

package enum OpenSSLCTCheck {
    /// Connects to `ip:port` as `host`, trusting `trustRootsDER` only, with OpenSSL's strict CT policy and the logs of
    /// `ctLogFile` (`ct/ctlogs.cnf` of a lab PKI); sends nothing after the handshake.
    /// `minimumDistinctLogs` nil: OpenSSL's strict policy decides in the handshake (one valid SCT). A number: the
    /// handshake runs with OpenSSL's permissive policy (it still validates every SCT) and the connection is then
    /// refused, before any data, unless valid SCTs come from at least that many distinct logs — the browsers' count.
    package static func handshake(
        ip: String, port: Int, host: String, trustRootsDER: [[UInt8]], ctLogFile: String,
        minimumDistinctLogs: Int? = nil, timeout: Duration = .seconds(5)
    ) throws(OpenSSLCTCheckError) -> OpenSSLCTVerdict {
        do {
            return try run(
                ip: ip, port: port, host: host, trustRootsDER: trustRootsDER, ctLogFile: ctLogFile,
                minimumDistinctLogs: minimumDistinctLogs, timeout: timeout)
        } catch {
            throw OpenSSLCTCheckError(description: error.detail)
        }
    }

    private static func run(
        ip: String, port: Int, host: String, trustRootsDER: [[UInt8]], ctLogFile: String, minimumDistinctLogs: Int?,
        timeout: Duration
    ) throws(ClientFailure) -> OpenSSLCTVerdict {
        let deadline = ClientDeadline(after: timeout)
        let target = ClientTarget(
            host: host, ip: ip, port: port, trustRootsDER: trustRootsDER, pins: .empty, scenario: "openssl-ct",
            profile: .none, timeout: timeout)
        // The log file is read first: an unreadable one is an error, not a verdict, whether or not a server answers.
        let context = try ClientContext.withCTLogs(for: target, ctLogFile: ctLogFile)
        // No pins, no revocation: the verify callback validates the chain and the host name, nothing else.
        let state = ClientVerifyState(policy: ClientPolicy(mistake: .none, pins: .empty))
        context.prepare(state)
        return try withExtendedLifetime(state) { () throws(ClientFailure) -> OpenSSLCTVerdict in
            let socket = try ClientSocket(ip: ip, port: port, deadline: deadline)
            let session = try ClientSession(
                context: context, socket: socket, host: host, state: state, deadline: deadline,
                openSSLCT: minimumDistinctLogs == nil ? .strict : .permissive)
            var accepted = true
            var failure = ""
            do throws(ClientTLSStop) {
                _ = try session.drive { SSL_connect($0) }
            } catch {
                switch error {
                case .transport(let transport) where transport.category == .timeout:
                    throw ClientFailure(category: .timeout, detail: "timed out in the handshake")
                case .transport(let transport): failure = transport.detail
                case .closed: failure = "the server closed the connection"
                case .failed(_, let errors): failure = errors
                }
                accepted = false
            }
            var statuses: [String] = []
            var validLogs: Set<[UInt8]> = []
            if let scts = SSL_get0_peer_scts(session.ssl) {
                for i in 0..<cpl_ct_sk_SCT_num(scts) {
                    guard let sct = cpl_ct_sk_SCT_value(scts, i) else { continue }
                    statuses.append(SCT_validation_status_string(sct).map { String(cString: $0) } ?? "?")
                    var id: UnsafeMutablePointer<UInt8>? = nil
                    let length = SCT_get0_log_id(sct, &id)
                    if SCT_get_validation_status(sct) == SCT_VALIDATION_STATUS_VALID, let id, length > 0 {
                        validLogs.insert(Array(UnsafeBufferPointer(start: id, count: Int(length))))
                    }
                }
            }
            var reason = ""
            if accepted, let minimum = minimumDistinctLogs, validLogs.count < minimum {
                accepted = false
                reason =
                    "valid SCTs from \(validLogs.count) distinct log(s), fewer than the \(minimum) the policy requires"
                _ = SSL_shutdown(session.ssl)
                try? session.flush()
            }
            if !accepted && reason.isEmpty {
                let verify = SSL_get_verify_result(session.ssl)
                let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "?"
                reason = "verify result \(verify) (\(text)); \(failure)"
            }
            ERR_clear_error()
            return OpenSSLCTVerdict(accepted: accepted, statuses: statuses, reason: reason)
        }
    }
}
