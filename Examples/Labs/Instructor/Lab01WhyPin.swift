// Lab 1 — Why pin: the intercepting proxy.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 1 -- Examples/.build/debug/lab-solution 1
import LabKit
import X509

enum Lab01WhyPin: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
