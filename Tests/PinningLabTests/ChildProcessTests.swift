import Foundation
import PinningLab
import PinningLabBase
import PinningLabPKI
import PinningLabTestSupport
import Testing

@Suite("ChildProcess")
struct ChildProcessTests {
    @Test func outputExitStatusAndInput() async {
        let r = await ChildProcess.run(["sh", "-c", "cat; echo err >&2; exit 3"], input: Array("hello\n".utf8))
        #expect(r.status == 3)
        #expect(r.stdoutText == "hello\n")
        #expect(r.stderrText == "err\n")
        #expect(!r.timedOut && r.launchError == nil)
    }

    @Test func timeoutKillsTheChild() {
        let r = ChildProcess.runBlocking(["sleep", "20"], timeout: .milliseconds(200))
        #expect(r.timedOut)
        #expect(r.status == 128 + Int32(SIGTERM), "as a shell reports it")
        #expect(r.milliseconds < 5000)
    }

    @Test func aGrandchildHoldingThePipeDoesNotStallTheCaller() {
        let r = ChildProcess.runBlocking(["sh", "-c", "sleep 20 & echo started"], timeout: .seconds(10))
        #expect(r.status == 0 && r.stdoutText == "started\n")
        #expect(r.milliseconds < 5000, "returned when sh exited, not when sleep did")
    }

    @Test func largeOutputAndMissingCommand() {
        let big = ChildProcess.runBlocking(["head", "-c", "3000000", "/dev/zero"])
        #expect(big.stdout.count == 3_000_000)
        let missing = ChildProcess.runBlocking(["no-such-command-pinninglab"])
        #expect(missing.status == 127 && missing.launchError?.contains("command not found") == true)
    }

    @Test func manyConcurrentChildren() async {
        let results = await withTaskGroup(of: ChildProcess.Result.self) { group in
            for i in 0..<40 { group.addTask { await ChildProcess.run(["sh", "-c", "echo \(i)"]) } }
            var all: [ChildProcess.Result] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.count == 40 && results.allSatisfy { $0.status == 0 })
        #expect(Set(results.map(\.stdoutText)).count == 40)
    }

    @Test func background() throws {
        let log = TestScratch.root.appendingPathComponent("pinlab-bg-\(UUID().uuidString)").path
        defer { unlink(log) }
        let child = try ChildProcess.spawnBackground(["sh", "-c", "echo up; sleep 30"], stdoutFile: log)
        for _ in 0..<200 where (try? String(contentsOfFile: log, encoding: .utf8)) != "up\n" { usleep(10_000) }
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "up\n")
        #expect(child.isRunning)
        child.terminate()
        #expect(!child.isRunning)
    }

    @Test func stopEndsTheChildWithItsReason() {
        let asked = Locked(0)
        let r = ChildProcess.runBlocking(
            ["sleep", "20"], timeout: .seconds(30),
            stop: {
                asked.withLock { n in
                    n += 1
                    return n >= 3 ? "enough" : nil
                }
            })
        #expect(r.timedOut && r.stopReason == "enough")
        #expect(r.status == 128 + Int32(SIGTERM))
        #expect(r.milliseconds < 5000)
    }

    @Test func anOverrunKillsTheWholeProcessGroup() async {
        let marker = "\(Int.random(in: 100_000...999_999)).5"
        let r = await ChildProcess.run(
            ["sh", "-c", "sleep \(marker) & sleep \(marker)"], timeout: .milliseconds(300),
            newProcessGroup: true)
        #expect(r.timedOut)
        var left = true
        for _ in 0..<50 {
            left = await ChildProcess.run(["pgrep", "-f", "^sleep \(marker)$"]).status == 0
            if !left { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        #expect(!left, "the grandchild in the child's process group is killed too")
    }

    @Test func filesAsStandardInputAndOutput() throws {
        let dir = TestScratch.root
        let input = dir.appendingPathComponent("pinlab-in-\(UUID().uuidString)").path
        let output = dir.appendingPathComponent("pinlab-out-\(UUID().uuidString)").path
        defer {
            unlink(input)
            unlink(output)
        }
        try "from a file\n".write(toFile: input, atomically: true, encoding: .utf8)
        let r = ChildProcess.runBlocking(["sh", "-c", "cat; echo oops >&2"], stdinFile: input, stdoutFile: output)
        #expect(r.status == 0 && r.stdout.isEmpty && r.stderrGist == "oops")
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "from a file\n")
        let missing = ChildProcess.runBlocking(["cat"], stdinFile: dir.appendingPathComponent("no-such-\(UUID())").path)
        #expect(missing.status == 126 && missing.launchError?.contains("cannot open") == true)
    }
}
