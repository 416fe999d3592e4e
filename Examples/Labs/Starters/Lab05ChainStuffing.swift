// Lab 5 — Chain stuffing and name collisions.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 5 -- Examples/.build/debug/lab-starter 5
import LabKit
import X509

enum Lab05ChainStuffing: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // TODO: this looks for a pinned key among the certificates the server SENT. A proxy can append the genuine,
        // public certificates after its own leaf. Check the pins against `validated` — the chain the verifier built
        // from the leaf to a trusted root — instead.
        let hashes = try presented.map(LabKit.spkiSHA256)
        if !hashes.contains(where: cell.pins.contains) {
            throw Refusal("pin mismatch: no key the server sent is pinned")
        }
    }
}
