// Lab 3 — Rotation without an outage.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 3 -- Examples/.build/debug/lab-starter 3
import LabKit
import X509

enum Lab03Rotation: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard let first = cell.pins.first else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        // TODO: the app ships today's pin and a backup pin, but only the first one is honoured. Accept the server
        // when its key matches ANY pin of cell.pins.
        if got != first { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
