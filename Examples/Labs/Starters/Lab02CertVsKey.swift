// Lab 2 — Certificate vs public-key pinning.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 2 -- Examples/.build/debug/lab-starter 2
import LabKit
import X509

enum Lab02CertVsKey: LabClient {
    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        // TODO: this pins the whole certificate (cell.certificatePinsHex). A renewal that keeps the key still
        // changes the certificate's bytes, and the app refuses its own server. The policy is key pinning: compare
        // LabKit.spkiSHA256(validated[0]) with cell.pins instead.
        let got = try LabKit.certificateSHA256Hex(validated[0])
        if !cell.certificatePinsHex.contains(got) { throw Refusal("pin mismatch: certificate \(got) is not pinned") }
    }
}
