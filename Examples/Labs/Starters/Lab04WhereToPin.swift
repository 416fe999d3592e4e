// Lab 4 — Where to pin: leaf, intermediate or root.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 4 -- Examples/.build/debug/lab-starter 4
import LabKit
import X509

enum Lab04WhereToPin: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // TODO: the pin may sit on the leaf, the intermediate or the root, but only the leaf is hashed. Accept when
        // ANY certificate of the validated chain (leaf first, root last — the root comes from the trust store even
        // though the server did not send it) has its SPKI hash in cell.pins.
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
