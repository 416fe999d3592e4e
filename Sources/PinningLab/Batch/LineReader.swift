import Foundation
import PinningLabBase
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// Reads the complete lines appended to a file since the last call.
final class LineReader: Sendable {
    private struct Position {
        var offset: UInt64 = 0
        var pending = Data()
        var lineNumber = 0
    }
    private let path: String
    private let position = Locked(Position())

    init(path: String) { self.path = path }

    /// New complete lines with their numbers (from 1); with `final`, a last line without a newline too.
    func newLines(final: Bool = false) -> [(Int, String)] {
        position.withLock { p in
            if let h = FileHandle(forReadingAtPath: path) {
                defer { try? h.close() }
                try? h.seek(toOffset: p.offset)
                if let data = try? h.readToEnd(), !data.isEmpty {
                    p.pending.append(data)
                    p.offset += UInt64(data.count)
                }
            }
            var out: [(Int, String)] = []
            while let nl = p.pending.firstIndex(of: 0x0A) {
                p.lineNumber += 1
                out.append((p.lineNumber, String(decoding: p.pending[p.pending.startIndex..<nl], as: UTF8.self)))
                p.pending = Data(p.pending[p.pending.index(after: nl)...])
            }
            if final, !p.pending.isEmpty {
                p.lineNumber += 1
                out.append((p.lineNumber, String(decoding: p.pending, as: UTF8.self)))
                p.pending = Data()
            }
            return out
        }
    }
}
