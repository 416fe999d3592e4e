import Foundation
import PinningLabPKI

/// TrustKit (datatheorem/TrustKit): the `TSKConfiguration` dictionary, as Info.plist XML and as Swift.
/// Key strings as TrustKit defines them (`TSKTrustKitConfig.m`): `kTSKPinnedDomains` = "TSKPinnedDomains", etc.
enum TrustKitExport {
    static func plist(_ e: PinExport) -> [ExportFile] {
        let domain: PropertyList = .dictionary([
            ("TSKPublicKeyHashes", .array(e.spkiPins.map { .string($0.spkiBase64) })),
            ("TSKIncludeSubdomains", .bool(e.includeSubdomains)),
            ("TSKEnforcePinning", .bool(true)),
        ])
        let config: PropertyList = .dictionary([
            (
                "TSKConfiguration",
                .dictionary([
                    ("TSKSwizzleNetworkDelegates", .bool(false)),
                    ("TSKPinnedDomains", .dictionary([(e.host, domain)])),
                ])
            )
        ])
        var comment = e.headerLines(.trustKitPlist)
        comment += e.trustKitKeyTypeWarnings
        comment.append("Merge the TSKConfiguration key into the app's Info.plist; TrustKit reads it at start-up.")
        comment.append("TSKSwizzleNetworkDelegates is false: call TSKPinningValidator from your URLSession delegate.")
        return [ExportFile(name: ExportFormat.trustKitPlist.fileName, text: config.document(comment: comment))]
    }

    static func swift(_ e: PinExport) -> [ExportFile] {
        var s = slashComment(e.headerLines(.trustKitSwift) + e.trustKitKeyTypeWarnings)
        s += """
            import TrustKit

            /// Call once, early (e.g. in `application(_:didFinishLaunchingWithOptions:)`).
            func configurePinningLabTrustKit() {
                let trustKitConfig: [String: Any] = [
                    kTSKSwizzleNetworkDelegates: false,
                    kTSKPinnedDomains: [
                        \(quoted(e.host)): [
                            kTSKEnforcePinning: true,
                            kTSKIncludeSubdomains: \(e.includeSubdomains),
                            kTSKPublicKeyHashes: [

            """
        for p in e.spkiPins { s += "                    \(quoted(p.spkiBase64)),  // \(p.label)\n" }
        s += """
                            ],
                        ],
                    ],
                ]
                TrustKit.initSharedInstance(withConfiguration: trustKitConfig)
            }

            """
        return [ExportFile(name: ExportFormat.trustKitSwift.fileName, text: s)]
    }
}

extension ExportFormat {
    /// TrustKit's `TSKConfiguration` as Info.plist XML.
    public static let trustKitPlist = ExportFormat(
        "trustkit-plist", fileName: "TrustKit-Info.plist", requiresTwoPins: true, render: TrustKitExport.plist)

    /// TrustKit's configuration as a Swift dictionary literal for `TrustKit.initSharedInstance(withConfiguration:)`.
    public static let trustKitSwift = ExportFormat(
        "trustkit-swift", fileName: "TrustKitConfiguration.swift", requiresTwoPins: true, render: TrustKitExport.swift)
}
