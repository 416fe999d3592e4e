internal import Foundation
// Revocation status a reference client fetches itself, for every certificate of the verified chain below the
// trust anchor (the leaf only when the server stapled nothing for it): the OCSP responder the certificate names in
// its Authority Information Access, then the CRL its distribution point names, both over plain HTTP from the lab's
// responder (the only place the lab's `ocsp.pinning.test` / `crl.pinning.test` names lead).
internal import PinningLabCore
internal import PinningLabModel
internal import PinningLabPKI

enum ClientRevocationFetch {
    /// What the fetched status decided: a verdict, or nothing usable (with why, for the refusal's detail).
    enum Decision {
        case good(String)
        case revoked(String)
        case unavailable(String)
    }

    /// The whole fetch for the certificate at `index` of the chain (0: the leaf), issued by the next one: OCSP when
    /// it names a responder (a current, validly signed answer decides), else or then the CRL (a current CRL signed
    /// by its issuer decides). `nil` when it names neither.
    static func decide(_ chain: RevocationChain, index: Int = 0, responder: String?, deadline: ClientDeadline)
        -> Decision?
    {
        var problems: [String] = []
        let ocspURL = chain.ocspURL(index: index)
        let crlURL = chain.crlURL(index: index)
        if ocspURL == nil && crlURL == nil { return nil }
        if let ocspURL {
            if let request = chain.ocspRequest(index: index) {
                switch fetch(ocspURL, body: request, responder: responder, deadline: deadline) {
                case .failure(let why): problems.append("OCSP \(ocspURL): \(why)")
                case .success(let der):
                    switch chain.ocspEvidence(der, index: index) {
                    case .good: return .good("the OCSP responder at \(ocspURL) says good")
                    case .revoked: return .revoked("the OCSP responder at \(ocspURL) says the certificate is revoked")
                    case let evidence: problems.append("OCSP \(ocspURL): \(evidence.fetchedOCSPProblem)")
                    }
                }
            } else {
                problems.append("no OCSP request could be made for the certificate")
            }
        }
        if let crlURL {
            switch fetch(crlURL, body: nil, responder: responder, deadline: deadline) {
            case .failure(let why): problems.append("CRL \(crlURL): \(why)")
            case .success(let der):
                switch chain.crlEvidence(der, index: index) {
                case .good: return .good("the CRL at \(crlURL) does not list the certificate")
                case .revoked: return .revoked("the CRL at \(crlURL) lists the certificate as revoked")
                case let evidence: problems.append("CRL \(crlURL): \(evidence.fetchedCRLProblem)")
                }
            }
        }
        return .unavailable(problems.joined(separator: "; "))
    }

    /// GET (no body) or POST an OCSP request to `url`, whose host must be one of the lab's revocation hosts: they
    /// resolve to `responder` only. At most 1 MiB; HTTP 200 only.
    static func fetch(_ url: String, body: [UInt8]?, responder: String?, deadline: ClientDeadline) -> Result<
        [UInt8], FetchFailure
    > {
        guard url.hasPrefix("http://") else { return .failure(FetchFailure("only http:// URLs are fetched")) }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        let host = authority.split(separator: ":").first.map(String.init) ?? ""
        guard [RevocationHosts.ocsp, RevocationHosts.crl].contains(host.lowercased()) else {
            return .failure(FetchFailure("cannot resolve \(host): only the lab's revocation hosts are reached"))
        }
        guard let responder, let colon = responder.lastIndex(of: ":"),
            let port = Int(responder[responder.index(after: colon)...])
        else {
            return .failure(FetchFailure("cannot resolve \(host): no lab responder serves this scenario"))
        }
        let ip = responder[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        do {
            let socket = try ClientSocket(ip: ip, port: port, deadline: deadline)
            var head =
                "\(body == nil ? "GET" : "POST") \(path.isEmpty ? "/" : path) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n"
            if let body { head += "Content-Type: application/ocsp-request\r\nContent-Length: \(body.count)\r\n" }
            try socket.sendAll(Array((head + "\r\n").utf8) + (body ?? []), deadline: deadline)
            var reply: [UInt8] = []
            while true {
                let got = try socket.receive(deadline: deadline)
                if got.isEmpty { break }
                reply += got
                if reply.count > 1 << 20 { return .failure(FetchFailure("the answer is over 1 MiB")) }
            }
            guard
                let end = reply.indices.first(where: { i in
                    i + 3 < reply.count && reply[i..<i + 4].elementsEqual([13, 10, 13, 10])
                })
            else {
                return .failure(FetchFailure("the answer is not HTTP"))
            }
            let statusLine = String(decoding: reply.prefix { $0 != 13 }, as: UTF8.self)
            guard statusLine.split(separator: " ").dropFirst().first == "200" else {
                return .failure(FetchFailure("answered \(statusLine)"))
            }
            return .success(Array(reply[(end + 4)...]))
        } catch {
            return .failure(FetchFailure(error.detail))
        }
    }

    struct FetchFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
