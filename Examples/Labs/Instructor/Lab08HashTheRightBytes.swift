// Lab 8 — Hashing the right bytes: SPKI vs the bare key.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 8 -- Examples/.build/debug/lab-solution 8
import LabKit
import X509

enum Lab08HashTheRightBytes: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // DER.Serializer over certificate.publicKey gives the whole SubjectPublicKeyInfo (see LabKit.spkiSHA256).
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
