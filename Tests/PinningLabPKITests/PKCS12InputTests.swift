import Foundation
import PinningLab
import PinningLabOpenSSL
import Testing

/// PKCS#12 files made by `openssl pkcs12`, the way users bring their own: a file with only a certificate or only a
/// key is a clear error (and, since issue 8, frees what OpenSSL handed back: the key or the certificate alone used
/// to leak on this path).
@Suite("PKCS#12 inputs")
struct PKCS12InputTests {
    @Test(arguments: [["-nokeys"], ["-nocerts"]])
    func aBundleWithoutKeyOrCertificateIsAClearError(_ flags: [String]) async throws {
        let pki = try await SharedPKI.pki()
        let dir = temporaryDirectory("p12-input")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try ChainFiles(try pki.identity("client-valid"), in: dir)
        let key = dir.appendingPathComponent("key.pem").path
        try PEM.encode(try pki.identity("client-valid").privateKeyPKCS8DER, label: "PRIVATE KEY")
            .write(toFile: key, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("half.p12").path
        let r = try await run(
            [
                "openssl", "pkcs12", "-export", "-in", files.cert, "-inkey", key, "-out", out,
                "-passout", "pass:pinninglab",
            ] + flags)
        try #require(r.status == 0, "\(r.output)")
        let data = try Array(Data(contentsOf: URL(fileURLWithPath: out)))
        do {
            _ = try OpenSSLPKCS12.open(data, password: "pinninglab", file: out)
            Issue.record("a PKCS#12 file made with \(flags) opened as if it had both a key and a certificate")
        } catch let e as PKIError {
            #expect(e.code == .pkcs12Failed)
            #expect(e.file == out)
            #expect("\(e)".contains("a key and a certificate are both needed"), "\(e)")
        }
    }
}
