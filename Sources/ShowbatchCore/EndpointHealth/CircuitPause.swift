import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// Why sending is paused.
enum PauseReason: Equatable, Sendable {
    /// Most recent rows fail in a way the retry policy calls transient: the endpoint is down.
    case outage
    /// A freshly renewed access token was refused (401): the credentials, or the service that
    /// checks them, are failing.
    case credentials
}

/// What one attempt showed about the endpoint, for the breaker.
enum AttemptSignal: Equatable, Sendable {
    /// An answer: the endpoint is up, whatever the status.
    case answered
    /// No answer, or an answer the retry policy calls transient (502, 503, 504…).
    case transient
    /// A freshly renewed access token was refused (401).
    case refused
    /// Nothing learned (the attempt was cancelled or never sent).
    case none
}

/// When a circuit pause opens and how long it may last.
struct PauseSettings: Sendable {
    /// Failed rows among the recent ones before the endpoint can be taken to be down; 0: never.
    var minimumFailures: Int
    /// Recent distinct rows weighed.
    var window: Int
    /// The share of those rows failing that makes an outage.
    var rate = 0.5
    /// The longest pause, in milliseconds.
    var maxPause: Int64
    /// The wait before the first probe, in milliseconds; it doubles up to `maxProbe`. No probe
    /// follows another sooner than `firstProbe`.
    var firstProbe: Int64 = 1000
    /// Short, so that a run goes on within a few seconds of the endpoint coming back.
    var maxProbe: Int64 = 5_000
}

/// What an attempt may do now.
enum PauseAdmission: Equatable, Sendable {
    /// Send.
    case go
    /// Send: this attempt is the probe of a pause.
    case probe
    /// Every row waiting has failed in this pause, so none of them can tell an outage from rows
    /// that fail on their own: hold this row back and probe with a fresh one (then come back).
    case stepAside
    /// The pause lasted too long: the run stops, for this reason.
    case stop(String)
    /// The run was cancelled.
    case cancelled
}

/// The pause of a run's circuit breaker: `PauseState` under a lock, parked attempts as
/// continuations, and a timer task for the probes.
final class CircuitPause: Sendable {
    typealias Admission = PauseAdmission
    typealias State = PauseState<UnsafeContinuation<Admission, Never>>

    private let state: Mutex<State>
    private let timer = Mutex<Task<Void, Never>?>(nil)
    private let events: @Sendable (RunEvent) -> Void
    /// Takes the verdicts on undecided rows (the run's dispatch).
    private let verdicts = Mutex<(@Sendable ([(ordinal: Int, verdict: UndecidedVerdict)]) -> Void)?>(nil)

    init(settings: PauseSettings, seed: UInt64, events: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        state = Mutex(State(settings: settings, seed: seed))
        self.events = events
    }

    /// The settings of a run's pause: the window is twice the concurrency, at least 10 rows and
    /// `circuit.outage_after`, and at most 20 rows past it. (At a low concurrency a window of
    /// twice it is a handful of rows: three in backoff at once after dropped connections would be
    /// half of them.)
    /// `rowsPerCall`: rows that share one request (the Vault API's calls), which fail together:
    /// `outage_after` counts requests.
    static func settings(_ circuit: CircuitPolicy, concurrency: Int, rowsPerCall: Int = 1) -> PauseSettings {
        let after = circuit.outageAfter * rowsPerCall
        let least = max(after, 10)
        return PauseSettings(minimumFailures: after, window: max(least, min(2 * concurrency, after + 20 * rowsPerCall)),
                             maxPause: Int64(circuit.maxPause.seconds * 1000))
    }

    /// Why sending is paused now, if it is.
    var reason: PauseReason? { state.withLock { $0.reason } }

    /// Attempts waiting for the pause to end (tests wait on it instead of sleeping).
    var parkedCount: Int { state.withLock { $0.parkedCount } }

    /// Before an attempt of row `ordinal`: goes on at once unless sending is paused; then waits
    /// until the pause ends, this attempt is taken as the probe (or asked to step aside, when
    /// `mayStepAside`), or the run stops.
    func admit(ordinal: Int, mayStepAside: Bool = false) async -> Admission {
        if let admission = state.withLock({ $0.admitAtOnce() }) { return admission }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Admission, Never>) in
                let cancelled = Task.isCancelled
                let (admission, actions) = state.withLock { state in
                    // Checked under the lock: a cancellation handler that ran before it finds nothing parked.
                    cancelled ? (Admission.cancelled, State.Actions()) : state.admit(continuation, ordinal: ordinal, mayStepAside: mayStepAside)
                }
                if let admission { continuation.resume(returning: admission) }
                perform(actions)
            }
        } onCancel: {
            perform(state.withLock { $0.cancel() })
        }
    }

    /// Where the verdicts on undecided rows go.
    func onVerdicts(_ handler: @escaping @Sendable ([(ordinal: Int, verdict: UndecidedVerdict)]) -> Void) {
        verdicts.withLock { $0 = handler }
    }

    /// After an attempt: whether it counts as one of the row's attempts, whether its row is now
    /// undecided (`last`: it was the row's last attempt), and the pauses ended so far, for a
    /// backoff that follows (`backoff(_:since:)`).
    @discardableResult
    func attemptEnded(ordinal: Int, signal: AttemptSignal, probe: Bool, weighs: Bool = true, last: Bool = false,
                      sentAt: Int64? = nil) -> (counts: Bool, undecided: Bool, closures: Int) {
        let ended = state.withLock {
            ($0.attemptEnded(ordinal: ordinal, signal: signal, probe: probe, now: coarseMilliseconds(), weighs: weighs, last: last, sentAt: sentAt),
             $0.closures)
        }
        perform(ended.0.1)
        return (ended.0.counts, ended.0.1.undecided, ended.1)
    }


    /// Undecided rows the dispatch failed itself.
    func forget(_ ordinals: [Int]) {
        state.withLock { $0.forget(ordinals) }
    }

    /// How long a probe may wait for its answer: its timeout, but not past the end of
    /// `circuit.max_pause` (a probe that hangs would keep the run paused past it); at least 1 s.
    func probeTimeout(_ timeout: Duration) -> Duration {
        guard let deadline = state.withLock({ $0.pauseDeadline }) else { return timeout }
        return min(timeout, .milliseconds(max(1_000, deadline - coarseMilliseconds())))
    }

    /// Sleeps a retry's backoff, or less: a pause that ends after `closures` were counted (when
    /// the attempt ended, so that one ending before the sleep begins counts too) wakes it: the
    /// endpoint answers again, so a `Retry-After` it gave while down no longer holds the row back.
    func backoff(_ delay: Duration, since closures: Int) async throws {
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end {
            try await Task.sleep(for: min(.milliseconds(100), end - ContinuousClock.now))
            if state.withLock({ $0.closures }) != closures { return }
        }
    }

    /// Ends the timer; called when the run's workers are done.
    func shutDown() {
        // The handler holds the dispatch, which holds this pause.
        verdicts.withLock { $0 = nil }
        perform(state.withLock { $0.cancel() })
        timer.withLock { $0?.cancel() }
    }

    private func perform(_ actions: State.Actions) {
        if let event = actions.event { events(event) }
        if !actions.decided.isEmpty, let handler = verdicts.withLock({ $0 }) { handler(actions.decided) }
        if let deadline = actions.timer {
            let task = Task.detached { [self] in
                let wait = deadline - coarseMilliseconds()
                if wait > 0 {
                    do { try await Task.sleep(for: .milliseconds(wait)) } catch { return }
                }
                perform(state.withLock { $0.timerFired(now: coarseMilliseconds()) })
            }
            timer.withLock { old in
                old?.cancel()
                old = task
            }
        }
        for (waiter, admission) in actions.resume { waiter.resume(returning: admission) }
    }
}
