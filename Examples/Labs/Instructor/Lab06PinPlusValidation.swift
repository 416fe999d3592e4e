// Lab 6 — Pinning adds to validation, never replaces it.  REFERENCE SOLUTION (instructors only).
// Grade it:  pinlab lab check 6 -- Examples/.build/debug/lab-solution 6
import LabKit
import X509

enum Lab06PinPlusValidation: LabClient {
    static func validate(presented: [Certificate], cell: Cell) async throws -> [Certificate] {
        // Validation first (trusted path, dates, host name); the pin then narrows what validation allowed.
        try await LabKit.validatedChain(presented: presented, cell: cell)
    }

    static func checkPins(presented: [Certificate], validated: [Certificate], cell: Cell) throws {
        guard !cell.pins.isEmpty else { return }
        let got = try LabKit.spkiSHA256(validated[0])
        if !cell.pins.contains(got) { throw Refusal("pin mismatch: the server's key \(got) is not pinned") }
    }
}
