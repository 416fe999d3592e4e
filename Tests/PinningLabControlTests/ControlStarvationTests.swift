import Foundation
import PinningLab
import PinningLabTestSupport
import Testing

/// The control API answers while every thread of Swift's cooperative pool is held: its handlers run on threads of
/// their own (`HandlerExecutor`). Before, a handler waited for a cooperative thread, and in a full `swift test` run —
/// three lab PKIs built at start-up while hundreds of tests began — the API and the live view went silent for 56 s.
@Suite("The control API under a busy cooperative pool", .serialized)
struct ControlStarvationTests {
    @Test(
        "GET /servers and DELETE /batch/x answer in well under the time every cooperative thread is held",
        .requires("curl"))
    func answersWhileThePoolIsHeld() async throws {
        try await ControlTestLab.withControl { control, _ in
            let hold = 6.0
            // curl fires half a second after the pool is taken, and reports how long the exchange took.
            let script = """
                sleep 0.5
                curl -s -o /dev/null -w '%{http_code} %{time_total}\\n' -H "Authorization: Bearer $1" "$2servers"
                curl -s -o /dev/null -w '%{http_code} %{time_total}\\n' -X DELETE -H "Authorization: Bearer $1" "$2batch/x"
                """
            async let exchange = ChildProcess.run(
                ["sh", "-c", script, "sh", control.token ?? "", control.url], timeout: .seconds(60))
            try await Task.sleep(for: .milliseconds(100))
            // Every cooperative thread (one per core) blocked, as a synchronous PKI build in a test does.
            let threads = ProcessInfo.processInfo.activeProcessorCount
            let held = (0..<threads).map { _ in Task.detached { _ = usleep(UInt32(hold * 1_000_000)) } }
            let r = await exchange
            for h in held { await h.value }
            let lines = r.stdoutText.split(separator: "\n").map { $0.split(separator: " ") }
            try #require(lines.count == 2, "\(r.output)")
            #expect(lines[0][0] == "200" && lines[1][0] == "404", "\(r.output)")
            for line in lines {
                let seconds = try #require(Double(line[1]))
                #expect(
                    seconds < hold / 2, "an answer took \(seconds) s while the pool was held for \(hold) s: \(r.output)"
                )
            }
        }
    }
}
