// Lab 7 — Mutual TLS: client certificates.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 7 -- Examples/.build/debug/lab-solution 7
import LabKit
import NIOSSL
import X509

enum Lab07MutualTLS: LabClient {
    static func clientIdentity(cell: Cell) throws -> ClientIdentity? {
        guard !cell.clientPKCS12File.isEmpty else { return nil }
        // The bundle holds the certificate, its issuers and the key, encrypted with the password. (In an app, that
        // password sits in the binary: anyone who unpacks it has the client's identity — see question 3.)
        let bundle = try NIOSSLPKCS12Bundle(
            file: cell.clientPKCS12File, passphrase: Array(cell.clientPKCS12Password.utf8))
        return ClientIdentity(certificateChain: bundle.certificateChain, privateKey: bundle.privateKey)
    }

    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
