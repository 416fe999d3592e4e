// Lab 8 — Hashing the right bytes: SPKI vs the bare key.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 8 -- Examples/.build/debug/lab-starter 8
import LabKit
import X509

enum Lab08HashTheRightBytes: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // TODO: this hashes the bare key (Certificate.PublicKey.subjectPublicKeyInfoBytes is, despite its name, only
        // the BIT STRING's contents — what SecKeyCopyExternalRepresentation returns on Apple platforms). Pins are the
        // SHA-256 of the whole DER SubjectPublicKeyInfo, algorithm identifier included: LabKit.spkiSHA256.
        let got = LabKit.bareKeySHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
