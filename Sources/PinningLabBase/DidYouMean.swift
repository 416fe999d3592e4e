/// The closest candidate to `word`, if it is close enough to be a likely typo: the one "did you mean" rule of the
/// spec, scenario, template and command-line errors. A candidate qualifies when one of the two starts with the
/// other (three letters at least) or its edit distance is at most a third of the candidate's length (2 at least).
package func suggestion(_ word: String, in candidates: some Sequence<String>) -> String? {
    let w = word.lowercased()
    var best: (String, Int)?
    for c in candidates {
        let lc = c.lowercased()
        let prefixMatch = w.count >= 3 && (lc.hasPrefix(w) || w.hasPrefix(lc))
        let d = editDistance(w, lc)
        guard prefixMatch || d <= max(2, c.count / 3) else { continue }
        if best == nil || d < best!.1 { best = (c, d) }
    }
    return best?.0
}

/// Levenshtein distance between two words (for "did you mean" hints in spec and scenario errors).
package func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var prev = Array(0...b.count)
    var cur = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        cur[0] = i
        for j in 1...b.count {
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&prev, &cur)
    }
    return prev[b.count]
}

/// "did you mean 'x'?", or every candidate that continues `word` with a dash ("did you mean 'trustkit-plist' or
/// 'trustkit-swift'?"), or "" — the one hint of every "unknown name" error (spec, scenarios, exports, CLI).
package func didYouMean(_ word: String, _ candidates: some Sequence<String>) -> String {
    let family = candidates.filter { $0.lowercased().hasPrefix(word.lowercased() + "-") }
    if family.count > 4 {
        return
            "did you mean \(family.prefix(3).map { "'\($0)'" }.joined(separator: ", ")), … (\(family.count) names start with '\(word)-')?"
    }
    if family.count > 1 {
        let quoted = family.map { "'\($0)'" }
        return "did you mean \(quoted.dropLast().joined(separator: ", ")) or \(quoted.last!)?"
    }
    return suggestion(word, in: candidates).map { "did you mean '\($0)'?" } ?? ""
}
