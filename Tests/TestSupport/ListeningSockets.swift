import Foundation

/// The listening TCP sockets of this machine, read from `/proc/net/tcp` and `/proc/net/tcp6` (Linux; empty elsewhere).
///
/// A test that stops a server and wants to show its port is closed cannot just connect to the port: the suites run in
/// one process, side by side, and the kernel may already have given the freed port to another suite's server (CI saw
/// a connection succeed on a freed port). A socket's inode names that socket and no other: once the stopped server's
/// listening inode is gone from the table, its listener is closed, whoever listens on the port now.
public enum ListeningSockets {
    /// The inodes of the sockets listening on `port` (any local address).
    public static func inodes(port: Int) -> Set<String> {
        var inodes = Set<String>()
        let hexPort = String(format: ":%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to the end: a /proc table says its size is 0 and comes a page at a time (FileManager's
            // `contents(atPath:)` stopped after the first: in a full test run the server's line was past it).
            guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.readToEnd() else { continue }
            defer { try? handle.close() }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // f[1] local address:port, f[3] state (0A: LISTEN), f[9] inode.
                guard f.count > 9, f[1].hasSuffix(hexPort), f[3] == "0A", f[9] != "0" else { continue }
                inodes.insert(String(f[9]))
            }
        }
        return inodes
    }
}
