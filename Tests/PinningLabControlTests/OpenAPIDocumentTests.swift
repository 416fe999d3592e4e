import Foundation
import PinningLab
import PinningLabTestSupport
import Testing
import Yams

@testable import PinningLabControl

/// openapi.yaml describes exactly the routes the server registers, and the running server answers every
/// operation the document lists.
@Suite("Control API OpenAPI document")
struct OpenAPIDocumentTests {
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    /// `GET /servers/{id}`, … for every operation of the document.
    static func documentedOperations() throws -> Set<String> {
        let text = try #require(ControlServer.openAPIDocument(), "openapi.yaml is not in the module's resources")
        let doc = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect((doc["openapi"] as? String)?.hasPrefix("3.") == true)
        let paths = try #require(doc["paths"] as? [String: Any])
        var ops = Set<String>()
        for (path, item) in paths {
            let operations = try #require(item as? [String: Any], "\(path)")
            for m in methods where operations[m] != nil { ops.insert("\(m.uppercased()) \(path)") }
        }
        return ops
    }

    @Test func everyRegisteredRouteIsDocumentedAndEveryDocumentedOperationIsARoute() async throws {
        let documented = try Self.documentedOperations()
        try await ControlTestLab.withControl { control, _ in
            let registered = control.routes
            #expect(Set(registered).count == registered.count, "a route is registered twice")
            let undocumented = Set(registered).subtracting(documented)
            let missing = documented.subtracting(registered)
            #expect(undocumented.isEmpty, "registered but not in openapi.yaml: \(undocumented.sorted())")
            #expect(missing.isEmpty, "in openapi.yaml but not registered: \(missing.sorted())")
        }
    }

    /// Every documented operation reaches a handler on the live server (not the fallback's "no route" 404 or 405),
    /// with every path parameter filled with a placeholder.
    @Test(.requires("curl"))
    func everyDocumentedOperationIsServed() async throws {
        let documented = try Self.documentedOperations()
        try await ControlTestLab.withControl { control, _ in
            for op in documented.sorted() {
                let parts = op.split(separator: " ", maxSplits: 1).map(String.init)
                let path = parts[1].split(separator: "/").map { $0.hasPrefix("{") ? "x" : String($0) }.joined(
                    separator: "/")
                let r = try await Curl.request(parts[0], control.url + path, json: parts[0] == "POST" ? "{}" : nil)
                #expect(r.status != 405, "\(op): \(r.text)")
                #expect(!r.text.contains("there is no route"), "\(op) fell through to the fallback: \(r.text)")
                #expect(r.status < 500, "\(op): \(r.text)")
            }
        }
    }

    /// `GET /openapi.yaml` serves the bundled document (what schemathesis reads in CI).
    @Test(.requires("curl"))
    func servedDocumentIsTheBundledOne() async throws {
        try await ControlTestLab.withControl { control, _ in
            let r = try await Curl.get(control.url + "openapi.yaml")
            #expect(r.status == 200)
            #expect(r.text == ControlServer.openAPIDocument())
        }
    }
}
