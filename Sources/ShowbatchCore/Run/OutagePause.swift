import Foundation
import Synchronization

/// The outage half of the circuit breaker: when attempts keep failing in a way the retry policy
/// calls transient (network, timeout, 502/503/504…), the endpoint is taken to be down. Dispatch
/// then pauses: one probe request is sent again with growing pauses, and everyone else waits
/// until it gets through; the attempts that failed while the breaker opened are sent again and do
/// not count. A pause longer than `maxPause` stops the run.
///
/// Without it an outage burns every row: five seconds of 503s at 1,000 requests a second wrote
/// hundreds of failed rows.
final class OutagePause: Sendable {
    /// What an attempt may do now.
    enum Admission: Equatable {
        /// Send.
        case go
        /// Send: this attempt is the probe of a pause.
        case probe
        /// The pause lasted too long: the run stops, for this reason.
        case stop(String)
        /// The run was cancelled while waiting.
        case cancelled
    }

    private struct State {
        var consecutive = 0
        var openedAt: ContinuousClock.Instant?
        var probing = false
        var probes = 0
        var stopped: String?
        var waiters: [UnsafeContinuation<Admission, Never>] = []
    }

    /// Failed attempts in a row that open the breaker; 0 never opens it.
    let threshold: Int
    /// The longest pause before the run stops.
    let maxPause: Duration
    /// The first pause between probes; it doubles up to `maxProbeInterval`.
    let probeInterval: Duration
    let maxProbeInterval: Duration
    private let state = Mutex(State())
    private let events: @Sendable (RunEvent) -> Void

    init(threshold: Int, maxPause: Duration, probeInterval: Duration = .seconds(1), maxProbeInterval: Duration = .seconds(30),
         events: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        self.threshold = threshold
        self.maxPause = maxPause
        self.probeInterval = probeInterval
        self.maxProbeInterval = maxProbeInterval
        self.events = events
    }

    /// Whether the breaker is open now.
    var isOpen: Bool { state.withLock { $0.openedAt != nil } }

    /// Before an attempt: goes on at once when the breaker is closed; else the first caller
    /// becomes the probe (after its pause), and the others wait until the probe gets through.
    func admit() async -> Admission {
        enum Step { case go, stop(String), probe(Duration), wait }
        let step = state.withLock { state -> Step in
            if let stopped = state.stopped { return .stop(stopped) }
            guard state.openedAt != nil else { return .go }
            if state.probing { return .wait }
            state.probing = true
            state.probes += 1
            let scale = pow(2, Double(min(state.probes - 1, 20)))
            return .probe(min(maxProbeInterval, Units.seconds(probeInterval.seconds * scale)))
        }
        switch step {
        case .go: return .go
        case .stop(let reason): return .stop(reason)
        case .probe(let pause):
            do { try await Task.sleep(for: pause) } catch {
                release(probe: true)
                return .cancelled
            }
            return state.withLock { state in
                if let stopped = state.stopped { return .stop(stopped) }
                if let openedAt = state.openedAt, ContinuousClock.now - openedAt > maxPause {
                    let reason = "the endpoint stayed unreachable for \(Units.text(maxPause)) (circuit.max_pause)"
                    state.stopped = reason
                    let waiters = state.waiters
                    state.waiters = []
                    waiters.forEach { $0.resume(returning: .stop(reason)) }
                    return .stop(reason)
                }
                return .probe
            }
        case .wait:
            return await withTaskCancellationHandler {
                await withUnsafeContinuation { continuation in
                    let admission = state.withLock { state -> Admission? in
                        if let stopped = state.stopped { return .stop(stopped) }
                        guard state.openedAt != nil else { return .go }
                        state.waiters.append(continuation)
                        return nil
                    }
                    if let admission { continuation.resume(returning: admission) }
                }
            } onCancel: {
                // Every waiter goes on; each sees the cancellation at its next step.
                let waiters = state.withLock { state -> [UnsafeContinuation<Admission, Never>] in
                    defer { state.waiters = [] }
                    return state.waiters
                }
                waiters.forEach { $0.resume(returning: .cancelled) }
            }
        }
    }

    /// After an attempt that failed in a transient way: true when the breaker is open (it may
    /// just have opened): the attempt is then not counted, and is made again after the pause.
    func failed(probe: Bool) -> Bool {
        guard threshold > 0 else { return false }
        let opened = state.withLock { state -> Bool in
            state.consecutive += 1
            if probe { state.probing = false }
            if state.openedAt == nil && state.consecutive >= threshold {
                state.openedAt = .now
                state.probes = 0
                return true
            }
            return false
        }
        if opened {
            events(.warning("the endpoint looks down (\(threshold) transient failures in a row): sending is paused while one request probes it, for up to \(Units.text(maxPause))"))
        }
        return isOpen
    }

    /// After an attempt that got through: the streak ends, and a probe's success closes the breaker.
    func succeeded(probe: Bool) {
        let (waiters, closed) = state.withLock { state -> ([UnsafeContinuation<Admission, Never>], Bool) in
            state.consecutive = 0
            // Any answer that gets through shows the endpoint is up again.
            guard state.openedAt != nil else { return ([], false) }
            state.openedAt = nil
            state.probing = false
            defer { state.waiters = [] }
            return (state.waiters, true)
        }
        if closed { events(.warning("the endpoint answers again: sending goes on")) }
        waiters.forEach { $0.resume(returning: .go) }
    }

    /// A probe that ended otherwise (cancelled): another may take its place.
    private func release(probe: Bool) {
        state.withLock { if probe { $0.probing = false } }
    }
}
