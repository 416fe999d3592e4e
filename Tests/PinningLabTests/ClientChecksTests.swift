import Foundation
import PinningLab
import Testing

@Suite("Client checks")
struct ClientChecksTests {
    @Test("revocation=hard,ct=required parses, in either order, and prints back")
    func parses() throws {
        let c = try ClientChecks(parsing: "revocation=hard,ct=required")
        #expect(c.revocation == .hard && c.ct == .required)
        #expect(c.description == "revocation=hard,ct=required")
        #expect(try ClientChecks(parsing: "ct=none,revocation=soft") == ClientChecks(revocation: .soft, ct: CT.none))
        #expect(try ClientChecks(parsing: "revocation=none").ct == nil)
        #expect(ClientChecks.undeclared.description == "undeclared")
        let json = try JSONEncoder().encode(c)
        #expect(try JSONDecoder().decode(ClientChecks.self, from: json) == c)
    }
    typealias CT = ClientChecks.CT

    @Test(
        "bad values name the flag, what is wrong and the form",
        arguments: [
            ("revocation=strict", "'strict' is not none, soft or hard"),
            ("ocsp=hard", "'ocsp' is not a check"),
            ("revocation", "'revocation' is not NAME=VALUE"),
            ("revocation=hard,revocation=soft", "given twice"),
            ("ct=yes", "'yes' is not none or required"),
        ])
    func bad(_ text: String, _ problem: String) {
        do {
            _ = try ClientChecks(parsing: text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.hasPrefix("--client-checks: ") && error.description.contains(problem), "\(error)")
            #expect(error.description.contains("revocation=none|soft|hard,ct=none|required"), "\(error)")
        }
    }
}
