// A Certificate Transparency check by OpenSSL's own CT code (SSL_CTX_enable_ct with SSL_CT_VALIDATION_STRICT and a
// CT log file): the independent "refuses" judge for the lab's SCT scenarios, which `openssl s_client -ct` (permissive
// in OpenSSL 3.0) is not. Strict means at least one SCT, embedded or from the TLS extension, that validates against
// a log of the file; OpenSSL counts no operators, so one valid SCT is enough.
internal import CPinningLabOpenSSL
internal import PinningLabOpenSSL  // the handle owners (Handles.swift)
internal import PinningLabCore
internal import Foundation

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
            return try run(ip: ip, port: port, host: host, trustRootsDER: trustRootsDER, ctLogFile: ctLogFile,
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
        ERR_clear_error()
        guard let handle = SSLContextHandle(server: false) else {
            throw ClientFailure(category: .other, detail: "SSL_CTX_new failed: \(openSSLErrorQueue())")
        }
        let ctx = handle.pointer
        guard let store = X509_STORE_new() else {
            throw ClientFailure(category: .other, detail: "X509_STORE_new failed: \(openSSLErrorQueue())")
        }
        SSL_CTX_set_cert_store(ctx, store)  // the context owns the store
        for (i, der) in trustRootsDER.enumerated() {
            guard let root = X509Handle(der: der), X509_STORE_add_cert(store, root.pointer) == 1 else {
                throw ClientFailure(category: .other, detail: "trustRootsDER[\(i)]: \(openSSLErrorQueue())")
            }
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_set_ctlog_list_file(ctx, ctLogFile) == 1 else {
            throw ClientFailure(category: .other, detail: "\(ctLogFile): not a CT log file OpenSSL can read: \(openSSLErrorQueue())")
        }
        guard SSL_CTX_enable_ct(
            ctx, Int32(minimumDistinctLogs == nil ? SSL_CT_VALIDATION_STRICT : SSL_CT_VALIDATION_PERMISSIVE)) == 1 else {
            throw ClientFailure(category: .other, detail: "SSL_CTX_enable_ct: \(openSSLErrorQueue())")
        }
        let socket = try ClientSocket(ip: ip, port: port, deadline: deadline)
        guard let ssl = SSL_new(ctx) else { throw ClientFailure(category: .other, detail: "SSL_new: \(openSSLErrorQueue())") }
        defer { SSL_free(ssl) }
        _ = cpl_client_set_tlsext_host_name(ssl, host)
        _ = SSL_set1_host(ssl, host)
        _ = SSL_set_fd(ssl, socket.descriptor)
        var accepted = false
        while true {
            let rc = SSL_connect(ssl)
            if rc == 1 {
                accepted = true
                break
            }
            let e = SSL_get_error(ssl, rc)
            let wanted: Int16
            if e == SSL_ERROR_WANT_READ { wanted = Int16(POLLIN) } else if e == SSL_ERROR_WANT_WRITE { wanted = Int16(POLLOUT) } else { break }
            guard try ClientSocket.waitFor(socket.descriptor, events: wanted, deadline: deadline) else {
                throw ClientFailure(category: .timeout, detail: "timed out in the handshake")
            }
        }
        var statuses: [String] = []
        var validLogs: Set<[UInt8]> = []
        if let scts = SSL_get0_peer_scts(ssl) {
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
            reason = "valid SCTs from \(validLogs.count) distinct log(s), fewer than the \(minimum) the policy requires"
            _ = SSL_shutdown(ssl)
        }
        if !accepted && reason.isEmpty {
            let verify = SSL_get_verify_result(ssl)
            reason = "verify result \(verify) (\(String(cString: X509_verify_cert_error_string(verify)))); \(openSSLErrorQueue())"
        }
        ERR_clear_error()
        return OpenSSLCTVerdict(accepted: accepted, statuses: statuses, reason: reason)
    }
}
