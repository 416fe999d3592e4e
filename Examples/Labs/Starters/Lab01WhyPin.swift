// Lab 1 — Why pin: the intercepting proxy.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 1 -- Examples/.build/debug/lab-starter 1
import LabKit
import X509

enum Lab01WhyPin: LabClient {
    // validate(): the default, full validation against the cell's roots — which include a proxy's root when the
    // user installed one.

    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        // TODO: nothing checks the pins, so any certificate the device trusts is accepted — the proxy's too.
        // When cell.pins is not empty, refuse (throw Refusal("pin mismatch: ...")) unless the SPKI hash of the
        // leaf (LabKit.spkiSHA256(validated[0])) is one of cell.pins.
    }
}
