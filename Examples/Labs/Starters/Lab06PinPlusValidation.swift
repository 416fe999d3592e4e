// Lab 6 — Pinning adds to validation, never replaces it.  STARTER (the lab's mistake is in place).
// Grade it:  pinlab lab check 6 -- Examples/.build/debug/lab-starter 6
import LabKit
import X509

enum Lab06PinPlusValidation: LabClient {
    static func validate(presented: [Certificate], cell: Cell) async throws -> [Certificate] {
        // TODO: "we pin, so we do not need the CA": nothing is validated here — not the path to a trusted root, not
        // the dates, not the host name. Keep full validation: return try await LabKit.validatedChain(...).
        presented
    }

    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
