import Foundation
import PinningLabBase
import PinningLabPKI  // Locked

/// SIGINT and SIGTERM, caught from the moment this is made (their default actions are replaced at once, so a signal
/// that arrives before anyone waits is not lost): `pinlab serve` waits for one, `pinlab intercept` polls `fired`,
/// `pinlab check` and `pinlab lab check` pass an `action` that ends the process (it receives the signal's number).
/// `cancel()` restores the defaults.
final class TerminationSignals: Sendable {
    private struct State {
        var signalled = false
        var number: Int32?
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Locked(State())
    private let sources = Locked<[any DispatchSourceSignal]>([])

    /// - Parameter action: run on the signal queue for each signal, after `fired` is set, with the signal's number.
    init(_ label: String, action: (@Sendable (Int32) -> Void)? = nil) {
        let queue = DispatchQueue(label: label)
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                self?.fire(sig)
                action?(sig)
            }
            source.resume()
            sources.withLock { $0.append(source) }
        }
    }

    /// Whether SIGINT or SIGTERM has arrived.
    var fired: Bool { state.withLock { $0.signalled } }

    /// The first signal that arrived (SIGINT or SIGTERM), if any.
    var signalNumber: Int32? { state.withLock { $0.number } }

    /// The exit status a process ended by that signal reports by convention: 130 after SIGINT, 143 after SIGTERM.
    var exitStatus: Int32? { signalNumber.map { 128 + $0 } }

    private func fire(_ sig: Int32) {
        let resume: CheckedContinuation<Void, Never>? = state.withLock { s in
            s.signalled = true
            if s.number == nil { s.number = sig }
            defer { s.waiter = nil }
            return s.waiter
        }
        resume?.resume()
    }

    /// Returns once SIGINT or SIGTERM arrived (at once if one already has).
    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now: Bool = state.withLock { s in
                if s.signalled { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }

    /// For a command whose `action` ends the process: once a signal has arrived, that action is on its way to
    /// `exit` (it may have ended the run early, by killing its clients), so this never returns and the process ends
    /// with the signal's status rather than with the result of a run cut short. Returns at once otherwise.
    func holdIfInterrupted() async {
        guard fired else { return }
        while true { try? await Task.sleep(for: .seconds(3600)) }
    }

    /// Stops watching and restores the default actions of SIGINT and SIGTERM.
    func cancel() {
        for s in sources.withLock({ $0 }) { s.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
