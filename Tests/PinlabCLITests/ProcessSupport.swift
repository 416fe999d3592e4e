import Foundation

/// Output of a finished command.
struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
    var output: String { stdout + stderr }
}

/// Runs a command with a time limit; a command still running after `timeout` is killed and reported as status -9.
/// Output goes to files, not pipes: a pipe's write end inherited by a process spawned concurrently by another test
/// would keep the read open until that process ends.
func run(_ args: [String], stdin: String? = nil, timeout: TimeInterval = 30, cwd: URL? = nil) throws -> Run {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    if let cwd { p.currentDirectoryURL = cwd }
    let tmp = FileManager.default.temporaryDirectory
    let id = UUID().uuidString
    let outURL = tmp.appendingPathComponent("pinlab-run-\(id).out"), errURL = tmp.appendingPathComponent("pinlab-run-\(id).err")
    let inURL = tmp.appendingPathComponent("pinlab-run-\(id).in")
    try Data((stdin ?? "").utf8).write(to: inURL)
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { for u in [outURL, errURL, inURL] { try? FileManager.default.removeItem(at: u) } }
    let outHandle = try FileHandle(forWritingTo: outURL), errHandle = try FileHandle(forWritingTo: errURL)
    let inHandle = try FileHandle(forReadingFrom: inURL)
    defer { try? outHandle.close(); try? errHandle.close(); try? inHandle.close() }
    p.standardOutput = outHandle
    p.standardError = errHandle
    p.standardInput = inHandle
    try p.run()
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(5_000) }
    var status: Int32
    if p.isRunning {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        status = -9
    } else {
        p.waitUntilExit()
        status = p.terminationStatus
    }
    return Run(status: status, stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
               stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

