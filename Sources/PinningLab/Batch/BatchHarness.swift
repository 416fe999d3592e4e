import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// The client of a batch run: a command run once with the whole document, or Swift code in this process.
public enum BatchHarness: Sendable {
    /// Run once; the document arrives on standard input and as the file named by `$PINLAB_BATCH`. Its standard
    /// output must hold one ``BatchResult`` line per cell and nothing else (logs go to standard error).
    case command(name: String?, arguments: [String])
    /// Swift code judging every cell of the document in this process (a template for an XCTest in the Simulator).
    case inProcess(name: String, run: @Sendable (BatchDocument) async -> [BatchResult])

    public var name: String {
        switch self {
        case .command(let name, let args):
            return name ?? args.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "batch"
        case .inProcess(let name, _): return name
        }
    }
}
