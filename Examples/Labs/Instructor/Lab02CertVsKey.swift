// Lab 2 — Certificate vs public-key pinning.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 2 -- Examples/.build/debug/lab-solution 2
import LabKit
import X509

enum Lab02CertVsKey: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // The key survives a renewal that keeps it; the certificate's bytes do not.
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
