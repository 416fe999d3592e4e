import ArgumentParser
import Foundation
import PinningLab

struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Explain one scenario: the teaching text, the chain on the wire, the pins and the expected row.")

    @OptionGroup var source: CatalogueOptions

    @Argument(help: "The scenario id (see `pinlab scenarios list`).")
    var id: String

    func run() async throws {
        let catalogue = source.loadCatalogue()
        let s: Scenario
        do {
            s = try catalogue.scenario(id)
        } catch {
            fail("\(error)")
        }
        let pki = await source.openPKI()
        print(Self.explain(s, pki: pki))
    }

    static func wrap(_ text: String, width: Int = 100, indent: String = "  ") -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(whereSeparator: \.isWhitespace) {
            if line.count + word.count + 1 > width - indent.count, !line.isEmpty {
                lines.append(indent + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(indent + line) }
        return lines.joined(separator: "\n")
    }

    /// `RSA-2048, key leaf-rsa-2048`.
    static func keyDescription(_ id: Identity) -> String {
        "\(id.keyType.displayName), key \(id.keyName)"
    }

    static func explain(_ s: Scenario, pki: LabPKI) -> String {
        var out = "\(s.id) — \(s.title)\n"
        out += "tags: \(s.tags.joined(separator: ", "))" + (s.source.map { " · file: \($0)" } ?? "") + "\n\n"
        out += wrap(s.teaching) + "\n\n"
        let named = s.server.chains.flatMap { $0 } + s.client.trust.roots + [s.client.pinned, s.client.backup]
        var missing: [String] = []
        for name in named where (try? pki.identity(name)) == nil && !missing.contains(name) { missing.append(name) }
        if !missing.isEmpty {
            let pq = missing.allSatisfy { IdentityDirectory.postQuantumOnly[$0] != nil }
            out +=
                "This lab PKI has no \(missing.joined(separator: ", "))"
                + (pq
                    ? ": they are ML-DSA identities of the opt-in post-quantum part (pinlab pki init --post-quantum adds it)"
                    : "")
                + ". The chain and pins below leave them out, and every cell of this scenario is unsupported here.\n\n"
        }
        let sheet = ScenarioSheet(scenario: s, pki: pki)
        out += "The server sends, in this order:\n"
        var n = 0
        for link in sheet.chain {
            if link.onTheWire {
                n += 1
                out += "  \(n). "
            } else {
                out += "     (in the client's trust store, not sent) "
            }
            out += "\(link.name) [\(link.role)] subject \(link.subject), issuer \(link.issuer)\n"
            out += "     key \(link.keyName) (\(link.keyType)), SPKI sha256 \(link.spkiSHA256)"
            if !link.matchedBy.isEmpty {
                out += " ← pinned by \(link.matchedBy.map(\.rawValue).joined(separator: ", "))"
            }
            out += "\n"
        }
        let versions = s.server.tlsVersions.map(\.scenarioName).joined(separator: ", ")
        out += "  TLS versions: \(versions); client authentication: \(s.server.clientAuth)"
        if s.server.clientAuth != .none { out += " (CAs: \(s.server.clientAuthTrust.joined(separator: ", ")))" }
        if !s.server.groups.isEmpty { out += "; key-exchange groups: \(s.server.groups.joined(separator: ", "))" }
        if let ech = s.server.ech { out += "; Encrypted Client Hello: \(ech) (no engine of this build serves it)" }
        out += "\n"
        if !s.server.alternatives.isEmpty {
            out +=
                "  The host holds \(s.server.chains.count) chains and sends the first, in this order, whose key signs "
            out += "with a scheme the client offers in signature_algorithms:\n"
            for (i, chain) in s.server.chains.enumerated() {
                let key = (try? pki.identity(chain[0])).map { " (\(Self.keyDescription($0)))" } ?? ""
                let row = PinProfile.all.map { s.expected($0, served: chain[0]) == .accept ? "A" : "X" }
                out += "    \(i + 1). \(chain.joined(separator: ", "))\(key) — expected \(row.joined(separator: " "))\n"
            }
            for p in PinProfile.all { if let w = s.outageWarning(p) { out += "  \(p): \(w)\n" } }
        }
        out += "\n"
        out += "The client trusts \(s.client.trust.roots.joined(separator: " and "))"
        out += s.client.present.map { " and presents the client certificate \($0)" } ?? ""
        out += ".\nIt was built for \(s.client.pinned); its backup pin is the key of \(s.client.backup).\n\n"
        out += "Pins per profile, and the expected outcome:\n"
        for p in PinProfile.all {
            let entries = (try? s.pinEntries(for: p, in: pki)) ?? []
            let what =
                entries.isEmpty
                ? "no pins"
                : entries.map { e in
                    "\(e.kind == .certificateSHA256 ? "cert" : "spki") of \(e.identity) (\(e.keyName)) \(e.base64)"
                }.joined(separator: "\n" + String(repeating: " ", count: 29))
            out += "  " + p.rawValue.padding(toLength: 18, withPad: " ", startingAt: 0)
            out += s.expected(p).rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + what + "\n"
            if let note = s.notes[p] { out += String(repeating: " ", count: 29) + "— " + note + "\n" }
        }
        if s.isMultiStep {
            out += "\nThe client makes \(s.steps.count) connections, keeping its TLS session cache across them:\n"
            for (name, party) in s.parties.sorted(by: { $0.key < $1.key }) {
                out +=
                    "  party \(name): sends \(party.chain.joined(separator: ", ")); resumption \(party.resumption)"
                    + (party.ticketKey.map { " (ticket key \($0), shared by the parties that name it)" } ?? "") + "\n"
            }
            out += "  party \(Scenario.genuineParty): the server above; resumption \(s.server.resumption)\n"
            let plans = PinProfile.all.map { Cell(scenario: s, profile: $0, engine: "", client: "").plan }
            for step in plans[0] {
                let row = plans.map { $0[step.number - 1].expected == .accept ? "A" : "X" }.joined(separator: " ")
                out += "  step \(step.number): \(step.summary) — expected \(row)\n"
            }
            out += "A cell passes only when every step does; the row below is the last step's.\n"
        }
        if let r = s.refusal { out += "\nWhere it refuses, a correct client refuses for: \(r)." }
        out += "\nExpected row (none leaf-cert leaf-spki +backup int-spki root-spki): \(s.expectedRow)"
        return out
    }
}
