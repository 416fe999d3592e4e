import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

@testable import PinningLabControl

/// The device queue's routes on an in-process control API: a lease, its expiry, a late answer kept as the cell's
/// answer and a later one recorded as a disagreement, the report, the queue file read back by a new control API,
/// and the refusals every route gives (token, Host, Origin, body size, the lease cap).
@Suite("Control API device queue", .serialized)
struct DeviceQueueRouteTests {
    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func createQueue(_ control: ControlServer, _ body: [String: Any]) async throws -> String {
        let r = try await Curl.request("POST", control.url + "queues", json: json(body))
        #expect(r.status == 201, "\(r.text)")
        return try #require(try r.json()["id"] as? String)
    }

    static func lease(_ control: ControlServer, queue: String, device: String) async throws -> CurlReply {
        try await Curl.request(
            "POST", control.url + "leases",
            json: json(["client": "curl", "device": device, "os": "Linux test", "queue": queue]))
    }

    static func cleanUp(_ control: ControlServer, _ queue: String) async {
        _ = try? await Curl.request("DELETE", control.url + "queues/\(queue)")
    }

    /// One cell (rekey × leaf-spki × openssl, expected refuse), leased for 30 s. Device a leases it and goes silent; device b is told
    /// to wait, and gets the same cell once a's lease expires. a's late answer (its server still runs) is the
    /// cell's answer; b's, after a real curl connection, is judged on its own server and recorded as a disagreement.
    @Test(.requires("curl"))
    func anExpiredLeaseGoesBackAndASecondAnswerIsADisagreement() async throws {
        let curl = try #require(Tool.path("curl"))
        try await ControlTestLab.withControl { control, _ in
            let queue = try await Self.createQueue(
                control,
                [
                    "client": "curl", "scenarios": ["rekey"], "engines": ["openssl"], "profiles": ["leaf-spki"],
                    "leaseSeconds": 30,
                ])
            let a = try await Self.lease(control, queue: queue, device: "device-a")
            #expect(a.status == 201, "\(a.text)")
            let leaseA = try a.json()
            let idA = try #require(leaseA["lease"] as? String)
            #expect((leaseA["cell"] as? [String: Any])?["id"] as? String == "rekey/leaf-spki/openssl")
            #expect(leaseA["expect"] as? String == "refuse")

            let wait = try await Self.lease(control, queue: queue, device: "device-b")
            #expect(wait.status == 200, "the only cell is on lease: \(wait.text)")
            #expect(try wait.json()["finished"] as? Bool == false)

            // a's lease expires after 30 s, and its server stops 30 s after that: long enough for the requests around
            // them on a loaded two-core machine (with 2 s and then 8 s, a's late answer came after its server's grace
            // in a full CI run). b then gets the same cell.
            var b: [String: Any] = [:]
            let regranted = await eventually(TestTimeouts.startup) {
                guard let r = try? await Self.lease(control, queue: queue, device: "device-b"), r.status == 201,
                    let object = try? r.json()
                else { return false }
                b = object
                return true
            }
            try #require(regranted, "the expired lease's cell was never handed out again")
            let idB = try #require(b["lease"] as? String)
            #expect(idA != idB)
            #expect((b["cell"] as? [String: Any])?["id"] as? String == "rekey/leaf-spki/openssl")
            let renewA = try await Curl.request("POST", control.url + "leases/\(idA)/renew")
            #expect(renewA.status == 410, "an expired lease is not renewed: \(renewA.text)")

            // a answers late, while its server still runs: the cell's answer.
            let first = try await Curl.request(
                "POST", control.url + "leases/\(idA)/answer", json: #"{"claim": "refused"}"#)
            #expect(first.status == 200, "\(first.text)")
            #expect(try first.json()["recorded"] as? String == "first")
            let again = try await Curl.request(
                "POST", control.url + "leases/\(idA)/answer", json: #"{"claim": "refused"}"#)
            #expect(again.status == 409, "\(again.text)")

            // b connects for real (curl pinned to the cell's pins refuses the re-keyed server) and answers.
            let cell = try #require(b["cell"] as? [String: Any])
            let pins = try #require((cell["pins"] as? [String: Any])?["curl"] as? String)
            let run = await ChildProcess.run(
                [
                    curl, "-sf", "-o", "/dev/null", "--max-time", "10", "--cacert",
                    try #require(cell["trustFile"] as? String), "--pinnedpubkey", pins,
                    try #require(cell["url"] as? String),
                ], timeout: .seconds(20))
            #expect(run.status != 0, "curl pinned to the old key refuses the re-keyed server")
            let renewB = try await Curl.request("POST", control.url + "leases/\(idB)/renew", json: "{}")
            #expect(renewB.status == 200, "\(renewB.text)")
            let second = try await Curl.request(
                "POST", control.url + "leases/\(idB)/answer",
                json: #"{"claim": "refused", "detail": "curl exit 90", "milliseconds": 12.5}"#)
            #expect(second.status == 200, "\(second.text)")
            let answer = try second.json()
            #expect(answer["recorded"] as? String == "disagreement")
            let verdict = try #require(answer["verdict"] as? [String: Any])
            #expect(verdict["verdict"] as? String == "pass", "judged on b's server, which saw curl refuse: \(verdict)")
            #expect((verdict["device"] as? [String: Any])?["name"] as? String == "device-b")

            let status = try await Curl.get(control.url + "queues/\(queue)").json()
            #expect(status["finished"] as? Bool == true)
            #expect(status["answered"] as? Int == 1)
            let disagreements = try #require(status["disagreements"] as? [[String: Any]])
            #expect(
                disagreements.count == 1 && disagreements.first?["device"] as? String == "device-b", "\(disagreements)")

            let done = try await Self.lease(control, queue: queue, device: "device-c")
            #expect(try done.status == 200 && (done.json()["finished"] as? Bool) == true, "\(done.text)")

            let report = try await Curl.get(control.url + "queues/\(queue)/report")
            #expect(report.status == 200)
            let decoded = try CheckReport.decode(json: Data(report.body), file: "report")
            #expect(decoded.client == "curl")
            #expect(decoded.verdicts.count == PinProfile.all.count, "one per profile: \(decoded.verdicts.count)")
            let judged = decoded.verdicts.filter { $0.status != .skipped }
            #expect(judged.count == 1, "the cell is in the report once")
            #expect(
                judged.first?.device == Verdict.Device(name: "device-a", os: "Linux test"), "the first answer is kept")
            await Self.cleanUp(control, queue)
        }
    }

    /// An answered cell survives the control API: a new one on the same PKI folder reads the queue's file.
    @Test(.requires("curl"))
    func answeredCellsOutliveTheControlAPI() async throws {
        let queue = try await ControlTestLab.withControl { control, _ in
            let queue = try await Self.createQueue(
                control,
                [
                    "client": "curl", "scenarios": ["baseline"], "engines": ["gnutls"],
                    "profiles": ["leaf-spki", "root-spki"],
                ])
            let l = try await Self.lease(control, queue: queue, device: "kept")
            let id = try #require(try l.json()["lease"] as? String)
            let a = try await Curl.request("POST", control.url + "leases/\(id)/answer", json: #"{"claim": "refused"}"#)
            #expect(a.status == 200, "\(a.text)")
            return queue
        }
        try await ControlTestLab.withControl { control, _ in
            let status = try await Curl.get(control.url + "queues/\(queue)")
            #expect(status.status == 200, "\(status.text)")
            #expect(try status.json()["answered"] as? Int == 1)
            let report = try CheckReport.decode(
                json: Data(try await Curl.get(control.url + "queues/\(queue)/report").body), file: "report")
            #expect(report.verdicts.contains { $0.device?.name == "kept" })
            let old = try await Curl.request(
                "POST", control.url + "leases/L-00000000-1/answer", json: #"{"claim": "refused"}"#)
            #expect(old.status == 404, "a lease of an earlier process: \(old.text)")
            let deleted = try await Curl.request("DELETE", control.url + "queues/\(queue)")
            #expect(deleted.status == 200)
            #expect(
                !FileManager.default.fileExists(
                    atPath: ControlTestLab.directory.appendingPathComponent("control/queues/\(queue).json").path))
        }
    }

    /// The lease routes refuse as every route does: no token (401), another Host (403), a web page's Origin (403), a
    /// body over 64 KiB (413), a body that is not JSON (415); and a queue's lease cap holds (409).
    @Test(.requires("curl"))
    func theLeaseRoutesAreBounded() async throws {
        try await ControlTestLab.withControl { control, _ in
            let queue = try await Self.createQueue(
                control,
                [
                    "client": "curl", "scenarios": ["baseline"], "engines": ["openssl"],
                    "profiles": ["none", "leaf-spki"], "maxLeases": 1,
                ])
            let body = Self.json(["client": "curl", "device": "d", "os": "o", "queue": queue])
            let routes = [
                ("POST", "leases"), ("POST", "leases/x/renew"), ("POST", "leases/x/answer"), ("POST", "queues"),
                ("GET", "queues"), ("GET", "queues/\(queue)"), ("GET", "queues/\(queue)/report"),
                ("DELETE", "queues/x"),
            ]
            for (method, path) in routes {
                let noToken = try await Curl.$token.withValue(nil) {
                    try await Curl.request(method, control.url + path, json: method == "POST" ? body : nil)
                }
                #expect(noToken.status == 401, "\(method) /\(path) without a token: \(noToken.text)")
                let host = try await Curl.request(
                    method, control.url + path, json: method == "POST" ? body : nil,
                    headers: ["Host: evil.example:\(control.port)"])
                #expect(
                    try host.status == 403 && (host.json()["field"] as? String) == "Host",
                    "\(method) /\(path): \(host.text)")
                let origin = try await Curl.request(
                    method, control.url + path, json: method == "POST" ? body : nil,
                    headers: ["Origin: https://evil.example"])
                #expect(
                    try origin.status == 403 && (origin.json()["field"] as? String) == "Origin",
                    "\(method) /\(path): \(origin.text)")
            }
            let huge = Self.json(["client": "curl", "device": String(repeating: "d", count: 70 * 1024), "os": "o"])
            let tooLarge = try await Curl.request("POST", control.url + "leases", json: huge)
            #expect(tooLarge.status == 413, "\(tooLarge.text)")
            let notJSON = try await Curl.request(
                "POST", control.url + "leases", json: body, headers: ["Content-Type: text/plain"])
            #expect(notJSON.status == 415, "\(notJSON.text)")
            let longName = try await Curl.request(
                "POST", control.url + "leases",
                json: Self.json(["client": "curl", "device": String(repeating: "d", count: 300), "os": "o"]))
            #expect(try longName.status == 400 && (longName.json()["field"] as? String) == "device", "\(longName.text)")
            let multiStep = try await Curl.request(
                "POST", control.url + "queues",
                json: Self.json(["client": "curl", "scenarios": ["resumption-after-unpinned-handshake"]]))
            #expect(multiStep.status == 422, "\(multiStep.text)")

            // maxLeases 1: a second device is refused while the first holds its lease, though a cell waits.
            let first = try await Self.lease(control, queue: queue, device: "one")
            #expect(first.status == 201, "\(first.text)")
            let capped = try await Self.lease(control, queue: queue, device: "two")
            #expect(capped.status == 409, "\(capped.text)")
            #expect(try capped.json()["error"] as? String ?? "" != "")
            let id = try #require(try first.json()["lease"] as? String)
            let answered = try await Curl.request(
                "POST", control.url + "leases/\(id)/answer", json: #"{"claim": "accepted"}"#)
            #expect(answered.status == 200, "\(answered.text)")
            let next = try await Self.lease(control, queue: queue, device: "two")
            #expect(next.status == 201, "the cap frees with the answer: \(next.text)")
            let badClaim = try await Curl.request(
                "POST", control.url + "leases/\(try #require(try next.json()["lease"] as? String))/answer",
                json: #"{"claim": "maybe"}"#)
            #expect(try badClaim.status == 400 && (badClaim.json()["field"] as? String) == "claim", "\(badClaim.text)")
            await Self.cleanUp(control, queue)
        }
    }
}
