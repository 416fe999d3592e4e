public import Foundation

/// The lab PKI folder the test suites share (keys are made there once and reused by later runs; nothing is
/// committed). One per checkout, named by a hash of the package's path: two checkouts testing at once — a CI clone
/// beside a work tree, or two branches whose PKI specs differ — must not re-issue each other's certificates under a
/// running test (a shared folder did, and their exports' and trust files' checks then failed).
public enum TestPKIFolder {
    public static let url: URL = {
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().standardizedFileURL.path
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across runs, unlike Hasher
        for byte in packageRoot.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return FileManager.default.temporaryDirectory
            .appendingPathComponent("pinninglab-catalogue-tests-" + String(hash, radix: 16))
    }()
}
