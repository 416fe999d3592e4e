// Lab 7 — Mutual TLS: client certificates.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 7 -- Examples/.build/debug/lab-starter 7
import LabKit
import NIOSSL
import X509

enum Lab07MutualTLS: LabClient {
    static func clientIdentity(cell: Cell) throws -> ClientIdentity? {
        // TODO: the server requires a client certificate and this client never presents one. When the cell gives
        // one, load the PKCS#12 bundle cell.clientPKCS12File with the password cell.clientPKCS12Password
        // (NIOSSLPKCS12Bundle) and return its certificate chain and private key.
        nil
    }

    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
