// Lab 5 — Chain stuffing and name collisions.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 5 -- Examples/.build/debug/lab-solution 5
import LabKit
import X509

enum Lab05ChainStuffing: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // Only the validated chain proves anything; extra certificates on the wire are ignored, and a twin with a
        // copied name has another key.
        let hashes = try validated.map(LabKit.spkiSHA256)
        if !hashes.contains(where: cell.pins.contains) {
            throw Refusal("pin mismatch: no key of the validated chain is pinned (\(hashes.joined(separator: ", ")))")
        }
    }
}
