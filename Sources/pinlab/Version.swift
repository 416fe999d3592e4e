import PinningLab

/// The version of this release of PinningLab: the one place it is written (scripts/release reads it from here).
let pinlabVersion = "0.9.0"

/// The git commit this binary was built from: stamped by scripts/release (it writes BuildStamp.generated.swift,
/// ignored by git, and builds with -DPINLAB_STAMPED), "unknown" in any other build.
#if PINLAB_STAMPED
    let pinlabCommit = stampedCommit
#else
    let pinlabCommit = "unknown"
#endif

/// `pinlab --version`: the version, the commit, and the TLS libraries the engines run on (read at run time).
var pinlabVersionText: String {
    (["pinlab \(pinlabVersion) (commit \(pinlabCommit))"]
        + Engines.all.map { "\($0.name) engine: \($0.libraryVersion)" }).joined(separator: "\n")
}
