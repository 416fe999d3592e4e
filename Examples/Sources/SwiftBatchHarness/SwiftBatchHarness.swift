// A PinningLab batch harness in Swift: reads the batch document (`pinlab check --print-schema batch-in`), judges
// every cell with the swift-nio-ssl pinning client, and answers one JSON line per cell
// (`pinlab check --print-schema batch-out`).
//
// It uses Foundation, SwiftASN1 (PEM) and the client only — not PinningLab — so it is the template for an XCTest in
// the iOS Simulator: the test reads the document from the file `pinlab check --batch` names in $PINLAB_BATCH (pass
// it to the Simulator with `SIMCTL_CHILD_PINLAB_BATCH`), calls `answers(for:)` with its own client instead of
// `judge(_:timeout:)`, and prints the lines. The servers, not these answers, decide the verdicts.
public import Foundation
import PinningNIOClient
import SwiftASN1

public enum SwiftBatchHarness {
    /// The part of the batch document a client needs.
    public struct Document: Decodable, Sendable {
        public var cellTimeoutSeconds: Double
        public var cells: [Cell]
    }

    public struct Cell: Decodable, Sendable {
        public var id: String
        public var host: String
        public var ip: String
        public var port: Int
        public var trustFile: String
        public var pins: Pins
        public var clientIdentity: Identity?
    }

    public struct Pins: Decodable, Sendable {
        /// `spki-sha256` or `certificate-sha256`.
        public var kind: String
        public var hex: [String]
        /// The host the pins are declared for, and whether its subdomains too (absent: the cell's host).
        public var domain: String?
        public var includeSubdomains: Bool?

        /// Whether the pins are declared for `host` (a host outside the scope is validated, not pinned).
        /// Names compare in their normal form: lower case, one trailing dot dropped (`API.Pinning.Test.` is
        /// `api.pinning.test`), so that no spelling of a host escapes its pins.
        public func apply(to host: String) -> Bool {
            guard let domain, !domain.isEmpty else { return true }
            func normal(_ s: String) -> String {
                let l = s.lowercased()
                return l.hasSuffix(".") ? String(l.dropLast()) : l
            }
            let h = normal(host)
            let d = normal(domain)
            return h == d || (includeSubdomains == true && h.hasSuffix("." + d))
        }
    }

    public struct Identity: Decodable, Sendable {
        public var certificateFile: String
        public var keyFile: String
    }

    /// One answer line.
    public struct Answer: Encodable, Sendable {
        public var id: String
        public var claim: String
        public var detail: String
        public var category: String?
        public var milliseconds: Double
    }

    /// Judges every cell of a document (JSON), `concurrency` cells at a time (each cell has a server of its own),
    /// and returns one JSON line per cell, in the order they finish.
    public static func answers(for documentJSON: Data, concurrency: Int = 16) async throws -> [String] {
        let document = try JSONDecoder().decode(Document.self, from: documentJSON)
        let timeout = Duration.milliseconds(Int(document.cellTimeoutSeconds * 1000))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var lines: [String] = []
        try await withThrowingTaskGroup(of: Answer.self) { group in
            var next = document.cells.makeIterator()
            for _ in 0..<concurrency {
                guard let cell = next.next() else { break }
                group.addTask { await judge(cell, timeout: timeout) }
            }
            while let answer = try await group.next() {
                lines.append(String(decoding: try encoder.encode(answer), as: UTF8.self))
                if let cell = next.next() { group.addTask { await judge(cell, timeout: timeout) } }
            }
        }
        return lines
    }

    /// One cell: validate the chain and the host name against the cell's trust file, match the pins against the
    /// validated chain, and only then send the request.
    public static func judge(_ cell: Cell, timeout: Duration) async -> Answer {
        let t0 = ContinuousClock.now
        func answer(_ claim: String, _ detail: String, _ category: String? = nil) -> Answer {
            let d = ContinuousClock.now - t0
            return Answer(
                id: cell.id, claim: claim, detail: detail, category: category,
                milliseconds: Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
        }
        do {
            let roots = try pemBlocks(cell.trustFile)
            let hashes = cell.pins.apply(to: cell.host) ? cell.pins.hex.map(bytes(hex:)) : []
            let pins = Set(
                hashes.map {
                    cell.pins.kind == "certificate-sha256"
                        ? PinningHTTPSClient.Pin.certificateSHA256($0) : .spkiSHA256($0)
                })
            let identity = try cell.clientIdentity.map {
                PinningHTTPSClient.ClientIdentity(
                    certificateChainDER: try pemBlocks($0.certificateFile),
                    privateKeyPKCS8DER: try pemBlocks($0.keyFile).first ?? [])
            }
            let client = try PinningHTTPSClient(
                trustRootsDER: roots, pins: pins, clientIdentity: identity, timeout: timeout)
            let response = try await client.get(host: cell.host, port: cell.port, address: cell.ip)
            return answer("accepted", response.statusLine)
        } catch let e as PinningClientError {
            return answer("refused", e.refusal.detail, e.refusal.category)
        } catch {
            return answer("refused", "\(error)", "other")
        }
    }

    /// The DER contents of every PEM block of a file.
    static func pemBlocks(_ path: String) throws -> [[UInt8]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try PEMDocument.parseMultiple(pemString: text).map { Array($0.derBytes) }
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
            out.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }
}
