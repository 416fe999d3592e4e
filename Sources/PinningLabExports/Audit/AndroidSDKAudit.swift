import Foundation
import PinningLabModel

// MARK: - AndroidManifest.xml and build.gradle(.kts): the SDK levels an app declares

/// An SDK level an Android app declares, and the line it is written on.
struct DeclaredSDK: Sendable, Hashable {
    var level: Int
    var line: Int
}

/// The findings of the SDK levels: MASTG-TEST-0285, a minSdk below 24 trusting user-installed CAs by default, per
/// manifest or Gradle file, and certificate transparency switched off by a network security configuration of an app
/// that targets Android 17 (API 37), where the platform turns it on.
enum AndroidSDKAudit {
    /// The first API level whose default network security configuration trusts only the system CAs (Android 7.0).
    static let userCAsDistrustedFrom = 24
    /// The API level of Android 17: apps targeting it get certificate transparency checked by default.
    static let ctDefaultFrom = 37

    /// `<manifest>`: `<uses-sdk android:minSdkVersion android:targetSdkVersion>`.
    static func readManifest(_ root: XMLElementNode, file: String) throws(PinConfigError) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "android-manifest")
        guard let sdk = root.child("uses-sdk") else {
            checkMinSDK(&out)
            return out
        }
        func level(_ name: String) throws(PinConfigError) -> DeclaredSDK? {
            guard let v = sdk.attributes["android:\(name)"] ?? sdk.attributes[name] else { return nil }
            guard let n = Int(v.trimmingCharacters(in: .whitespaces)), n > 0 else {
                throw PinConfigError(
                    file: file, line: sdk.line, problem: "<uses-sdk android:\(name)=\"\(v)\">: not an API level.",
                    fix:
                        "give the merged manifest (build/intermediates/merged_manifests/…), where \(name) is a number, or the module's build.gradle."
                )
            }
            return DeclaredSDK(level: n, line: sdk.line)
        }
        out.minSdk = try level("minSdkVersion")
        out.targetSdk = try level("targetSdkVersion")
        checkMinSDK(&out)
        return out
    }

    /// `minSdk = 23`, `minSdkVersion 23`, `minSdkVersion(23)`, `minSdk 23` (and targetSdk alike) in a build.gradle or
    /// build.gradle.kts. A level written as a variable (`libs.versions…`) cannot be read: it is not reported.
    static func readGradle(_ text: String, file: String) -> AuditedFile {
        var out = AuditedFile(file: file, kind: "gradle")
        func find(_ names: [String]) -> DeclaredSDK? {
            for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                var line = Substring(raw)
                if let c = line.range(of: "//") { line = line[..<c.lowerBound] }
                let t = line.trimmingCharacters(in: .whitespaces)
                for name in names where t.hasPrefix(name) {
                    let rest = t.dropFirst(name.count)
                    // The name whole (`minSdkVersion`, not `minSdkPreview`), then `=`, `(` or spaces, then digits.
                    guard let first = rest.first, first == " " || first == "=" || first == "(" || first == "\t" else {
                        continue
                    }
                    let digits = rest.drop { $0 == " " || $0 == "=" || $0 == "(" || $0 == "\t" }.prefix { $0.isNumber }
                    if let n = Int(digits), n > 0 { return DeclaredSDK(level: n, line: i + 1) }
                }
            }
            return nil
        }
        out.minSdk = find(["minSdkVersion", "minSdk"])
        out.targetSdk = find(["targetSdkVersion", "targetSdk"])
        checkMinSDK(&out)
        return out
    }

    /// Whether a file is a Gradle build script.
    static func isGradle(_ file: String) -> Bool {
        let name = URL(fileURLWithPath: file).lastPathComponent.lowercased()
        return name.hasSuffix(".gradle") || name.hasSuffix(".gradle.kts")
    }

    static func checkMinSDK(_ out: inout AuditedFile) {
        guard let min = out.minSdk, min.level < userCAsDistrustedFrom else { return }
        let test = "MASTG-TEST-0285"
        out.add(
            AuditCheck.minSdkTrustsUserCAs, .medium, line: min.line, domain: "(every domain)", mastg: test,
            note: "\(MASTG.named(test)) fails it (minSdkVersion \(min.level) < 24).",
            message:
                "minSdk \(min.level): the app installs on Android 6.0 and older (API \(min.level)–23), whose default "
                + "network security configuration trusts user-installed CAs — an interception proxy's root a user or an MDM "
                + "installs is accepted for every unpinned connection; a network security config does not exist there to say otherwise.",
            fix:
                "raise minSdk to 24 or more; if older devices must stay supported, pin every host (pins are the only defence on them)."
        )
    }

    /// Certificate transparency switched off (`<certificateTransparency enabled="false">` outside `<debug-overrides>`)
    /// in the network security configurations of this run, judged against the highest targetSdk any manifest or Gradle
    /// file of the run declares.
    static func ctFindings(_ files: [AuditedFile]) -> [AuditFinding] {
        let target = files.compactMap(\.targetSdk).max { $0.level < $1.level }
        var out: [AuditFinding] = []
        for f in files {
            for off in f.ctDisabled {
                let severity: AuditSeverity
                let message: String
                if let target {
                    guard target.level >= ctDefaultFrom else { continue }
                    severity = .medium
                    message =
                        "<certificateTransparency enabled=\"false\">: the app targets API \(target.level) (Android 17 or later), "
                        + "where the platform checks certificate transparency by default; this turns it off"
                        + (off.domain.map { " for \($0)" } ?? " for every domain")
                        + ", so a certificate a CA issued without logging it (a mis-issued one) is accepted."
                } else {
                    severity = .low
                    message =
                        "<certificateTransparency enabled=\"false\">: for an app targeting API \(ctDefaultFrom) (Android 17) or later "
                        + "this turns off the certificate transparency check the platform makes by default"
                        + (off.domain.map { " for \($0)" } ?? " for every domain")
                        + "; give the AndroidManifest.xml or build.gradle too, to know the app's targetSdk."
                }
                out.append(
                    AuditFinding(
                        id: AuditCheck.ctDisabled, severity: severity, file: f.file, line: off.line, keyPath: nil,
                        domain: off.domain ?? "(every domain: base-config)", mastg: nil,
                        mastgNote:
                            "no MASTG test covers certificate transparency (none in OWASP/owasp-mastg at \(MASTG.entry("MASTG-TEST-0285")?.commit.prefix(10) ?? "")).",
                        message: message,
                        fix:
                            "remove the element or set enabled=\"true\"; if a private CA is the reason, put it under <trust-anchors> "
                            + "(private anchors are exempt) rather than switching the check off."))
            }
        }
        return out
    }
}
