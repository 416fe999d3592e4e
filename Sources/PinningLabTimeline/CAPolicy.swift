public import Foundation

/// How a certificate authority and an operator renew a server's certificate over time: what `pinlab timeline`
/// issues at every renewal. Presets follow what CAs publish: Let's Encrypt's intermediate pool ("to discourage key
/// pinning"), its six-day certificates, and the CA/Browser Forum's SC-081v3 schedule of maximum validity.
public struct CAPolicy: Sendable, Hashable, Codable {
    public enum Rotation: String, Sendable, Hashable, Codable, CaseIterable {
        /// The next intermediate of the pool at every renewal.
        case roundRobin = "round-robin"
        /// An intermediate of the pool drawn at every renewal (from a fixed seed: the same run gives the same draws).
        case random
    }

    /// A preset's name, or `custom`.
    public var name: String
    /// The certificate's validity in days; with ``followsSC081`` the schedule's maximum at the date of issuance.
    public var validityDays: Int
    /// Validity per SC-081v3 from the date of each issuance: 398 days before 2026-03-15, 200 until 2027-03-15,
    /// 100 until 2029-03-15, 47 from then on.
    public var followsSC081: Bool
    /// Days between two renewals; nil: two thirds of the validity (the ACME clients' habit), at least one day.
    public var renewEveryDays: Int?
    /// A new key at every renewal (the first re-key uses the backup key the app pinned in advance), or the same key.
    public var rekey: Bool
    /// Issuing intermediates under the root (1: always the same one).
    public var poolSize: Int
    public var rotation: Rotation
    /// The day a new root takes over (its intermediates issue from then on), or nil.
    public var rolloverDay: Int?
    /// How long after the rollover the server still sends the new root cross-signed by the old one.
    public var crossSignDays: Int
    /// The calendar day (YYYY-MM-DD) a new hierarchy takes over, whatever day 0 is: resolved to ``rolloverDay``
    /// when the timeline runs (day 0 when the run starts on or after it). ``rolloverDay`` wins when both are set.
    public var rolloverDate: String?
    /// Validity by date of issuance: each step applies from its date on (the last one whose date has come wins);
    /// before the first, ``validityDays``. Let's Encrypt's classic profile: 90 days, 64 from 2027-02-10, 45 from
    /// 2028-02-16.
    public var validitySteps: [ValidityStep]?
    /// The shape of the hierarchy that takes over at the rollover (names, key types, EKUs, pool); nil: the lab's
    /// `lab-root-2` with P-256 intermediates, as many as ``poolSize``.
    public var nextHierarchy: Hierarchy?
    /// Day 0 when the command line gives no `--start` (a preset that replays a dated switch starts before it).
    public var defaultStart: String?

    /// Validity from a date of issuance on.
    public struct ValidityStep: Sendable, Hashable, Codable {
        /// YYYY-MM-DD.
        public var from: String
        public var days: Int
        public init(from: String, days: Int) {
            self.from = from
            self.days = days
        }
    }

    /// A hierarchy a rollover moves to, replicated with lab keys: its root (``rootKeyType``; the entity stays
    /// `lab-root-2`, so the pins of `root-spki+next-root` apply) and its issuing intermediates.
    public struct Hierarchy: Sendable, Hashable, Codable {
        /// What it replicates, e.g. `Let's Encrypt Generation Y (RSA)`.
        public var name: String
        /// The root's common name, e.g. `PinningLab YR (Gen Y RSA root)`.
        public var rootCommonName: String
        public var rootKeyType: String
        /// The intermediates' entity names, e.g. `lab-yr1`, `lab-yr2`, `lab-yr3`.
        public var intermediates: [String]
        public var intermediateKeyType: String
        /// The intermediates' extended key usages (Generation Y: serverAuth only — no clientAuth).
        public var intermediateUsages: [String]
        public init(
            name: String, rootCommonName: String, rootKeyType: String, intermediates: [String],
            intermediateKeyType: String, intermediateUsages: [String]
        ) {
            self.name = name
            self.rootCommonName = rootCommonName
            self.rootKeyType = rootKeyType
            self.intermediates = intermediates
            self.intermediateKeyType = intermediateKeyType
            self.intermediateUsages = intermediateUsages
        }
    }

    public init(
        name: String = "custom", validityDays: Int = 90, followsSC081: Bool = false, renewEveryDays: Int? = nil,
        rekey: Bool = false, poolSize: Int = 1, rotation: Rotation = .roundRobin, rolloverDay: Int? = nil,
        crossSignDays: Int = 365
    ) {
        self.name = name
        self.validityDays = validityDays
        self.followsSC081 = followsSC081
        self.renewEveryDays = renewEveryDays
        self.rekey = rekey
        self.poolSize = poolSize
        self.rotation = rotation
        self.rolloverDay = rolloverDay
        self.crossSignDays = crossSignDays
    }

    /// Let's Encrypt's classic profile from its 2025-12-02 announcement: 90 days, 64 from 2027-02-10, 45 from
    /// 2028-02-16.
    public static let letsEncryptClassicValidity = [
        ValidityStep(from: "2027-02-10", days: 64), ValidityStep(from: "2028-02-16", days: 45),
    ]

    /// Let's Encrypt's Generation Y, replicated with lab keys: classic issuance moved to it on 2026-05-13, root YR
    /// (RSA-4096) or YE (P-384), intermediates YR1–YR3 (RSA-2048) or YE1–YE3 (P-384) without the clientAuth EKU,
    /// the new roots cross-signed by ISRG Root X1 / X2 (here: by lab-root).
    public static func generationY(ecdsa: Bool) -> Hierarchy {
        ecdsa
            ? Hierarchy(
                name: "Let's Encrypt Generation Y (ECDSA)", rootCommonName: "PinningLab YE (Gen Y ECDSA root)",
                rootKeyType: "p384", intermediates: ["lab-ye1", "lab-ye2", "lab-ye3"], intermediateKeyType: "p384",
                intermediateUsages: ["serverAuth"])
            : Hierarchy(
                name: "Let's Encrypt Generation Y (RSA)", rootCommonName: "PinningLab YR (Gen Y RSA root)",
                rootKeyType: "rsa4096", intermediates: ["lab-yr1", "lab-yr2", "lab-yr3"],
                intermediateKeyType: "rsa2048",
                intermediateUsages: ["serverAuth"])
    }

    static func letsEncrypt(_ name: String, ecdsa: Bool) -> CAPolicy {
        var p = CAPolicy(name: name, validityDays: 90, rekey: true, poolSize: 5, rotation: .random, crossSignDays: 3650)
        p.rolloverDate = "2026-05-13"
        p.validitySteps = letsEncryptClassicValidity
        p.nextHierarchy = generationY(ecdsa: ecdsa)
        p.defaultStart = "2026-03-01"
        return p
    }

    /// The presets by name.
    public static let presets: [String: CAPolicy] = [
        // Let's Encrypt today: 90-day certificates renewed at day 60 with a new key (certbot's default), drawn from
        // the 2024 pool (R10–R14) until 2026-05-13, then from Generation Y's YR1–YR3 under the root YR, sent
        // cross-signed by the old root; classic validity 64 days from 2027-02-10 and 45 from 2028-02-16. Day 0 is
        // 2026-03-01 unless --start says otherwise.
        "letsencrypt": letsEncrypt("letsencrypt", ecdsa: false),
        // The same with the ECDSA hierarchy: YE (P-384) and YE1–YE3.
        "letsencrypt-ecdsa": letsEncrypt("letsencrypt-ecdsa", ecdsa: true),
        // Let's Encrypt before Generation Y: 90 days, five intermediates (R10–R14 or E5–E9) drawn at random.
        "letsencrypt-2024": CAPolicy(
            name: "letsencrypt-2024", validityDays: 90, rekey: true, poolSize: 5, rotation: .random),
        // Let's Encrypt's six-day certificates (the "shortlived" profile), renewed every three to four days.
        "letsencrypt-6day": CAPolicy(
            name: "letsencrypt-6day", validityDays: 6, renewEveryDays: 4, rekey: true, poolSize: 5, rotation: .random),
        // SC-081v3's maximum validity at each issuance, one intermediate, the key kept.
        "sc081": CAPolicy(name: "sc081", validityDays: 200, followsSC081: true, rekey: false),
        // SC-081v3's final 47 days, re-keying at every renewal.
        "sc081-47": CAPolicy(name: "sc081-47", validityDays: 47, rekey: true),
    ]

    public static var presetNames: [String] { presets.keys.sorted() }

    /// SC-081v3's maximum validity for a certificate issued on `date`.
    public static func sc081MaximumDays(at date: Date) -> Int {
        func day(_ text: String) -> Date { ISO8601DateFormatter().date(from: text + "T00:00:00Z")! }
        if date < day("2026-03-15") { return 398 }
        if date < day("2027-03-15") { return 200 }
        if date < day("2029-03-15") { return 100 }
        return 47
    }

    /// What is wrong with the policy, naming the option that sets the field; nil when it is usable.
    public func problem(horizonDays: Int) -> (option: String, problem: String, fix: String)? {
        if validityDays < 1 || validityDays > 3650 {
            return (
                "--validity", "\(validityDays) is not a validity in days",
                "give 1 to 3650 (6, 47, 100, 200, 398 are the usual)"
            )
        }
        if let r = renewEveryDays, r < 1 || r > validityDays {
            return (
                "--renew-every",
                "\(r) days: a renewal must come after at least a day and before the certificate expires (\(validityDays) days)",
                "give 1 to \(validityDays)"
            )
        }
        if poolSize < 1 || poolSize > 16 { return ("--pool", "\(poolSize) intermediates", "give 1 to 16") }
        if let text = rolloverDate, Self.day(text) == nil {
            return ("--preset", "rollover date '\(text)' is not a date", "write YYYY-MM-DD")
        }
        for step in validitySteps ?? [] where Self.day(step.from) == nil || step.days < 1 || step.days > 3650 {
            return (
                "--preset", "validity step \(step.from): \(step.days) days", "give a date YYYY-MM-DD and 1 to 3650 days"
            )
        }
        if let d = rolloverDay, d < 1 || d > horizonDays {
            return (
                "--rollover-day", "day \(d) is outside the horizon (1 to \(horizonDays))", "give a day within --horizon"
            )
        }
        if crossSignDays < 0 || crossSignDays > 3650 {
            return ("--cross-sign-days", "\(crossSignDays) days", "give 0 (no cross-sign) to 3650")
        }
        if horizonDays < 1 || horizonDays > 3650 { return ("--horizon", "\(horizonDays) days", "give 1 to 3650") }
        return nil
    }
}

/// One issuance of the plan: the day, and what the server presents from then on.
public struct Renewal: Sendable, Hashable, Codable {
    /// 0 for the certificate the app was built against.
    public var index: Int
    public var day: Int
    public var validityDays: Int
    /// The key name the leaf certifies (`K1`, the backup `K2`, then `timeline-key-N`).
    public var key: String
    /// The issuing intermediate's entity name.
    public var intermediate: String
    /// `lab-root`, or `lab-root-2` after the rollover.
    public var root: String
    /// The server sends the new root cross-signed by the old one.
    public var crossSigned: Bool
    /// What changed since the previous renewal, in words (empty for the first).
    public var changes: [String]
}

extension CAPolicy {
    /// Whether a new root takes over within the run (a day or a date).
    public var hasRollover: Bool { rolloverDay != nil || rolloverDate != nil }

    /// The policy with ``rolloverDate`` resolved against day 0 `start` into ``rolloverDay`` (0 when the run starts
    /// on or after it; none when it falls after the horizon).
    public func resolved(start: Date, horizonDays: Int) -> CAPolicy {
        var p = self
        guard p.rolloverDay == nil, let text = rolloverDate, let date = Self.day(text) else { return p }
        let days = Int((date.timeIntervalSince(start) / 86400).rounded(.up))
        if days <= horizonDays { p.rolloverDay = max(0, days) } else { p.rolloverDate = nil }
        return p
    }

    /// The certificate validity for an issuance on `date`.
    public func validity(at date: Date) -> Int {
        if followsSC081 { return Self.sc081MaximumDays(at: date) }
        var days = validityDays
        for step in validitySteps ?? [] {
            if let from = Self.day(step.from), date >= from { days = step.days }
        }
        return days
    }

    /// A day `YYYY-MM-DD` at 00:00 UTC.
    static func day(_ text: String) -> Date? {
        let iso = ISO8601DateFormatter()
        guard let d = iso.date(from: text + "T00:00:00Z"), iso.string(from: d).hasPrefix(text + "T") else { return nil }
        return d
    }

    /// The names of the pool's intermediates under the first root: the lab's `lab-intermediate-a`, `-b`, then
    /// `pool-intermediate-3`, …; under the second, the next hierarchy's (``nextHierarchy``) or `root2-intermediate-N`.
    public func poolNames(root: Int) -> [String] {
        if root == 2, let h = nextHierarchy { return h.intermediates }
        return (0..<poolSize).map { i in
            if root == 1 {
                return i == 0 ? "lab-intermediate-a" : i == 1 ? "lab-intermediate-b" : "pool-intermediate-\(i + 1)"
            }
            return "root2-intermediate-\(i + 1)"
        }
    }

    /// Every issuance from day 0 to `horizonDays`, starting on `start`.
    public func plan(horizonDays: Int, start: Date) -> [Renewal] {
        var out: [Renewal] = []
        var day = 0
        var rng = SplitMix64(seed: 0x5049_4e4c_4142)  // "PINLAB": the same draws on every run
        var index = 0
        while day <= horizonDays {
            let date = start.addingTimeInterval(Double(day) * 86400)
            let validity = validity(at: date)
            let key = !rekey || index == 0 ? "K1" : index == 1 ? "K2" : "timeline-key-\(index + 1)"
            let rootNumber = rolloverDay.map { day >= $0 } == true ? 2 : 1
            let pool = poolNames(root: rootNumber)
            let slot: Int
            if index == 0 || pool.count == 1 {
                slot = 0
            } else {
                switch rotation {
                case .roundRobin: slot = index % pool.count
                case .random: slot = Int(rng.next() % UInt64(pool.count))
                }
            }
            let crossSigned = rootNumber == 2 && crossSignDays > 0 && day < (rolloverDay ?? 0) + crossSignDays
            var r = Renewal(
                index: index, day: day, validityDays: validity, key: key, intermediate: pool[slot],
                root: rootNumber == 1 ? "lab-root" : "lab-root-2", crossSigned: crossSigned, changes: [])
            if let p = out.last {
                if p.key != r.key { r.changes.append("new key \(r.key)") }
                if p.root != r.root {
                    r.changes.append("root rollover to \(r.root)" + (nextHierarchy.map { " (\($0.name))" } ?? ""))
                }
                if p.intermediate != r.intermediate { r.changes.append("issued by \(r.intermediate)") }
                if p.crossSigned && !r.crossSigned { r.changes.append("cross-sign dropped") }
                if p.validityDays != r.validityDays {
                    r.changes.append("validity \(p.validityDays) → \(r.validityDays) days")
                }
                if r.changes.isEmpty { r.changes.append("renewed, same key and issuer") }
            }
            out.append(r)
            let every = renewEveryDays ?? max(1, validity * 2 / 3)
            // A rollover day falls between two renewals: the server switches on that day.
            if let roll = rolloverDay, day < roll, day + every > roll {
                day = roll
            } else {
                day += every
            }
            index += 1
        }
        return out
    }
}

/// A small deterministic generator (SplitMix64), so that a random rotation draws the same intermediates every run.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
