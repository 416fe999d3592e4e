import Foundation
import PinningLabCore
import PinningLabModel
import PinningLabPKI

/// Hands out cells to workers so that every worker stays busy until the last cell, while each server (one per
/// scenario and engine) serves one cell at a time — so each observation belongs to exactly one cell. Workers
/// prefer cells of servers already running; a new server is started only when none is idle.
actor CellScheduler {
    struct Job: Sendable {
        var scenario: Scenario
        var engine: any TLSEngine
        /// The profiles to run (the client's supported ones).
        var profiles: [PinProfile]
        /// The profiles of this run's shard (all without `--shard`): the report lists only these.
        var inShard: [PinProfile] = PinProfile.all
        /// The platform policy the cells are judged by.
        var platform: PlatformPolicy?
        /// The checks the client declares.
        var checks: ClientChecks = .undeclared
    }
    struct Assignment: Sendable {
        var index: Int
        var job: Job
        var profile: PinProfile
        /// The job's running server; `nil` when the worker must start it.
        var server: FixtureServer?
    }
    private struct State {
        var remaining: [PinProfile]
        var busy = false
        var started = false
        var server: FixtureServer?
        var verdicts: [PinProfile: Verdict] = [:]
        var abandoned: (Verdict.Status, String)?
    }
    private let jobs: [Job]
    private var states: [State]
    private var nextUnstarted = 0

    private let progress: (@Sendable (CheckProgress) -> Void)?
    private let total: Int
    private var done = 0
    private var deviations = 0
    private let clock = ContinuousClock.now

    init(_ jobs: [Job], progress: (@Sendable (CheckProgress) -> Void)? = nil) {
        self.jobs = jobs
        self.states = jobs.map { State(remaining: $0.profiles) }
        self.progress = progress
        self.total = jobs.reduce(0) { $0 + $1.profiles.count }
    }

    private func report(_ cells: Int, deviating: Int) {
        done += cells
        deviations += deviating
        progress?(
            CheckProgress(
                done: done, total: total, deviations: deviations,
                elapsedSeconds: seconds(ContinuousClock.now - clock)))
    }

    func take() -> Assignment? {
        if let i = states.indices.first(where: {
            states[$0].started && !states[$0].busy && !states[$0].remaining.isEmpty
        }) {
            return assign(i)
        }
        while nextUnstarted < states.count {
            let i = nextUnstarted
            nextUnstarted += 1
            if !states[i].remaining.isEmpty {
                states[i].started = true
                return assign(i)
            }
        }
        return nil
    }

    private func assign(_ i: Int) -> Assignment {
        states[i].busy = true
        let p = states[i].remaining.removeFirst()
        return Assignment(index: i, job: jobs[i], profile: p, server: states[i].server)
    }

    /// Records a verdict; returns the server when the job has no cell left (the caller stops it).
    func finish(_ i: Int, _ p: PinProfile, _ v: Verdict, server: FixtureServer?) -> FixtureServer? {
        states[i].verdicts[p] = v
        states[i].server = server
        report(1, deviating: v.status.isDeviation ? 1 : 0)
        states[i].busy = false
        if states[i].remaining.isEmpty {
            states[i].server = nil
            return server
        }
        return nil
    }

    /// The job's server could not start: every cell of it is not run.
    func abandon(_ i: Int, status: Verdict.Status, reason: String) {
        states[i].abandoned = (status, reason)
        let left = states[i].remaining.count + 1
        report(left, deviating: status.isDeviation ? left : 0)
        states[i].remaining = []
        states[i].busy = false
    }

    /// Every cell in catalogue order (scenario, engine, profile), including skipped and not-run ones.
    func verdicts(client: String, supported: Set<PinProfile>?) -> [Verdict] {
        var out: [Verdict] = []
        for (job, st) in zip(jobs, states) {
            let s = job.scenario
            for p in job.inShard {
                if let v = st.verdicts[p] {
                    out.append(v)
                } else if !(supported?.contains(p) ?? true) {
                    out.append(
                        .notRun(
                            scenario: s.id, profile: p, engine: job.engine.name, client: client,
                            expected: s.expected(p, platform: job.platform, checks: job.checks), status: .skipped,
                            reason: "the client does not support the profile \(p)"))
                } else {
                    let (status, reason) = st.abandoned ?? (.error, "the cell was not run")
                    out.append(
                        .notRun(
                            scenario: s.id, profile: p, engine: job.engine.name, client: client,
                            expected: s.expected(p, platform: job.platform, checks: job.checks), status: status,
                            reason: reason))
                }
            }
        }
        return out
    }
}
