// Lab 3 — Rotation without an outage.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 3 -- Examples/.build/debug/lab-solution 3
import LabKit
import X509

enum Lab03Rotation: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // A pin set: any one is enough. The backup pin lets the server re-key without an outage.
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
