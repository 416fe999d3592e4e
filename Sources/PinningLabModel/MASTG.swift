/// The OWASP MASTG test ids and MASWE weakness ids PinningLab cites — `pinlab check` reports, `pinlab audit` findings,
/// `pinlab intercept --evidence` — each with its title exactly as OWASP/owasp-mastg has it, and where it was copied from.
/// Every id a report prints comes from here; a scenario names the tests its cells are evidence for in its `mastg:` field,
/// and the loader refuses an id that is not listed.
///
/// Sources (git objects of https://github.com/OWASP/owasp-mastg, read from a snapshot of that repository):
/// - tests (`tests-beta/…/MASTG-TEST-NNNN.md` front matter `title:`/`weakness:`, and v1 `tests/…`): commit
///   10699fbe39806dbf47f8ab433f2b1eb64e38e35e, 2025-07-29;
/// - weaknesses (`weaknesses/MASVS-NETWORK/MASWE-NNNN.md` `title:`): commit a2ceedf427fc4d78c7c1af2ad1038dc796f43b92,
///   2025-07-14, the last commit holding them before 67852810 ("remove weaknesses") moved them to OWASP/maswe.
public enum MASTG {
    /// One test or weakness of the list.
    public struct Entry: Sendable, Hashable {
        /// `MASTG-TEST-0283`, `MASWE-0052`.
        public let id: String
        /// The title as OWASP/owasp-mastg writes it (trailing spaces trimmed).
        public let title: String
        /// For a test: the MASWE weakness its front matter names (`weakness:`); `nil` for v1 tests and weaknesses.
        public let weakness: String?
        /// `android`, `ios`, `network` (the test's `platform:`), or `android, ios` for a weakness.
        public let platform: String
        /// The owasp-mastg commit the title was copied from.
        public let commit: String
        /// That commit's date (committer date, UTC day).
        public let date: String
        /// The path in owasp-mastg at that commit.
        public let path: String
        /// v1 tests are `deprecated` upstream (covered by v2 tests) or plain v1; v2 tests and weaknesses are `v2`.
        public let status: String
    }

    static let testsCommit = "10699fbe39806dbf47f8ab433f2b1eb64e38e35e"
    static let testsDate = "2025-07-29"
    static let weaknessesCommit = "a2ceedf427fc4d78c7c1af2ad1038dc796f43b92"
    static let weaknessesDate = "2025-07-14"

    private static func v2(_ id: String, _ title: String, weakness: String, platform: String, dir: String = "android")
        -> Entry
    {
        Entry(
            id: id, title: title, weakness: weakness, platform: platform, commit: testsCommit, date: testsDate,
            path: "tests-beta/\(dir)/MASVS-NETWORK/\(id).md", status: "v2")
    }
    private static func v1(_ id: String, _ title: String, platform: String, status: String) -> Entry {
        Entry(
            id: id, title: title, weakness: nil, platform: platform, commit: testsCommit, date: testsDate,
            path: "tests/\(platform)/MASVS-NETWORK/\(id).md", status: status)
    }
    private static func weakness(_ id: String, _ title: String) -> Entry {
        Entry(
            id: id, title: title, weakness: nil, platform: "android, ios", commit: weaknessesCommit,
            date: weaknessesDate,
            path: "weaknesses/MASVS-NETWORK/\(id).md", status: "v2")
    }

    /// The list, tests first, then weaknesses.
    public static let entries: [Entry] = [
        v2(
            "MASTG-TEST-0217", "Insecure TLS Protocols Explicitly Allowed in Code", weakness: "MASWE-0050",
            platform: "android"),
        v2("MASTG-TEST-0218", "Insecure TLS Protocols in Network Traffic", weakness: "MASWE-0050", platform: "network"),
        v2(
            "MASTG-TEST-0235", "Android App Configurations Allowing Cleartext Traffic", weakness: "MASWE-0050",
            platform: "android"),
        v2(
            "MASTG-TEST-0242", "Missing Certificate Pinning in Network Security Configuration", weakness: "MASWE-0047",
            platform: "android"),
        v2(
            "MASTG-TEST-0243", "Expired Certificate Pins in the Network Security Configuration", weakness: "MASWE-0047",
            platform: "android"),
        v2(
            "MASTG-TEST-0244", "Missing Certificate Pinning in Network Traffic", weakness: "MASWE-0047",
            platform: "network"),
        v2("MASTG-TEST-0282", "Unsafe Custom Trust Evaluation", weakness: "MASWE-0052", platform: "android"),
        v2(
            "MASTG-TEST-0283", "Incorrect Implementation of Server Hostname Verification", weakness: "MASWE-0052",
            platform: "android"),
        v2(
            "MASTG-TEST-0285", "Outdated Android Version Allowing Trust in User-Provided CAs", weakness: "MASWE-0052",
            platform: "android"),
        v2(
            "MASTG-TEST-0286", "Network Security Configuration Allowing Trust in User-Provided CAs",
            weakness: "MASWE-0052", platform: "android"),
        v1(
            "MASTG-TEST-0022", "Testing Custom Certificate Stores and Certificate Pinning", platform: "android",
            status: "deprecated"),
        v1("MASTG-TEST-0065", "Testing Data Encryption on the Network", platform: "ios", status: "v1"),
        v1(
            "MASTG-TEST-0068", "Testing Custom Certificate Stores and Certificate Pinning", platform: "ios",
            status: "v1"),
        weakness("MASWE-0047", "Insecure Identity Pinning"),
        weakness("MASWE-0050", "Cleartext Traffic"),
        weakness("MASWE-0052", "Insecure Certificate Validation"),
    ]

    private static let byID: [String: Entry] = Dictionary(uniqueKeysWithValues: entries.map { ($0.id, $0) })

    /// The entry of `id`, or `nil` when the list does not hold it.
    public static func entry(_ id: String) -> Entry? { byID[id] }

    /// The title of `id`; `nil` when the list does not hold it.
    public static func title(_ id: String) -> String? { byID[id]?.title }

    /// `MASTG-TEST-0283 (Incorrect Implementation of Server Hostname Verification)`; the bare id when unlisted.
    public static func named(_ id: String) -> String {
        title(id).map { "\(id) (\($0))" } ?? id
    }

    /// A test id and the weakness it names: `["MASTG-TEST-0283", "MASWE-0052"]` (just the id for a v1 test).
    public static func withWeakness(_ id: String) -> [String] {
        [id] + (byID[id]?.weakness.map { [$0] } ?? [])
    }

    /// The ids a scenario's `mastg:` field names, with the weaknesses of those tests, in list order, without repeats.
    public static func ids(forTests tests: [String]) -> [String] {
        let wanted = Set(tests.flatMap(withWeakness))
        return entries.map(\.id).filter(wanted.contains)
    }
}
