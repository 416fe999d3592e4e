// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // MemberImportVisibility is left off: on Linux, clean builds attribute Glibc struct members (stat.st_mode,
    // timespec.tv_sec) to CoreFoundation and fail, while incremental builds pass.
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "PinningLab",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "PinningLab", targets: ["PinningLab"]),
        .library(name: "PinningLabTesting", targets: ["PinningLabTesting"]),
        .library(name: "PinningLabPKI", targets: ["PinningLabPKI"]),
        // The teaching labs' graders, for packages that grade lab clients (Examples/Tests/LabClientTests); the
        // products above do not contain them.
        .library(name: "PinningLabLabs", targets: ["PinningLabLabs"]),
        .executable(name: "pinlab", targets: ["pinlab"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // The resources of PinningLabModel, PinningLab and PinningLabControl (the built-in spec and catalogue, the
        // schemas, the OpenAPI document) embedded in their code as well, so a copied `pinlab` binary works from any
        // folder (Plugins/EmbedResources).
        .plugin(
            name: "EmbedResources", capability: .buildTool(), dependencies: ["pinlab-embed-resources"],
            path: "Plugins/EmbedResources"),
        .executableTarget(
            name: "pinlab-embed-resources", path: "Plugins/EmbedResourcesTool", swiftSettings: swiftSettings),
        // The teaching labs' definitions (labs/labs.yaml, labs/*/lab.yaml) embedded in PinningLabLabs the same way.
        .plugin(
            name: "EmbedLabs", capability: .buildTool(), dependencies: ["pinlab-embed-resources"],
            path: "Plugins/EmbedLabs"),
        .systemLibrary(
            name: "CPinningLabOpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CPinningLabGnuTLS",
            pkgConfig: "gnutls",
            providers: [.apt(["libgnutls28-dev"]), .brew(["gnutls"])]
        ),
        // What every module of the package shares and none owns, all `package` but the error of a run option: a
        // locked value (`Locked`), the one JSON writer (`JSONOutput`), the scratch folders (`ScratchFolders`), the one
        // YAML node reader (`YAMLReader`), "did you mean" (`didYouMean`, `suggestion`) and `CheckSetupError`.
        .target(
            name: "PinningLabBase",
            dependencies: [.product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PinningLabPKI",
            dependencies: [
                "PinningLabBase",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "CPinningLabSystem"),
        // The TLS value types the model and the engine boundary both name — TLSVersion, ClientAuthentication,
        // CipherSuite (IANA names), SessionResumption (and its SessionTicketKey), TLSAlert, ResumptionMechanism — below
        // both, so the model does not sit on the server runtime (scripts/check-module-edges refuses Model -> Core).
        .target(name: "PinningLabTLSTypes", swiftSettings: swiftSettings),
        .target(
            name: "PinningLabCore",
            dependencies: ["PinningLabBase", "PinningLabTLSTypes", "PinningLabPKI", "CPinningLabSystem"],
            swiftSettings: swiftSettings
        ),
        // The domain model: scenarios (and their loader), expectations, trust and pin profiles, the client protocol,
        // the catalogue, verdicts and the judge; and the built-in lab PKI spec and catalogue they are read from.
        .target(
            name: "PinningLabModel",
            dependencies: [
                "PinningLabBase", "PinningLabTLSTypes", "PinningLabPKI", .product(name: "Yams", package: "Yams"),
            ],
            resources: [.copy("Resources/pki"), .copy("Resources/scenarios")],
            swiftSettings: swiftSettings,
            plugins: ["EmbedResources"]
        ),
        // An engine: its C module and the engine boundary, never the domain model (scripts/check-module-edges refuses
        // PinningLabOpenSSL -> PinningLabModel).
        .target(
            name: "PinningLabOpenSSL",
            dependencies: [
                "PinningLabTLSTypes", "PinningLabBase", "PinningLabCore", "PinningLabPKI", "CPinningLabOpenSSL",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PinningLabGnuTLS",
            dependencies: [
                "PinningLabTLSTypes", "PinningLabBase", "PinningLabCore", "PinningLabPKI", "CPinningLabGnuTLS",
            ],
            swiftSettings: swiftSettings
        ),
        // The reference clients (the correct client and the teaching mistakes) and the OpenSSL client context: they
        // implement the model's PinningClient and share PinningLabOpenSSL's handle owners (`package`).
        .target(
            name: "PinningLabReferenceClients",
            dependencies: [
                "PinningLabBase", "PinningLabOpenSSL", "CPinningLabOpenSSL", "PinningLabModel", "PinningLabCore",
                "PinningLabPKI",
            ],
            swiftSettings: swiftSettings
        ),
        // The engine registry: the built-in engines and those a user registers; every list of engines is read here.
        .target(
            name: "PinningLabEngines",
            dependencies: [
                "PinningLabBase", "PinningLabCore", "PinningLabPKI", "PinningLabOpenSSL", "PinningLabGnuTLS",
            ],
            swiftSettings: swiftSettings
        ),
        // The report writers (text, JSON, JUnit, Markdown, HTML, the HTML page shell, escaping), baselines, report
        // merge and the schemas: everything a report needs and nothing of the runner, so exports, timeline and
        // intercept write reports without importing PinningLab (scripts/check-module-edges refuses that edge).
        .target(
            name: "PinningLabReports",
            dependencies: [
                "PinningLabBase", "PinningLabModel", "PinningLabCore", "PinningLabPKI", "PinningLabTLSTypes",
            ],
            resources: [.copy("Resources/schemas")],
            swiftSettings: swiftSettings,
            plugins: ["EmbedResources"]
        ),
        .target(
            name: "PinningLab",
            dependencies: [
                "PinningLabTLSTypes",
                "PinningLabBase", "PinningLabPKI", "PinningLabCore", "PinningLabModel", "PinningLabOpenSSL",
                "PinningLabReferenceClients", "PinningLabReports", "PinningLabEngines",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PinningLabTesting",
            dependencies: [
                "PinningLabBase", "PinningLab", "PinningLabReports", "PinningLabModel", "PinningLabCore",
                "PinningLabPKI",
            ],
            swiftSettings: swiftSettings
        ),
        // `pinlab intercept`: the HTTP CONNECT interception proxy and its per-host verdicts. Linked by pinlab only,
        // so packages that depend on PinningLab or PinningLabTesting never build it.
        .target(
            name: "PinningLabIntercept",
            dependencies: [
                "PinningLabBase", "PinningLabReports", "PinningLabEngines", "PinningLabCore", "PinningLabPKI",
                "PinningLabReferenceClients",
            ],
            swiftSettings: swiftSettings
        ),
        // `pinlab export` and `pinlab audit`: pins and roots in the formats of TrustKit, Alamofire, OkHttp, Ktor, Cronet,
        // Android's network-security-config, NSPinnedDomains, curl and Apple's configuration profiles, and the readers
        // that audit those formats. Linked by pinlab only.
        .target(
            name: "PinningLabExports",
            dependencies: [
                "PinningLabBase", "PinningLabReports", "PinningLabModel", "PinningLabCore", "PinningLabPKI",
            ],
            swiftSettings: swiftSettings
        ),
        // `pinlab timeline`: the chains a CA policy issues over a horizon, and which pin sets survive them. Linked by
        // pinlab only.
        .target(
            name: "PinningLabTimeline",
            dependencies: [
                "PinningLabBase", "PinningLabReports", "PinningLabEngines", "PinningLabModel", "PinningLabCore",
                "PinningLabPKI", "PinningLabReferenceClients",
            ],
            swiftSettings: swiftSettings
        ),
        // `pinlab lab`: the teaching labs, their graders and pictures. Linked by pinlab only. The labs themselves are
        // data, one folder each under labs/ (its lab.yaml, page, starter, instructor notes), named in labs/labs.yaml;
        // the EmbedLabs plugin embeds the definitions, so a copied binary knows every lab.
        .target(
            name: "PinningLabLabs",
            dependencies: [
                "PinningLabBase", "PinningLab", "PinningLabModel", "PinningLabCore", "PinningLabPKI",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["EmbedLabs"]
        ),
        // `pinlab serve --control`: HTTP+JSON over a small HTTP/1.1 server of its own (bounded, linear parsing, on
        // threads of its own). Not part of any library product.
        .target(
            name: "PinningLabControl",
            dependencies: ["PinningLabBase", "PinningLab", "PinningLabCore", "PinningLabPKI", "PinningLabIntercept"],
            resources: [.copy("openapi.yaml")],
            swiftSettings: swiftSettings,
            plugins: ["EmbedResources"]
        ),
        .executableTarget(
            name: "pinlab",
            dependencies: [
                "PinningLabTLSTypes",
                "PinningLabBase",
                "PinningLab", "PinningLabCore", "PinningLabPKI", "PinningLabControl", "PinningLabIntercept",
                "PinningLabLabs", "PinningLabExports",
                "PinningLabTimeline", "PinningLabReferenceClients",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "pinlab-serve-bench",
            dependencies: [
                "PinningLab", "PinningLabCore", "PinningLabOpenSSL", "PinningLabGnuTLS", "CPinningLabOpenSSL",
            ],
            path: "Benchmarks/serve/ServeBench",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "pinlab-reliability",
            dependencies: [
                "PinningLab", "PinningLabCore", "PinningLabTesting", "PinningLabOpenSSL", "PinningLabGnuTLS",
                "CPinningLabOpenSSL",
            ],
            path: "Benchmarks/reliability/Reliability",
            swiftSettings: swiftSettings
        ),
        .target(name: "CFuzzDriver", path: "Benchmarks/fuzz/CFuzzDriver"),
        .executableTarget(
            name: "pinlab-fuzz",
            dependencies: [
                "PinningLab", "PinningLabCore", "PinningLabPKI", "PinningLabOpenSSL", "PinningLabGnuTLS",
                "CPinningLabOpenSSL",
                "PinningLabIntercept", "PinningLabExports", "CFuzzDriver",
            ],
            path: "Benchmarks/fuzz/Fuzz",
            swiftSettings: swiftSettings
        ),
        // What every test suite shares: one tool lookup and the `.requires("tool")` trait (skipped with an install
        // hint on a developer's machine, run — and failed when the tool is missing — in CI).
        .target(
            name: "PinningLabTestSupport",
            dependencies: ["PinningLabBase", "PinningLab", "PinningLabPKI", "PinningLabCore"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningLabPKITests",
            dependencies: [
                "PinningLabTestSupport", "PinningLabPKI", "PinningLab", "PinningLabCore", "PinningLabOpenSSL",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningLabEngineTests",
            dependencies: [
                "PinningLabTLSTypes", "PinningLabTestSupport", "PinningLabCore", "PinningLabOpenSSL",
                "PinningLabReferenceClients", "PinningLabGnuTLS", "PinningLab", "PinningLabPKI",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningLabClientTests",
            dependencies: ["PinningLabTestSupport", "PinningLabReferenceClients", "PinningLabCore", "PinningLab"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningLabTests",
            dependencies: [
                "PinningLabReferenceClients", "PinningLabTLSTypes", "PinningLabBase", "PinningLabTestSupport",
                "PinningLab", "PinningLabModel", "PinningLabCore", "PinningLabPKI", "PinningLabTesting",
                "PinningLabIntercept",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinningLabControlTests",
            dependencies: [
                "PinningLabTestSupport", "PinningLabControl", "PinningLab", "PinningLabIntercept",
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PinlabCLITests",
            dependencies: [
                "PinningLabPKI", "PinningLabTestSupport", "pinlab", "PinningLab", "PinningLabCore", "PinningLabLabs",
                "PinningLabTesting", "PinningLabTimeline",
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
