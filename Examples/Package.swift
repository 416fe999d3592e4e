// swift-tools-version:6.1
// PinningLab's examples: a separate package that depends on PinningLab by path, exactly as a user's package would.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// swift-nio-ssl on swift-nio, with swift-certificates for X.509: what every TLS client here is built on.
let tlsClientStack: [Target.Dependency] = [
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "NIOTLS", package: "swift-nio"),
    .product(name: "NIOSSL", package: "swift-nio-ssl"),
    .product(name: "X509", package: "swift-certificates"),
    .product(name: "SwiftASN1", package: "swift-asn1"),
]

let package = Package(
    name: "PinningLabExamples",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "PinningNIOClient", targets: ["PinningNIOClient"]),
        .executable(name: "compat-verify", targets: ["compat-verify"]),
    ],
    dependencies: [
        // A user writes `.package(url: "https://…/PinningLab.git", from: "…")`; the examples use the checkout above.
        .package(name: "PinningLab", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // A small pinning HTTPS client on swift-nio-ssl: validates chain and host name, then matches SPKI pins
        // against the validated chain.
        .target(
            name: "PinningNIOClient",
            dependencies: tlsClientStack + [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // One verifier stack of the cross-verifier compatibility suite: BoringSSL (swift-nio-ssl) and
        // swift-certificates' Verifier, speaking the suite's case protocol (Compatibility/README.md).
        .executableTarget(
            name: "compat-verify",
            dependencies: tlsClientStack,
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningNIOClientTests",
            dependencies: [
                "PinningNIOClient",
                .product(name: "PinningLab", package: "PinningLab"),
                .product(name: "PinningLabTesting", package: "PinningLab"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "SwiftBatchHarness",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CompatibilityTests",
            dependencies: [
                .product(name: "PinningLabTesting", package: "PinningLab")
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Teaching labs (labs/README.md): the Swift starter clients (Labs/Starters, the learner's) and the reference
// solutions (Labs/Instructor), one file per lab in one executable each (`lab-starter N`, `lab-solution N`), on a
// small shared plumbing target. Graded with `pinlab lab check N -- Examples/.build/debug/lab-starter N`.
package.products += [
    .executable(name: "lab-starter", targets: ["lab-starter"]),
    .executable(name: "lab-solution", targets: ["lab-solution"]),
]
let labClientDependencies: [Target.Dependency] = [
    "LabKit",
    .product(name: "NIOSSL", package: "swift-nio-ssl"),
    .product(name: "X509", package: "swift-certificates"),
]
package.targets += [
    .target(
        name: "LabKit",
        dependencies: tlsClientStack + [.product(name: "Crypto", package: "swift-crypto")],
        path: "Labs/LabKit",
        swiftSettings: swiftSettings
    ),
    .executableTarget(
        name: "lab-starter",
        dependencies: labClientDependencies,
        path: "Labs/Starters",
        swiftSettings: swiftSettings
    ),
    .executableTarget(
        name: "lab-solution",
        dependencies: labClientDependencies,
        path: "Labs/Instructor",
        swiftSettings: swiftSettings
    ),
    // Every Swift solution passes its lab and every starter fails in exactly its lab's cells, on both engines.
    .testTarget(
        name: "LabClientTests",
        dependencies: [
            "lab-starter", "lab-solution",
            .product(name: "PinningLab", package: "PinningLab"),
            .product(name: "PinningLabLabs", package: "PinningLab"),
        ],
        swiftSettings: swiftSettings
    ),
]

// Batch harnesses (the BatchHarnesses article): the Swift one judges every cell of `pinlab check --batch`'s document
// with the swift-nio-ssl client (Foundation + SwiftASN1 only: the template for an XCTest in the Simulator);
// `swift-batch` runs it as a command (`pinlab check --batch -- swift-batch`) or in-process (`swift-batch --in-process`).
package.products += [.executable(name: "swift-batch", targets: ["swift-batch"])]
package.targets += [
    .target(
        name: "SwiftBatchHarness",
        dependencies: ["PinningNIOClient", .product(name: "SwiftASN1", package: "swift-asn1")],
        swiftSettings: swiftSettings
    ),
    .executableTarget(
        name: "swift-batch",
        dependencies: ["SwiftBatchHarness", .product(name: "PinningLab", package: "PinningLab")],
        swiftSettings: swiftSettings
    ),
]

// The Swift blocks of README.md and the DocC articles, compiled as a user's code (scripts/check-doc-snippets writes
// them to DocSnippets/Generated/, ignored by git, and builds this target; CONTRIBUTING.md has the rules). Preamble.swift
// declares the names the documents assume the reader has (their own client, their app's API client). A plain target,
// not a test target: the blocks are compiled, never run here (ReadmeExample.swift runs the README's).
package.targets += [
    .target(
        name: "DocSnippets",
        dependencies: [
            "PinningNIOClient", "SwiftBatchHarness",
            .product(name: "PinningLab", package: "PinningLab"),
            .product(name: "PinningLabTesting", package: "PinningLab"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ],
        path: "DocSnippets"
    )
]
