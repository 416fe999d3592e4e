import Foundation
import PinningLab
import PinningLabPKI
import PinningLabTestSupport
import Testing

/// The lab's OCSP responder and CRL server, judged by `openssl ocsp -url`, `curl` and `openssl crl`, and fed bad
/// requests from the attacker's side.
@Suite("The lab OCSP responder and CRL server")
struct RevocationResponderTests {
    /// PEM files for `openssl`: the root, an issuer and a certificate.
    private struct Files {
        var dir: URL
        var root: String
        var issuer: String
        var cert: String

        init(_ pki: LabPKI, cert name: String, issuer issuerName: String? = nil) throws {
            dir = temporaryDirectory("responder")
            let id = try pki.identity(name)
            let issuer = try pki.identity(issuerName ?? id.issuerName)
            root = dir.appendingPathComponent("root.pem").path
            self.issuer = dir.appendingPathComponent("issuer.pem").path
            cert = dir.appendingPathComponent("cert.pem").path
            try pem(id.rootDER).write(toFile: root, atomically: true, encoding: .utf8)
            try pem(issuer.certificateDER).write(toFile: self.issuer, atomically: true, encoding: .utf8)
            try pem(id.certificateDER).write(toFile: cert, atomically: true, encoding: .utf8)
        }
    }

    @Test(
        "openssl ocsp -url gets good, revoked and unauthorized as the PKI says; each request is recorded",
        .requires("openssl"))
    func ocspOverHTTP() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let url = responder.baseURL + "/lab-intermediate-a"
        for (name, status) in [("leaf-ocsp", "cert.pem: good"), ("leaf-k1-revoked", "cert.pem: revoked")] {
            let f = try Files(pki, cert: name)
            let r = try await run([
                "openssl", "ocsp", "-no_nonce", "-issuer", f.issuer, "-cert", f.cert, "-url", url,
                "-CAfile", f.root,
            ])
            #expect(r.status == 0, "\(name): \(r.output)")
            #expect(r.output.contains("Response verify OK"), "\(name): \(r.output)")
            #expect(r.stdout.contains(status), "\(name): \(r.output)")
        }
        // Asked with another CA as the issuer: a CertID no lab CA issued.
        let wrong = try Files(pki, cert: "leaf-ocsp", issuer: "lab-intermediate-b")
        let r = try await run([
            "openssl", "ocsp", "-no_nonce", "-issuer", wrong.issuer, "-cert", wrong.cert, "-url", url,
            "-CAfile", wrong.root,
        ])
        #expect(r.output.contains("unauthorized"), "\(r.output)")

        let seen = responder.requests
        #expect(seen.map(\.kind) == [.ocsp, .ocsp, .ocsp])
        #expect(seen.map(\.answer) == ["good", "revoked", "unauthorized"])
        #expect(seen.map(\.subject) == ["leaf-ocsp", "leaf-k1-revoked", nil])
        let serials = try ["leaf-ocsp", "leaf-k1-revoked"].map { try pki.identity($0).serialHex.lowercased() }
        #expect(seen.prefix(2).map { $0.serialHex ?? "" } == serials.map { String($0.drop(while: { $0 == "0" })) })
        #expect(seen.allSatisfy { $0.method == "POST" && $0.path == "/lab-intermediate-a" && $0.status == 200 })
    }

    @Test(
        "a request whole on arrival and one in two pieces are both answered; the same request within a second gets the same response",
        .requires("openssl", "python3"))
    func answeredAtOnceOrOnAThread() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let f = try Files(pki, cert: "leaf-ocsp")
        let request = f.dir.appendingPathComponent("req.der").path
        let made = try await run([
            "openssl", "ocsp", "-no_nonce", "-issuer", f.issuer, "-cert", f.cert, "-reqout", request,
        ])
        #expect(made.status == 0, "\(made.output)")
        // Three requests sent whole (answered on the accepting thread), then one whose body follows its head later
        // (a connection thread waits for it). Each response is written to a file of its own.
        let script = """
            import socket, sys, time
            body = open(sys.argv[1], "rb").read()
            head = (f"POST /lab-intermediate-a HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                    f"Content-Type: application/ocsp-request\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n").encode()
            def ask(pieces):
                s = socket.create_connection(("127.0.0.1", \(responder.port)), timeout=10)
                for i, piece in enumerate(pieces):
                    if i: time.sleep(0.3)
                    s.sendall(piece)
                data = b""
                while chunk := s.recv(65536): data += chunk
                s.close()
                status, _, rest = data.partition(b"\\r\\n\\r\\n")
                return status.split(b" ")[1].decode(), rest
            answers = [ask([head + body]) for _ in range(3)] + [ask([head, body])]
            for i, (status, der) in enumerate(answers):
                open(f"{sys.argv[2]}/r{i}.der", "wb").write(der)
            print(" ".join(status for status, _ in answers))
            # Three requests within a few milliseconds span at most one second's boundary.
            print("same" if answers[0][1] == answers[1][1] or answers[1][1] == answers[2][1] else "different")
            """
        let py = try await run(["python3", "-c", script, request, f.dir.path], timeout: 30)
        #expect(py.stdout == "200 200 200 200\nsame\n", "\(py.output)")
        for i in 0..<4 {
            let r = try await run([
                "openssl", "ocsp", "-respin", f.dir.appendingPathComponent("r\(i).der").path, "-issuer", f.issuer,
                "-cert", f.cert, "-CAfile", f.root, "-no_nonce",
            ])
            #expect(r.output.contains("Response verify OK") && r.stdout.contains("cert.pem: good"), "\(i): \(r.output)")
        }
        #expect(responder.requests.count == 4, "every request is recorded, answered again or not")
        #expect(responder.requests.allSatisfy { $0.answer == "good" && $0.status == 200 })
    }

    @Test("the GET form (base64 request in the path) answers as POST does", .requires("openssl", "curl"))
    func ocspGet() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let f = try Files(pki, cert: "leaf-k1-revoked")
        let req = f.dir.appendingPathComponent("req.der").path
        let made = try await run(["openssl", "ocsp", "-no_nonce", "-issuer", f.issuer, "-cert", f.cert, "-reqout", req])
        #expect(made.status == 0, "\(made.output)")
        let b64 = try Data(contentsOf: URL(fileURLWithPath: req)).base64EncodedString()
        let escaped = b64.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let resp = f.dir.appendingPathComponent("resp.der").path
        let got = try await run([
            "curl", "-sS", "--fail", "-o", resp, responder.baseURL + "/lab-intermediate-a/" + escaped,
        ])
        #expect(got.status == 0, "\(got.output)")
        let r = try await run([
            "openssl", "ocsp", "-respin", resp, "-issuer", f.issuer, "-cert", f.cert, "-CAfile", f.root,
        ])
        #expect(r.stdout.contains("cert.pem: revoked"), "\(r.output)")
        #expect(responder.requests.map(\.method) == ["GET"])
        #expect(responder.requests.first?.answer == "revoked")
    }

    @Test(
        "curl fetches the CRL at its distribution point's path and openssl crl verifies it",
        .requires("openssl", "curl"))
    func crlOverHTTP() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let f = try Files(pki, cert: "leaf-k1-revoked")
        let crl = f.dir.appendingPathComponent("a.crl").path
        let got = try await run(["curl", "-sS", "--fail", "-o", crl, responder.baseURL + "/lab-intermediate-a.crl"])
        #expect(got.status == 0, "\(got.output)")
        let chain = f.dir.appendingPathComponent("chain.pem").path
        try
            (pem(try pki.identity("lab-intermediate-a").certificateDER)
            + pem(try pki.identity("leaf-k1-revoked").rootDER))
            .write(toFile: chain, atomically: true, encoding: .utf8)
        let v = try await run(["openssl", "crl", "-inform", "DER", "-in", crl, "-CAfile", chain, "-noout", "-text"])
        #expect(v.status == 0, "\(v.output)")
        #expect(v.output.contains("verify OK"), "\(v.output)")
        let serial = try pki.identity("leaf-k1-revoked").serialHex.uppercased()
        #expect(
            v.stdout.replacingOccurrences(of: ":", with: "").uppercased().contains(
                String(serial.drop(while: { $0 == "0" }))),
            "\(v.output)")
        #expect(responder.requests.map(\.kind) == [.crl])
        #expect(responder.requests.first?.subject == "lab-intermediate-a")
        // A leaf's name, or a CA the lab does not have: 404.
        for path in ["/leaf-ocsp.crl", "/nobody.crl", "/", "/lab-intermediate-a"] {
            let r = try await run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", responder.baseURL + path])
            #expect(r.stdout == "404", "\(path): \(r.output)")
        }
    }

    @Test(
        "as an HTTP proxy for the lab's revocation hosts only: lab-root's CRL lists the revoked intermediate",
        .requires("openssl", "curl"))
    func absoluteFormForTheLabHostsOnly() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let f = try Files(pki, cert: "lab-intermediate-crl-revoked")
        let crl = f.dir.appendingPathComponent("root.crl").path
        // curl -x sends the absolute form (GET http://crl.pinning.test/lab-root.crl), as the JDK does with http.proxyHost.
        let got = try await run([
            "curl", "-sS", "--fail", "--noproxy", "", "-x", responder.baseURL, "-o", crl,
            "http://crl.pinning.test/lab-root.crl",
        ])
        #expect(got.status == 0, "\(got.output)")
        let v = try await run(["openssl", "crl", "-inform", "DER", "-in", crl, "-CAfile", f.root, "-noout", "-text"])
        #expect(v.output.contains("verify OK"), "\(v.output)")
        let serial = try pki.identity("lab-intermediate-crl-revoked").serialHex.uppercased()
        #expect(
            v.stdout.replacingOccurrences(of: ":", with: "").uppercased().contains(
                String(serial.drop(while: { $0 == "0" }))),
            "\(v.output)")
        #expect(v.stdout.contains("Key Compromise"), "\(v.output)")
        #expect(responder.requests.map(\.subject) == ["lab-root"])
        #expect(responder.requests.first?.path == "/lab-root.crl")
        // The OCSP host's absolute form too; anything else is no relay: 400 (another host, another port).
        for (url, status) in [
            ("http://OCSP.pinning.test:80/lab-intermediate-a.crl", "200"), ("http://example.com/", "400"),
            ("http://crl.pinning.test:8080/lab-root.crl", "400"), ("http://127.0.0.1/lab-root.crl", "400"),
            ("http://crl.pinning.test@example.com/lab-root.crl", "400"),
        ] {
            let r = try await run([
                "curl", "-s", "--noproxy", "", "-x", responder.baseURL, "-o", "/dev/null", "-w", "%{http_code}", url,
            ])
            #expect(r.stdout == status, "\(url): \(r.output)")
        }
        // CONNECT (curl -x with an https URL) gets no tunnel.
        let connect = try await run([
            "curl", "-s", "--noproxy", "", "-x", responder.baseURL, "-o", "/dev/null", "-w", "%{http_connect}",
            "https://crl.pinning.test/lab-root.crl",
        ])
        #expect(connect.stdout != "200" && connect.status != 0, "\(connect.output)")
    }

    @Test(
        "oversized, malformed and hostile requests get 4xx and the responder keeps answering",
        .requires("curl", "python3"))
    func hostileRequests() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki, readTimeout: .seconds(2))
        defer { responder.stop() }
        let dir = temporaryDirectory("responder-hostile")
        let big = dir.appendingPathComponent("big").path
        try Data(repeating: 0x30, count: 100_000).write(to: URL(fileURLWithPath: big))
        let junk = dir.appendingPathComponent("junk").path
        try Data("not an OCSP request".utf8).write(to: URL(fileURLWithPath: junk))
        let truncated = dir.appendingPathComponent("truncated").path
        try Data([0x30, 0x82, 0xFF, 0xFF, 0x30]).write(to: URL(fileURLWithPath: truncated))
        func code(_ extra: [String]) async throws -> String {
            try await run(
                ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/ocsp-request"]
                    + extra
            ).stdout
        }
        let url = responder.baseURL + "/lab-intermediate-a"
        #expect(try await code(["--data-binary", "@" + big, url]) == "413")
        #expect(try await code(["--data-binary", "@" + junk, url]) == "400")
        #expect(try await code(["--data-binary", "@" + truncated, url]) == "400")
        #expect(try await code(["-H", "X-Big: " + String(repeating: "a", count: 9000), url]) == "431")
        #expect(try await code(["-X", "DELETE", url]) == "405")
        #expect(try await code(["-H", "Transfer-Encoding: chunked", "--data-binary", "@" + junk, url]) == "411")
        // A bad request line, a NUL in the head, a head that never ends: answered (or closed), never a crash.
        let script = """
            import socket, sys
            def ask(data, wait=5):
                s = socket.create_connection(("127.0.0.1", \(responder.port)), timeout=wait)
                s.sendall(data)
                try:
                    return s.recv(64).split(b" ")[1].decode()
                except Exception:
                    return "closed"
                finally:
                    s.close()
            print(ask(b"HELLO\\r\\n\\r\\n"), ask(b"GET /\\x00 HTTP/1.1\\r\\n\\r\\n"), ask(b"GET / HTTP/1.1\\r\\nX: y"))
            """
        let py = try await run(["python3", "-c", script], timeout: 20)
        #expect(py.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "400 400 408", "\(py.output)")
        // Still alive.
        let f = try await run([
            "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", responder.baseURL + "/lab-intermediate-a.crl",
        ])
        #expect(f.stdout == "200", "\(f.output)")
    }

    @Test(
        "what a web page sends is refused and not recorded: a DNS-rebound Host, an Origin; revocation clients are answered",
        .requires("curl", "python3"))
    func webPagesAreRefused() async throws {
        let pki = try await SharedPKI.pki()
        let responder = try RevocationResponder(pki: pki)
        defer { responder.stop() }
        let port = responder.port
        func code(_ args: [String]) async throws -> String {
            try await run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "*"] + args).stdout
        }
        let crl = "/lab-root.crl"
        // A page on attacker.example whose name now resolves to 127.0.0.1 (DNS rebinding), or any page's request.
        for refused in [
            ["--resolve", "attacker.example:\(port):127.0.0.1", "http://attacker.example:\(port)\(crl)"],
            ["-H", "Origin: null", responder.baseURL + crl],
            [
                "-H", "Origin: http://attacker.example", "-H", "Content-Type: text/plain", "--data-binary", "x",
                responder.baseURL + "/lab-intermediate-a",
            ],
            ["-H", "Host: ocsp.pinning.test:8080", responder.baseURL + crl],
            ["-H", "Host: 127.0.0.1.:\(port)", responder.baseURL + crl],
        ] {
            #expect(try await code(refused) == "403", "\(refused)")
        }
        #expect(responder.requests.isEmpty, "refused requests are not a client's: \(responder.requests)")
        // The names a revocation client uses, with the bound port, 80 or none.
        for answered in [
            [responder.baseURL + crl], ["http://localhost:\(port)\(crl)"],
            ["--resolve", "crl.pinning.test:\(port):127.0.0.1", "http://crl.pinning.test:\(port)\(crl)"],
            ["-H", "Host: CRL.pinning.test", responder.baseURL + crl],
            ["-H", "Host: [::1]:\(port)", responder.baseURL + crl],
            ["--noproxy", "", "-x", responder.baseURL, "http://crl.pinning.test\(crl)"],
        ] {
            #expect(try await code(answered) == "200", "\(answered)")
        }
        // An HTTP/1.0 client that sends no Host is answered; two Host headers (one of them foreign) are not.
        let script = """
            import socket
            def ask(head):
                s = socket.create_connection(("127.0.0.1", \(port)), timeout=10)
                s.sendall(head)
                print(s.recv(64).split(b" ")[1].decode())
            ask(b"GET \(crl) HTTP/1.0\\r\\n\\r\\n")
            ask(b"GET \(crl) HTTP/1.1\\r\\nHost: localhost:\(port)\\r\\nHost: attacker.example\\r\\n\\r\\n")
            """
        let py = try await run(["python3", "-c", script], timeout: 20)
        #expect(py.stdout.split(separator: "\n") == ["200", "403"], "\(py.output)")
        #expect(responder.requests.count == 7)
    }

    @Test("the responder binds loopback only")
    func loopbackOnly() async throws {
        let pki = try await SharedPKI.pki()
        #expect(throws: (any Error).self) { _ = try RevocationResponder(pki: pki, host: "0.0.0.0") }
    }
}
