/// How far a check has come: `pinlab check` draws it on a terminal.
public struct CheckProgress: Sendable, Hashable {
    /// Cells judged so far, and the cells the run will judge (skipped cells are not counted).
    public var done: Int
    public var total: Int
    /// Cells judged so far that deviate (fail, disagree, error).
    public var deviations: Int
    /// Seconds since the run started.
    public var elapsedSeconds: Double

    public init(done: Int, total: Int, deviations: Int, elapsedSeconds: Double) {
        self.done = done
        self.total = total
        self.deviations = deviations
        self.elapsedSeconds = elapsedSeconds
    }

    /// The time left at the pace so far, once a cell is done.
    public var estimatedSecondsLeft: Double? {
        done == 0 ? nil : elapsedSeconds / Double(done) * Double(total - done)
    }
}
