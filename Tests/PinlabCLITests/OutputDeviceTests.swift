import Foundation
import PinningLabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--output /dev/null` run as root once turned `/dev/null` into a regular file: the one file writer renamed its
/// temporary file over the path. A character device or a FIFO named as an output is written into, never replaced.
/// The device here is a private null device made in the test's own folder (`mknod`, root only), so a regression
/// replaces that node, not the machine's `/dev/null`.
@Suite("An output that is a device or a FIFO is written into, not replaced")
struct OutputDeviceTests {
    static func fileType(_ path: String) -> mode_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : nil
    }

    @Test(
        "check --output and pki export --out into a character device keep it a device",
        .enabled(if: geteuid() == 0, "making a device node (mknod) needs root"))
    func characterDevice() async throws {
        let folder = TestScratch.root.appendingPathComponent("pinlab-output-device-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let null = folder.appendingPathComponent("null").path
        // The null device (major 1, minor 3: 0x103 in glibc's encoding); making a node needs CAP_MKNOD.
        try #require(
            mknod(null, S_IFCHR | 0o666, dev_t(0x103)) == 0, "mknod: \(String(cString: strerror(errno)))")
        try #require(Self.fileType(null) == S_IFCHR)

        let check = try await CLI.run(
            ["check", "--client", "correct", "--scenarios", "baseline", "--format", "json", "--output", null]
                + CLI.dirArgs)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(Self.fileType(null) == S_IFCHR, "check --output replaced the device")

        let export = try await CLI.run(["pki", "export", "leaf-v1", "--format", "pem", "--out", null] + CLI.dirArgs)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(Self.fileType(null) == S_IFCHR, "pki export --out replaced the device")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["null"], "no temporary file")
    }

    @Test("check --output into a FIFO: the reader gets the report and the FIFO stays")
    func fifo() async throws {
        let folder = TestScratch.root.appendingPathComponent("pinlab-output-fifo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("report.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
        // Read and write ends held here, so pinlab's open never blocks; a reader thread drains it.
        let fd = open(fifo, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        let reader = FIFOReader(fd: fd)
        let thread = Thread { reader.drain() }
        thread.start()

        let check = try await CLI.run(
            ["check", "--client", "correct", "--scenarios", "baseline", "--format", "json", "--output", fifo]
                + CLI.dirArgs)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(Self.fileType(fifo) == S_IFIFO, "check --output replaced the FIFO")
        let text = await eventually(TestTimeouts.exchange) { reader.text.contains("\"verdicts\"") }
        reader.stop()
        #expect(text, "the reader got the JSON report: \(reader.text.prefix(200))")
    }
}

extension OutputDeviceTests {
    @Test("check --output into a FIFO nobody reads ends at once with the reason, never hangs")
    func fifoWithoutReader() async throws {
        let folder = TestScratch.root.appendingPathComponent("pinlab-output-fifo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("nobody.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
        let check = try await CLI.run(
            ["check", "--client", "correct", "--scenarios", "baseline", "--format", "json", "--output", fifo]
                + CLI.dirArgs)
        #expect(check.status == 2, "\(check.stderr)")
        #expect(check.stderr.contains("nothing is reading it"), "\(check.stderr)")
        #expect(Self.fileType(fifo) == S_IFIFO, "the FIFO stays")
    }
}

/// Drains a FIFO on a thread of its own until stopped (poll with a short timeout, so stopping needs no close race).
final class FIFOReader: @unchecked Sendable {
    let fd: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var stopped = false

    init(fd: Int32) { self.fd = fd }

    var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }

    func stop() { lock.withLock { stopped = true } }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !lock.withLock({ stopped }) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { lock.withLock { bytes += buffer[0..<n] } }
        }
        close(fd)
    }
}
