import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// The decisions of the circuit breaker's pause, as a plain value that returns actions (as
/// `DispatchState` does): `CircuitPause` runs it under a lock and carries the actions out.
///
/// An outage is the endpoint failing for most rows, not a few failures in a row: the latest
/// attempt of each of the last `window` distinct rows is weighed (a row retried three times
/// counts once, and a row that got through on a retry counts as through), and the pause opens
/// when at least `minimumFailures` of them failed and they are at least `rate` of them, as
/// resilience4j's breaker decides on a failure rate with a minimum number of calls. So one row
/// that always answers 503 fails on its own after its attempts, and a load balancer resetting a
/// few connections in a hundred never pauses the run.
///
/// While paused, workers wait; after a wait that doubles up to `maxProbe`, with jitter (so that
/// a periodic outage cannot line up with every probe), one request probes the endpoint, taken
/// from rows that have not failed during the pause where one waits. When every waiting row has
/// failed in the pause (a cluster of poison rows as wide as the concurrency looks like an
/// outage), one of them steps aside and a fresh row probes instead. An answer to an attempt sent in the pause ends it;
/// the rows that failed in it are then suspects: their next failure is their own and does not
/// count towards an outage (a second one does, and a new pause clears them). Past `maxPause` the run stops. Attempts that fail while the pause
/// opens or lasts are not counted: they are made again once it ends.
struct PauseState<Waiter>: ~Copyable {
    /// What the caller must do after releasing the lock.
    struct Actions {
        /// Parked callers to resume, with their admission.
        var resume: [(Waiter, Admission)] = []
        /// Arm the timer for this time (milliseconds); it calls `timerFired`.
        var timer: Int64?
        /// A line for the log: the pause began or ended.
        var event: RunEvent?
        /// The attempt that ended was its row's last and failed in a way that can be the
        /// endpoint's: the row is undecided (`JobOutcome.undecided`) until a verdict comes.
        var undecided = false
        /// Verdicts on undecided rows, for the dispatch.
        var decided: [(ordinal: Int, verdict: UndecidedVerdict)] = []
    }

    typealias Admission = PauseAdmission

    let settings: PauseSettings
    private var random: SeededGenerator
    // The latest outcome of the last `window` distinct rows, as a ring.
    private var slots: [(ordinal: Int, failed: Bool)] = []
    private var oldest = 0
    private var slotOf: [Int: Int] = [:]
    private(set) var failures = 0
    /// Why sending is paused; nil while it goes on.
    private(set) var reason: PauseReason?
    private var openedAt: Int64 = 0
    /// Probes that failed in this pause.
    private var failedProbes = 0
    private(set) var probeInFlight = false
    /// The row of the probe out; a probe of an earlier pause ends as an ordinary attempt.
    private var probeRow: Int?
    /// The timer fired with nobody waiting: the next caller probes.
    private var probeDue = false
    private var parked: [(waiter: Waiter, ordinal: Int, mayStepAside: Bool)] = []
    /// Rows that failed in a pause that another row's answer ended: the endpoint was up, so their
    /// failures are their own (counted, and not weighed as an outage) until they get through.
    private var suspects: Set<Int> = []
    /// Pauses ended so far: a row sleeping a backoff that began before the end wakes up.
    private(set) var closures = 0
    /// Rows whose attempts failed in this pause, by when: a probe is taken from other rows first.
    private var failedInPause: [Int: Int] = [:]
    private var failureSerial = 0
    private(set) var stopped: String?
    private(set) var cancelled = false
    /// Rows whose last attempt failed in a way that can be the endpoint's, with when it ended:
    /// an answer to an attempt sent after that says the failure was the row's; the pause opening
    /// says it was the endpoint's.
    private(set) var undecided: [Int: Int64] = [:]
    /// Undecided rows sent once more after an answer: an outage can end between a row's failure
    /// and the answer that would judge it, so a row fails for its own fault only when a second
    /// try fails too while other rows get answers.
    private var rechecked: Set<Int> = []

    init(settings: PauseSettings, seed: UInt64) {
        self.settings = settings
        random = SeededGenerator(seed: seed)
        slots.reserveCapacity(max(1, settings.window))
    }

    /// Callers waiting for the pause to end.
    var parkedCount: Int { parked.count }

    /// The admission when it needs no waiting (the usual case: no pause); nil when the caller
    /// must go through `admit` with something to park.
    func admitAtOnce() -> Admission? {
        if cancelled { return .cancelled }
        if let stopped { return .stop(stopped) }
        return reason == nil ? .go : nil
    }

    /// Before an attempt of row `ordinal`: the admission, or nil when `waiter` was parked (it is
    /// resumed through the actions, maybe at once). `mayStepAside`: the caller can hold the row
    /// and probe with a fresh one.
    mutating func admit(_ waiter: Waiter, ordinal: Int, mayStepAside: Bool = false) -> (Admission?, Actions) {
        if let admission = admitAtOnce() { return (admission, Actions()) }
        parked.append((waiter, ordinal, mayStepAside))
        return (nil, electProbe())
    }

    /// When the probe of the pause must end: at `maxPause` after it opened (milliseconds), so
    /// that a probe that hangs does not keep the run past it.
    var pauseDeadline: Int64? { reason == nil ? nil : openedAt + settings.maxPause }

    /// After an attempt of row `ordinal`: whether it counts as one of the row's attempts (not
    /// when the pause is open or opens with it), and what to do. A transient failure `weighs`
    /// towards an outage unless it is a connection failure that is the row's first in a row with
    /// more attempts to come: a load balancer resets a connection now and then, and the retry
    /// gets through; an outage fails the retry too. `last`: the row has no attempt left, so a
    /// transient failure that counts leaves it undecided (`Actions.undecided`). `sentAt`: when
    /// the attempt was sent (an answer decides only the rows that failed before it).
    mutating func attemptEnded(ordinal: Int, signal: AttemptSignal, probe: Bool, now: Int64, weighs: Bool = true,
                               last: Bool = false, sentAt: Int64? = nil) -> (counts: Bool, Actions) {
        var actions = Actions()
        // Only the probe of this pause is a probe: one taken before the pause closed (and maybe
        // opened again) is an ordinary attempt now.
        let probe = probe && probeInFlight && probeRow == ordinal
        if probe {
            probeInFlight = false
            probeRow = nil
        }
        switch signal {
        case .answered:
            note(ordinal, failed: false)
            suspects.remove(ordinal)
            if !undecided.isEmpty {
                let sent = sentAt ?? now
                for (row, failedAt) in undecided.sorted(by: { $0.key < $1.key }) where row != ordinal {
                    // The clock is coarse: an attempt sent in the tick a row failed in may have
                    // gone before it. That is enough for one more try (harmless), never for the
                    // verdict that fails the row, which needs an answer sent strictly later.
                    let first = !rechecked.contains(row)
                    guard failedAt < sent || (first && failedAt == sent) else { continue }
                    if first { rechecked.insert(row) }
                    actions.decided.append((row, first ? .recheck : .failed))
                    undecided[row] = nil
                }
            }
            // Only an attempt sent while paused says the endpoint is back: one sent before the
            // pause opened may have been answered just before the endpoint went down. The clock
            // is coarse (a tick of 1-4 ms): one sent in the tick the pause opened in may be either,
            // so only the probe's answer (always sent later) or a later one ends it.
            if reason != nil {
                failedInPause[ordinal] = nil
                if probe || (sentAt ?? now) > openedAt { close(into: &actions, now: now) }
            }
            return (true, actions)
        case .transient, .refused:
            // A suspect's failure is its own (once: if it fails again it weighs, so an endpoint
            // that goes down again is seen), and a first connection failure with a retry to come
            // may be: counted, and weighed as nothing.
            if signal == .transient && reason == nil && (suspects.remove(ordinal) != nil || !weighs) { return (true, actions) }
            if signal == .transient { note(ordinal, failed: true) }
            guard stopped == nil, !cancelled else { return (true, actions) }
            if reason == nil {
                if signal == .refused {
                    open(.credentials, now: now, into: &actions)
                } else if settings.minimumFailures > 0 && failures >= settings.minimumFailures
                            && Double(failures) >= settings.rate * Double(slots.count) {
                    open(.outage, now: now, into: &actions)
                } else {
                    // It counts. If it was the row's last attempt, the row fails alone once other
                    // rows are seen to get answers after it, or is sent again if the pause opens.
                    if last && signal == .transient && settings.minimumFailures > 0 {
                        undecided[ordinal] = now
                        actions.undecided = true
                    }
                    return (true, actions)
                }
            }
            failureSerial += 1
            failedInPause[ordinal] = failureSerial
            if probe {
                failedProbes += 1
                actions.timer = nextProbeTime(now: now)
            }
            return (false, actions)
        case .none:
            if probe && reason != nil {
                // A probe that was never sent (cancelled, or stopped before sending): another takes its place.
                probeDue = true
                let elected = electProbe()
                actions.resume += elected.resume
            }
            return (true, actions)
        }
    }

    /// The timer armed by an action has fired: a probe is due, or the pause has lasted too long.
    mutating func timerFired(now: Int64) -> Actions {
        guard reason != nil, !probeInFlight, stopped == nil, !cancelled else { return Actions() }
        if now - openedAt >= settings.maxPause {
            let text = reason == .outage
                ? "the endpoint stayed unreachable for \(Units.text(.milliseconds(settings.maxPause))) (circuit.max_pause)"
                : "authentication failed (HTTP 401) with freshly renewed access tokens for \(Units.text(.milliseconds(settings.maxPause))) (circuit.max_pause)"
            stopped = text
            var actions = Actions()
            actions.resume = parked.map { ($0.waiter, .stop(text)) }
            parked = []
            return actions
        }
        probeDue = true
        return electProbe()
    }

    /// Undecided rows that the dispatch failed itself (nothing was left to send that could
    /// decide them).
    mutating func forget(_ ordinals: [Int]) {
        for ordinal in ordinals {
            undecided[ordinal] = nil
            rechecked.remove(ordinal)
        }
    }

    /// The run is cancelled: every waiter goes on, and sees it.
    mutating func cancel() -> Actions {
        cancelled = true
        var actions = Actions()
        actions.resume = parked.map { ($0.waiter, .cancelled) }
        parked = []
        return actions
    }

    /// Takes the probe from the waiting rows when one is due: a row that has not failed in this
    /// pause if one waits; else one of them steps aside (the one whose failure is oldest, of
    /// those that can) so that a fresh row probes; else the one whose failure is oldest (so a row
    /// that always fails does not probe twice running while others wait).
    private mutating func electProbe() -> Actions {
        guard probeDue, !probeInFlight, !parked.isEmpty else { return Actions() }
        var actions = Actions()
        if let fresh = parked.firstIndex(where: { failedInPause[$0.ordinal] == nil }) {
            let chosen = parked.remove(at: fresh)
            probeDue = false
            probeInFlight = true
            probeRow = chosen.ordinal
            actions.resume = [(chosen.waiter, .probe)]
            return actions
        }
        func older(_ a: Int, _ b: Int) -> Bool { failedInPause[parked[a].ordinal]! < failedInPause[parked[b].ordinal]! }
        if let aside = parked.indices.filter({ parked[$0].mayStepAside }).min(by: older) {
            // The probe stays due: the fresh row is taken as it comes to wait.
            let chosen = parked.remove(at: aside)
            actions.resume = [(chosen.waiter, .stepAside)]
            return actions
        }
        let chosen = parked.remove(at: parked.indices.min(by: older)!)
        probeDue = false
        probeInFlight = true
        probeRow = chosen.ordinal
        actions.resume = [(chosen.waiter, .probe)]
        return actions
    }

    /// When the last pause of each kind ended, and whether this one is said as notes: a pause
    /// of the kind that ended less than a minute ago (short-lived tokens refused now and then)
    /// is said once, not once per token.
    private var lastClosed: [PauseReason: Int64] = [:]
    private var quiet = false

    private mutating func open(_ why: PauseReason, now: Int64, into actions: inout Actions) {
        reason = why
        // Down again: every row waits, suspect or not, and the undecided rows failed for the
        // endpoint: they go again, with fresh attempts, once it answers.
        suspects = []
        actions.decided = undecided.keys.sorted().map { ($0, .resend) }
        rechecked.subtract(undecided.keys)
        undecided = [:]
        quiet = lastClosed[why].map { now - $0 < 60_000 } ?? false
        openedAt = now
        failedProbes = 0
        probeDue = false
        failedInPause = [:]
        actions.timer = nextProbeTime(now: now)
        let limit = Units.text(.milliseconds(settings.maxPause))
        let text: String
        switch why {
        case .outage:
            text = "the endpoint looks down (\(failures) of the last \(slots.count) rows failed: network, timeout or a retried status): sending is paused while one request probes it, for up to \(limit)"
        case .credentials:
            text = "a freshly renewed access token was refused (HTTP 401): sending is paused; the token is renewed and one request probes, for up to \(limit)"
        }
        actions.event = quiet ? .note(text + " (again within a minute)") : .warning(text)
    }

    private mutating func close(into actions: inout Actions, now: Int64) {
        let text = reason == .outage ? "the endpoint answers again: sending goes on" : "the access token is accepted again: sending goes on"
        actions.event = quiet ? .note(text) : .warning(text)
        if let reason { lastClosed[reason] = now }
        // The endpoint answers: the rows that failed in the pause fail on their own.
        if reason == .outage { suspects.formUnion(failedInPause.keys) }
        closures += 1
        reason = nil
        probeDue = false
        probeInFlight = false
        probeRow = nil
        failedInPause = [:]
        actions.resume += parked.map { ($0.waiter, .go) }
        parked = []
    }

    /// When the next probe goes: the wait doubles with each failed probe up to `maxProbe`, drawn
    /// between half of it (never less than `firstProbe`) and all of it, and never past the end
    /// of `maxPause`.
    private mutating func nextProbeTime(now: Int64) -> Int64 {
        let doubled = settings.firstProbe << Int64(min(failedProbes, 20))
        let wait = max(settings.firstProbe, min(settings.maxProbe, doubled))
        let least = min(wait, max(settings.firstProbe, wait / 2))
        let jittered = least + Int64(random.unit() * Double(wait - least))
        return max(now, min(now + max(1, jittered), openedAt + settings.maxPause))
    }

    /// Records the latest attempt of row `ordinal`.
    private mutating func note(_ ordinal: Int, failed: Bool) {
        guard settings.window > 0 else { return }
        if let index = slotOf[ordinal] {
            if slots[index].failed != failed {
                failures += failed ? 1 : -1
                slots[index].failed = failed
            }
            return
        }
        if slots.count < settings.window {
            slotOf[ordinal] = slots.count
            slots.append((ordinal, failed))
        } else {
            let old = slots[oldest]
            slotOf[old.ordinal] = nil
            if old.failed { failures -= 1 }
            slots[oldest] = (ordinal, failed)
            slotOf[ordinal] = oldest
            oldest = (oldest + 1) % settings.window
        }
        if failed { failures += 1 }
    }
}
