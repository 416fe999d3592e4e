import Foundation
import PinningLabPKI

/// Apple's own identity pinning (iOS 14+, macOS 11+): an Info.plist fragment with
/// `NSAppTransportSecurity` → `NSPinnedDomains` → host → `NSPinnedLeafIdentities` / `NSPinnedCAIdentities`, each an
/// array of `{SPKI-SHA256-BASE64: …}` dictionaries, and `NSIncludesSubdomains`.
///
/// Semantics, as App Transport Security applies them (Apple's Information Property List reference):
/// - `NSPinnedLeafIdentities`: the server's **leaf** certificate's SPKI digest must be one of these.
/// - `NSPinnedCAIdentities`: the SPKI digest of **at least one CA or sub-CA certificate in the chain** the server
///   presents must be one of these — any CA of the chain, not a particular position (an intermediate or a root pin
///   both land here).
/// - A domain needs one of the two keys or both; with both, "both must produce a match", so this export never
///   mixes leaf and CA pins in one domain (a chain would have to satisfy both lists).
/// - `NSIncludesSubdomains`: the pins also apply to every subdomain of the host.
/// - Pinning only tightens: the chain must still pass the system's trust evaluation (the lab root must be
///   trusted on the device). There is no expiration date: the pins hold until the app is updated.
enum NSPinnedDomainsExport {
    static func render(_ e: PinExport) -> [ExportFile] {
        let pins = e.spkiPins
        let isCA = pins.first?.certificateRole.isCA ?? false
        let identities: PropertyList = .array(
            pins.map { .dictionary([("SPKI-SHA256-BASE64", .string($0.spkiBase64))]) })
        let domain: PropertyList = .dictionary([
            ("NSIncludesSubdomains", .bool(e.includeSubdomains)),
            (isCA ? "NSPinnedCAIdentities" : "NSPinnedLeafIdentities", identities),
        ])
        let ats: PropertyList = .dictionary([("NSPinnedDomains", .dictionary([(e.host, domain)]))])
        let root: PropertyList = .dictionary([("NSAppTransportSecurity", ats)])
        var comment = e.headerLines(.nsPinnedDomains)
        comment += [
            "Merge NSAppTransportSecurity into the app's Info.plist (iOS 14+, macOS 11+). URLSession enforces it; no code.",
            isCA
                ? "NSPinnedCAIdentities: ATS accepts the chain only if at least one CA certificate in it (any intermediate or root) has one of these SPKI digests."
                : "NSPinnedLeafIdentities: ATS accepts the chain only if the server's leaf certificate has one of these SPKI digests.",
            "NSIncludesSubdomains \(e.includeSubdomains): "
                + (e.includeSubdomains
                    ? "the pins apply to every subdomain of \(e.host) too."
                    : "subdomains of \(e.host) are not pinned."),
            "The chain must still pass the system's own trust evaluation; NSPinnedDomains has no expiration date.",
        ]
        return [ExportFile(name: ExportFormat.nsPinnedDomains.fileName, text: root.document(comment: comment))]
    }
}

extension ExportFormat {
    /// Apple's identity pinning (iOS 14+): an Info.plist fragment with `NSAppTransportSecurity` →
    /// `NSPinnedDomains` (`NSPinnedLeafIdentities` or `NSPinnedCAIdentities`, `NSIncludesSubdomains`).
    public static let nsPinnedDomains = ExportFormat(
        "nspinneddomains", fileName: "NSPinnedDomains-Info.plist", render: NSPinnedDomainsExport.render)
}
