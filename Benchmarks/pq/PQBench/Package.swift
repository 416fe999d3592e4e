// swift-tools-version:6.1
// Key generation and signing with swift-crypto, called the way PinningLab's PKI calls it (Sources/PinningLabPKI/
// Keys.swift: MLDSAKey, LabKey): a package of its own, so that the benchmark builds without touching PinningLab's
// Package.swift. The swift-crypto version is PinningLab's (Package.resolved: 4.5.2).
import PackageDescription

let package = Package(
    name: "PQBench",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2")
    ],
    targets: [
        .executableTarget(
            name: "pq-bench",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        )
    ]
)
