// The seam of the built-in reference clients (issue 34, "a new reference client ≤ 3 places"): each client is one
// row of `ReferenceClient.Mistake.all`, and every list of built-in clients is read from it — the reference-client
// module's, the CLI's (`BuiltInClients`, what `--client` accepts and its help lists), the testing module's
// (`BuiltInClient.all`) — so none can lack a client the others have. Every row says what the client does and
// where that shows, and the catalogue run's cell-by-cell predictions (CheckRunnerTests) cover exactly the rows.
import PinningLab
import PinningLabReferenceClients
import PinningLabTesting
import Testing

@Suite("Reference clients: one declaration per client")
struct ReferenceClientSeamTests {
    static let catalogue = ReferenceClient.Mistake.all.map(\.rawValue)

    @Test func everyListIsTheCatalogue() throws {
        try #require(Self.catalogue.count >= 2, "correct and at least one teaching client")
        #expect(Self.catalogue.first == "correct")
        #expect(Set(Self.catalogue).count == Self.catalogue.count, "no two rows share a name: \(Self.catalogue)")
        #expect(ReferenceClients.names == Self.catalogue)
        #expect(ReferenceClients.all.map(\.name) == Self.catalogue)
        #expect(BuiltInClients.names == Self.catalogue, "the CLI's --client names")
        #expect(BuiltInClients.all.map(\.name) == Self.catalogue)
        #expect(BuiltInClient.all.map(\.name) == Self.catalogue, "PinningLabTesting's list")
        #expect(
            Set(Predictions.failures.keys) == Set(Self.catalogue), "the catalogue run predicts every row, and no other")
    }

    @Test("every client has a description and a prediction", arguments: BuiltInClients.names)
    func describedAndPredicted(name: String) throws {
        let row = try #require(ReferenceClient.Mistake(clientName: name))
        #expect(BuiltInClients.explanation(name) == row.explanation)
        #expect(BuiltInClients.prediction(name) == row.prediction)
        #expect(row.explanation.count >= 20, "\(name): \(row.explanation)")
        #expect(row.prediction.count >= 15, "\(name): \(row.prediction)")
        let testing = try #require(BuiltInClient.named(name))
        #expect(testing.name == name && testing.explanation == row.explanation && testing.prediction == row.prediction)
        let cells = try #require(Predictions.failures[name], "no cell-by-cell prediction for \(name)")
        // `correct` fails nothing and says so; a teaching client fails somewhere, and says where in its own words.
        if name == "correct" {
            #expect(cells.isEmpty)
        } else {
            #expect(!cells.isEmpty, "\(name) is predicted to fail no cell: it teaches nothing")
            #expect(row.prediction != ReferenceClient.Mistake.none.prediction)
            #expect(row.explanation != ReferenceClient.Mistake.none.explanation)
        }
    }

    @Test func namesOutsideTheCatalogueAreNotClients() {
        #expect(BuiltInClients.named("trust-everything") == nil)
        #expect(BuiltInClient.named("trust-everything") == nil)
        #expect(BuiltInClients.explanation("trust-everything").isEmpty)
        #expect(BuiltInClients.prediction("trust-everything").isEmpty)
        // The shorthands are rows, not copies.
        #expect(BuiltInClient.correct.name == ReferenceClient.Mistake.none.rawValue)
        #expect(
            BuiltInClient.sendsEarlyDataOnResumption.name == ReferenceClient.Mistake.sendsEarlyDataOnResumption.rawValue
        )
    }
}
