import Foundation

/// The shard a CI system gave this process through its environment: the one place that maps those variables to a
/// ``CellShard`` (`pinlab check`, `pinlab check --batch` and `pinlab lab check` read it when no `--shard` is given).
///
/// | system | index | total | counts from |
/// |---|---|---|---|
/// | Bazel, googletest | `TEST_SHARD_INDEX` | `TEST_TOTAL_SHARDS` | 0 (and the runner touches `TEST_SHARD_STATUS_FILE`) |
/// | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | `PINLAB_SHARD_TOTAL` (the Job exports none) | 0 |
/// | GitLab `parallel:` | `CI_NODE_INDEX` | `CI_NODE_TOTAL` | 1 |
/// | CircleCI `parallelism:` | `CIRCLE_NODE_INDEX` | `CIRCLE_NODE_TOTAL` | 0 |
///
/// An empty variable counts as unset. When several systems' indexes are set (a Bazel test inside a GitLab job), the
/// first in this order wins — the runner closest to the process — and the others are named as ignored. A total
/// without its index is refused unless it is 1 (GitLab sets `CI_NODE_TOTAL=1` in every job without `parallel:`);
/// an index without its total, an index out of range, a total of 0 and a value that is not a number are refused,
/// each naming the variable and the fix.
package struct EnvironmentShard: Sendable, Hashable {
    /// A CI system that tells each process which piece of a job it is.
    package struct System: Sendable, Hashable {
        /// As said on standard error: "Bazel", "Kubernetes", "GitLab", "CircleCI".
        package let name: String
        package let indexVariable: String
        package let totalVariable: String
        /// The number of the first shard: 0 or 1.
        package let firstIndex: Int
        /// Where the system sets the variables, for a fix.
        let setBy: String
    }

    package static let bazel = System(
        name: "Bazel", indexVariable: "TEST_SHARD_INDEX", totalVariable: "TEST_TOTAL_SHARDS", firstIndex: 0,
        setBy: "Bazel and googletest set both for a test with shard_count")
    package static let kubernetes = System(
        name: "Kubernetes", indexVariable: "JOB_COMPLETION_INDEX", totalVariable: "PINLAB_SHARD_TOTAL", firstIndex: 0,
        setBy: "an Indexed Job exports no total: set PINLAB_SHARD_TOTAL to the Job's completions in the pod's env")
    package static let gitLab = System(
        name: "GitLab", indexVariable: "CI_NODE_INDEX", totalVariable: "CI_NODE_TOTAL", firstIndex: 1,
        setBy: "GitLab sets both in a job with parallel:")
    package static let circleCI = System(
        name: "CircleCI", indexVariable: "CIRCLE_NODE_INDEX", totalVariable: "CIRCLE_NODE_TOTAL", firstIndex: 0,
        setBy: "CircleCI sets both in a job with parallelism:")

    /// The systems, in the order they are asked.
    package static let systems: [System] = [bazel, kubernetes, gitLab, circleCI]

    /// The variable Bazel names the file a runner that honours sharding must touch by.
    package static let statusFileVariable = "TEST_SHARD_STATUS_FILE"

    /// Every variable read.
    package static var variableNames: [String] {
        systems.flatMap { [$0.indexVariable, $0.totalVariable] } + [statusFileVariable]
    }

    package let shard: CellShard
    package let system: System
    /// Bazel's `TEST_SHARD_STATUS_FILE`, to touch (``touchStatusFile()``).
    package let statusFile: String?
    /// Other systems whose index was set too, and not read.
    package let ignored: [System]

    /// `pinlab: shard 2/4 from GitLab's CI_NODE_INDEX/CI_NODE_TOTAL`, for standard error.
    package var announcement: String {
        var s = "pinlab: shard \(shard) from \(system.name)'s \(system.indexVariable)/\(system.totalVariable)"
        if !ignored.isEmpty {
            s += " (\(ignored.map { "\($0.indexVariable)/\($0.totalVariable)" }.joined(separator: ", ")) ignored)"
        }
        return s
    }

    /// The systems whose index is set (non-empty) in `environment`.
    package static func systemsSet(in environment: [String: String]) -> [System] {
        systems.filter { !(environment[$0.indexVariable] ?? "").trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// The shard `environment` gives, nil when it gives none; throws a ``CheckSetupError`` naming the variable and
    /// the fix when its values are inconsistent.
    package static func read(_ environment: [String: String]) throws -> EnvironmentShard? {
        func value(_ name: String) -> String? {
            guard let v = environment[name]?.trimmingCharacters(in: .whitespaces), !v.isEmpty else { return nil }
            return v
        }
        let orFlag = "or give --shard K/N (the command line wins over the environment)"
        let set = systemsSet(in: environment)
        guard let system = set.first else {
            for s in systems {
                guard let total = value(s.totalVariable), total != "1" else { continue }
                throw CheckSetupError(
                    .runOption,
                    problem:
                        "\(s.totalVariable)=\(total) is set but \(s.indexVariable) is not: which shard is this process?",
                    fix: "set \(s.indexVariable) too (\(s.setBy)), unset \(s.totalVariable), \(orFlag).")
            }
            return nil
        }
        let rawIndex = value(system.indexVariable) ?? ""
        guard let index = Int(rawIndex) else {
            throw CheckSetupError(
                .runOption, problem: "\(system.indexVariable)='\(rawIndex)' is not a number.",
                fix: "set it to the shard's number, from \(system.firstIndex) (\(system.setBy)), unset it, \(orFlag).")
        }
        guard let rawTotal = value(system.totalVariable) else {
            throw CheckSetupError(
                .runOption,
                problem:
                    "\(system.indexVariable)=\(rawIndex) is set but \(system.totalVariable) is not: a shard of how many?",
                fix: "set \(system.totalVariable) to the number of shards (\(system.setBy)), \(orFlag).")
        }
        guard let total = Int(rawTotal) else {
            throw CheckSetupError(
                .runOption, problem: "\(system.totalVariable)='\(rawTotal)' is not a number.",
                fix: "set it to the number of shards, at least 1 (\(system.setBy)), \(orFlag).")
        }
        guard total >= 1 else {
            throw CheckSetupError(
                .runOption,
                problem: "\(system.totalVariable)=\(rawTotal): a run cannot be split in \(rawTotal) shards.",
                fix: "set it to the number of shards, at least 1, \(orFlag).")
        }
        let last = system.firstIndex + total - 1
        guard (system.firstIndex...last).contains(index) else {
            throw CheckSetupError(
                .runOption,
                problem:
                    "\(system.indexVariable)=\(rawIndex) is not a shard of \(system.totalVariable)=\(rawTotal): \(system.name) counts from \(system.firstIndex), so it runs from \(system.firstIndex) to \(last).",
                fix:
                    "set \(system.indexVariable) from \(system.firstIndex) to \(last), or \(system.totalVariable) to the number of shards, \(orFlag)."
            )
        }
        return EnvironmentShard(
            shard: try CellShard(index: index - system.firstIndex + 1, count: total), system: system,
            statusFile: system == bazel ? value(statusFileVariable) : nil, ignored: Array(set.dropFirst()))
    }

    /// Touches Bazel's status file (creates it, or updates its time), which tells Bazel the test honours sharding.
    package func touchStatusFile() throws {
        guard let statusFile else { return }
        let fd = open(statusFile, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        var failure = fd < 0 ? errno : 0
        if fd >= 0 {
            if futimens(fd, nil) != 0 { failure = errno }
            close(fd)
        }
        guard failure != 0 else { return }
        throw CheckSetupError(
            .runOption,
            problem:
                "\(Self.statusFileVariable)=\(statusFile) cannot be touched: \(String(cString: strerror(failure)).lowercased()).",
            fix: "let Bazel name a file in a writable folder, or unset \(Self.statusFileVariable).")
    }
}
