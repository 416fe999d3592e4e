import Foundation

// Figures for `pinlab bench`, the benchmark and the reliability executables: one definition of each.

/// The median of `xs` (the mean of the middle two for an even count); NaN when empty.
package func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// The `p` quantile of `xs` (0…1, nearest rank below); NaN when empty.
package func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[min(s.count - 1, Int(Double(s.count - 1) * p))]
}

/// This process's resident set in KiB (`VmRSS` of /proc/self/status); 0 where there is no /proc.
package func rssKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

/// This process's threads (/proc/self/task).
package func threadCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).count
}

/// This process's open descriptors (/proc/self/fd).
package func fdCount() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count }
