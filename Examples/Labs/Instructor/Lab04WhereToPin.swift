// Lab 4 — Where to pin: leaf, intermediate or root.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 4 -- Examples/.build/debug/lab-solution 4
import LabKit
import X509

enum Lab04WhereToPin: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let hashes = try validated.map(LabKit.spkiSHA256)
        if !hashes.contains(where: cell.pins.contains) {
            throw Refusal("pin mismatch: no key of the validated chain is pinned (\(hashes.joined(separator: ", ")))")
        }
    }
}
