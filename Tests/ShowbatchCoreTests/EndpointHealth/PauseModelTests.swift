import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `PauseState` driven by seeded random event sequences: workers admit attempts, attempts end
/// answered, failed (transient), refused or unsent, time passes and timers fire, the run is
/// cancelled; a worker told to step aside holds its row and takes a fresh one. After every event:
/// at most one probe is out; nobody waits unless sending is paused; a paused state always has a
/// probe out, a timer armed or a probe due to the next caller (no worker waits for ever); a probe
/// is taken from rows that have not failed in the pause when one waits, and a row steps aside
/// only when none waits and only if its worker can take a fresh row; an attempt that failed
/// counts unless the pause is open; only the probe or an attempt sent in the pause ends it; a row that failed in a pause an answer ended, and a failure
/// that weighs nothing (a row's first with a retry to come), never open one; the run stops only at or past `maxPause`; after a cancellation or a stop nobody waits.
/// A row whose last attempt fails transiently while sending goes on is undecided, never failed at
/// once; it is failed only by an answer to another row's attempt sent after its failure, and sent
/// again only when a pause opens, which takes every undecided row; each gets one verdict.
@Suite struct PauseModelTests {
    /// 40,000 sequences in all.
    static let perCase = 5_000

    @Test(arguments: 0..<8) func randomSequencesKeepTheInvariants(part: Int) async {
        var stepAsides = 0, verdicts = 0
        defer {
            #expect(stepAsides > 100, "the sequences hardly made a row step aside (\(stepAsides))")
            #expect(verdicts > 1_000, "the sequences hardly decided an undecided row (\(verdicts))")
        }
        for seed in (part * Self.perCase)..<((part + 1) * Self.perCase) {
            // Now and then the thread goes back to the pool: other tests' tasks wait on it.
            if seed % 500 == 0 { await Task.yield() }
            var model = PauseModel(seed: UInt64(seed))
            defer {
                stepAsides += model.stepAsides
                verdicts += model.verdicts
            }
            if model.run() != nil {
                // Run again, telling what happens, for the message.
                model = PauseModel(seed: UInt64(seed), tracing: true)
                let problem = model.run() ?? "(not again)"
                Issue.record("seed \(seed): \(problem)\nevents: \(model.trace.suffix(40).joined(separator: "; "))")
                return
            }
        }
    }

    /// One row that always answers 503 among rows that get through never pauses the run: it is
    /// one failed row among the recent ones, however often it is tried.
    @Test func aPoisonRowFailsAloneWithoutAPause() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 8, maxPause: 10_000), seed: 1)
        for ordinal in 0..<20 {
            _ = state.attemptEnded(ordinal: ordinal, signal: .answered, probe: false, now: 0)
            for _ in 0..<3 {
                let counted = state.attemptEnded(ordinal: 1_000, signal: .transient, probe: false, now: 0).counts
                #expect(counted)
            }
        }
        #expect(state.reason == nil)
    }

    /// A load balancer resetting one request in twelve never pauses the run, while an endpoint
    /// failing for most rows does, once enough rows say so.
    @Test func anOutageIsMostRecentRowsFailing() {
        var resets = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 16, maxPause: 10_000), seed: 1)
        var random = SeededGenerator(seed: 42)
        for ordinal in 0..<3_000 {
            let failed = random.unit() < 1.0 / 12
            _ = resets.attemptEnded(ordinal: ordinal, signal: failed ? .transient : .answered, probe: false, now: 0)
            // The retry of a reset row gets through.
            if failed { _ = resets.attemptEnded(ordinal: ordinal, signal: .answered, probe: false, now: 0) }
        }
        #expect(resets.reason == nil)
        var outage = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 16, maxPause: 10_000), seed: 1)
        for ordinal in 0..<16 { _ = outage.attemptEnded(ordinal: ordinal, signal: .answered, probe: false, now: 0) }
        var opened: Int?
        for ordinal in 16..<40 where opened == nil {
            let counts = outage.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 0).counts
            if !counts { opened = ordinal - 16 + 1 }
        }
        #expect(opened == 8, "the pause opened after \(opened.map(String.init) ?? "no") failed rows")
        #expect(outage.reason == .outage)
    }

    /// The probe is a row that has not failed in the pause when one waits, and the probe waits
    /// are drawn between half and all of 1 s, 2 s, 4 s…
    @Test func probesAreFreshRowsAfterJitteredWaits() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 60_000), seed: 7)
        let opened = state.attemptEnded(ordinal: 5, signal: .transient, probe: false, now: 0)
        #expect(!opened.counts && state.reason == .outage)
        let first = try! #require(opened.1.timer)
        #expect((500...1000).contains(first))
        #expect(state.admit(1, ordinal: 5).0 == nil)  // the row that failed waits
        #expect(state.admit(2, ordinal: 6).0 == nil)
        let fired = state.timerFired(now: first)
        #expect(fired.resume.map(\.0) == [2] && fired.resume.map(\.1) == [.probe])
        let failedProbe = state.attemptEnded(ordinal: 6, signal: .transient, probe: true, now: first + 10)
        let second = try! #require(failedProbe.1.timer) - (first + 10)
        #expect((1000...2000).contains(second))
    }
}

extension PauseModelTests {
    /// An answer to an attempt sent before the pause opened does not end it (the endpoint may
    /// have answered just before it went down): the rows that failed in it keep waiting instead
    /// of becoming suspects that fail on their own. An answer to one sent in the pause ends it.
    @Test func anAnswerSentBeforeThePauseDoesNotEndIt() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 4, maxPause: 60_000), seed: 1)
        for ordinal in 1...3 { _ = state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 100, sentAt: 90) }
        #expect(state.reason == .outage)
        let stale = state.attemptEnded(ordinal: 4, signal: .answered, probe: false, now: 110, sentAt: 95)
        #expect(stale.counts && stale.1.event == nil && state.reason == .outage)
        // Sent in the clock's tick the pause opened in: maybe before it.
        let sameTick = state.attemptEnded(ordinal: 6, signal: .answered, probe: false, now: 115, sentAt: 100)
        #expect(sameTick.counts && state.reason == .outage)
        let fresh = state.attemptEnded(ordinal: 5, signal: .answered, probe: false, now: 120, sentAt: 101)
        #expect(fresh.counts && state.reason == nil)
    }

    /// Rows that failed in a pause an answer ended fail on their own once; when the endpoint goes
    /// down again their next failures weigh, and the pause opens again (no row is failed for good
    /// by a flapping endpoint).
    @Test func suspectsLapseWhenTheEndpointGoesDownAgain() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 4, maxPause: 60_000), seed: 1)
        for ordinal in 1...3 { _ = state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 0) }
        #expect(state.reason == .outage)
        // Attempts under way as it opened fail in the pause too.
        for ordinal in 1...2 { _ = state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 5) }
        _ = state.attemptEnded(ordinal: 4, signal: .answered, probe: false, now: 10)
        #expect(state.reason == nil)
        // Down again: each suspect's first failure is its own (counted), its second weighs.
        for ordinal in 1...3 {
            let first = state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 20)
            #expect(first.counts && state.reason == nil)
        }
        var opened = false
        for ordinal in 1...3 where !opened {
            opened = !state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 30).counts
        }
        #expect(opened && state.reason == .outage)
    }

    /// The clock is coarse (a tick of 1-4 ms): an answer to an attempt sent in the tick a row
    /// failed in sends the row once more (it may have been sent after the failure), but only one
    /// sent strictly later fails it. (A fast machine sent the one row that could decide a poison
    /// row in the tick it failed in, and the row failed without its one more try.)
    @Test func anAnswerSentInTheTickOfAFailureRechecksButNeverFails() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 16, maxPause: 60_000), seed: 1)
        for ordinal in 100..<110 { _ = state.attemptEnded(ordinal: ordinal, signal: .answered, probe: false, now: 0) }
        #expect(state.attemptEnded(ordinal: 1, signal: .transient, probe: false, now: 50, last: true, sentAt: 49).1.undecided)
        let sameTick = state.attemptEnded(ordinal: 2, signal: .answered, probe: false, now: 51, sentAt: 50)
        #expect(sameTick.1.decided.map(\.ordinal) == [1] && sameTick.1.decided.map(\.verdict) == [.recheck])
        #expect(state.attemptEnded(ordinal: 1, signal: .transient, probe: false, now: 60, last: true, sentAt: 55).1.undecided)
        #expect(state.attemptEnded(ordinal: 3, signal: .answered, probe: false, now: 61, sentAt: 60).1.decided.isEmpty)
        let later = state.attemptEnded(ordinal: 4, signal: .answered, probe: false, now: 62, sentAt: 61)
        #expect(later.1.decided.map(\.ordinal) == [1] && later.1.decided.map(\.verdict) == [.failed] && state.undecided.isEmpty)
    }

    /// A row whose last attempt fails is undecided: an answer to an attempt sent before its
    /// failure decides nothing, one sent after it fails the row; a pause opening sends every
    /// undecided row again. A row the dispatch failed itself is forgotten.
    @Test func undecidedRowsWaitForEvidence() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 16, maxPause: 60_000), seed: 1)
        for ordinal in 100..<110 { _ = state.attemptEnded(ordinal: ordinal, signal: .answered, probe: false, now: 0) }
        let failed = state.attemptEnded(ordinal: 1, signal: .transient, probe: false, now: 100, last: true, sentAt: 90)
        #expect(failed.counts && failed.1.undecided && state.undecided == [1: 100])
        // Not the last attempt, or an answer-like failure that is not transient: not undecided.
        #expect(!state.attemptEnded(ordinal: 2, signal: .transient, probe: false, now: 100, last: false).1.undecided)
        let earlier = state.attemptEnded(ordinal: 3, signal: .answered, probe: false, now: 110, sentAt: 95)
        #expect(earlier.1.decided.isEmpty && state.undecided == [1: 100])
        let later = state.attemptEnded(ordinal: 4, signal: .answered, probe: false, now: 120, sentAt: 101)
        // The first answer after it sends the row once more (the outage may have ended in
        // between); only a second failure followed by an answer is the row's own.
        #expect(later.1.decided.map(\.ordinal) == [1] && later.1.decided.map(\.verdict) == [.recheck] && state.undecided.isEmpty)
        #expect(state.attemptEnded(ordinal: 1, signal: .transient, probe: false, now: 130, last: true).1.undecided)
        let again = state.attemptEnded(ordinal: 4, signal: .answered, probe: false, now: 140, sentAt: 131)
        #expect(again.1.decided.map(\.ordinal) == [1] && again.1.decided.map(\.verdict) == [.failed] && state.undecided.isEmpty)

        _ = state.attemptEnded(ordinal: 5, signal: .transient, probe: false, now: 200, last: true)
        _ = state.attemptEnded(ordinal: 6, signal: .transient, probe: false, now: 201, last: true)
        _ = state.attemptEnded(ordinal: 7, signal: .transient, probe: false, now: 202, last: true)
        state.forget([7])
        #expect(state.undecided.keys.sorted() == [5, 6])
        var opened: (counts: Bool, PauseState<Int>.Actions)?
        for ordinal in 8..<40 where opened == nil {
            let ended = state.attemptEnded(ordinal: ordinal, signal: .transient, probe: false, now: 210, last: false)
            if state.reason != nil { opened = ended }
        }
        let open = try! #require(opened)
        #expect(!open.counts && state.reason == .outage && !open.1.undecided)
        #expect(open.1.decided.map(\.ordinal) == [5, 6] && open.1.decided.allSatisfy { $0.verdict == .resend })
        #expect(state.undecided.isEmpty)
        // In the pause a failure is no row's: nothing is undecided.
        #expect(!state.attemptEnded(ordinal: 9, signal: .transient, probe: false, now: 220, last: true).1.undecided)
    }

    /// Probe waits are never shorter than the first one and never longer than 5 s: a run goes
    /// on within a few seconds of the endpoint coming back, probing at most once a second.
    @Test func probeWaitsStayBetweenOneAndFiveSeconds() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 1, window: 4, maxPause: 600_000), seed: 3)
        var now: Int64 = 0
        var timer = try! #require(state.attemptEnded(ordinal: 0, signal: .transient, probe: false, now: now).1.timer)
        var waits: [Int64] = []
        for ordinal in 1...30 {
            waits.append(timer - now)
            now = timer
            #expect(state.admit(ordinal, ordinal: ordinal).0 == nil)
            let fired = state.timerFired(now: now)
            #expect(fired.resume.map(\.1) == [.probe])
            timer = try! #require(state.attemptEnded(ordinal: ordinal, signal: .transient, probe: true, now: now).1.timer)
        }
        #expect(waits.allSatisfy { (1_000...5_000).contains($0) }, "\(waits)")
        #expect(waits.suffix(20).contains { $0 > 4_000 }, "\(waits)")
    }

    /// Short-lived tokens refused now and then open pause after pause: the first is a warning,
    /// the ones within a minute of the last are notes (for the JSON log and --verbose).
    @Test func aPauseAgainWithinAMinuteIsANote() {
        var state = PauseState<Int>(settings: PauseSettings(minimumFailures: 3, window: 8, maxPause: 60_000), seed: 1)
        /// An event as its kind and text.
        func said(_ event: RunEvent?) -> String {
            switch event {
            case .warning(let text)?: return "warning: " + text
            case .note(let text)?: return "note: " + text
            default: return "\(String(describing: event))"
            }
        }
        func cycle(at now: Int64) -> (opened: String, closed: String) {
            let opened = state.attemptEnded(ordinal: 1, signal: .refused, probe: false, now: now).1.event
            let closed = state.attemptEnded(ordinal: 2, signal: .answered, probe: false, now: now + 100).1.event
            return (said(opened), said(closed))
        }
        let first = cycle(at: 0)
        let soon = cycle(at: 10_000)
        let later = cycle(at: 80_000)
        let refused = "a freshly renewed access token was refused (HTTP 401): sending is paused; the token is renewed and one request probes, for up to 60s"
        #expect(first.opened == "warning: " + refused && first.closed == "warning: the access token is accepted again: sending goes on")
        #expect(soon.opened == "note: " + refused + " (again within a minute)" && soon.closed == "note: the access token is accepted again: sending goes on")
        #expect(later.opened == "warning: " + refused)
    }
}

/// One random run of the pause: workers, time, timers and an endpoint that goes down and up.
private struct PauseModel: ~Copyable {
    enum Worker: Equatable {
        case ready
        case parked
        case sending(probe: Bool)
        case done
    }

    var random: SeededGenerator
    var state: PauseState<Int>
    let settings: PauseSettings
    var workers: [Worker]
    var rows: [Int]
    /// Rows each worker holds back (it stepped aside), newest last.
    var held: [[Int]]
    /// Whether each worker's waiting attempt said it could step aside.
    var mayStepAside: [Bool]
    /// Rows that failed in a pause that an answer ended.
    var suspects: Set<Int> = []
    /// Rows that stepped aside for a fresh one.
    var stepAsides = 0
    var nextOrdinal = 0
    let totalRows: Int
    var now: Int64 = 0
    var timer: Int64?
    var cancelled = false
    var stopped = false
    var openedAt: Int64?
    /// Rows whose attempts failed while the pause was open, as the model saw it.
    var failedInPause: Set<Int> = []
    /// The worker whose attempt is the probe of this pause (a probe of an earlier pause that
    /// is still out is an ordinary attempt).
    var probeWorker: Int?
    /// When each worker's attempt was sent.
    var sentAt: [Int64]
    /// Undecided rows as the model saw them, with when their last attempt failed.
    var undecided: [Int: Int64] = [:]
    /// Undecided rows the pause sent back, to be sent again.
    var resend: [Int] = []
    /// Undecided rows tried once more after an answer (since the last pause sent them back).
    var rechecked: Set<Int> = []
    /// Verdicts given, for the sequences' coverage.
    var verdicts = 0
    var trace: [String] = []
    let tracing: Bool

    init(seed: UInt64, tracing: Bool = false) {
        self.tracing = tracing
        random = SeededGenerator(seed: seed &* 0x9E3779B97F4A7C15 &+ 11)
        settings = PauseSettings(minimumFailures: Int(random.next() % 4), window: 1 + Int(random.next() % 8),
                                 maxPause: 200 + Int64(random.next() % 3_000), firstProbe: 10 + Int64(random.next() % 200),
                                 maxProbe: 400)
        state = PauseState(settings: settings, seed: seed)
        let count = 1 + Int(random.next() % 4)
        workers = Array(repeating: .ready, count: count)
        rows = Array(0..<count)
        held = Array(repeating: [], count: count)
        mayStepAside = Array(repeating: false, count: count)
        sentAt = Array(repeating: 0, count: count)
        nextOrdinal = count
        totalRows = count + Int(random.next() % 30)
    }

    mutating func run() -> String? {
        for _ in 0..<3_000 {
            if workers.allSatisfy({ $0 == .done }) { return nil }
            var enabled = workers.indices.filter { workers[$0] == .ready || workers[$0] != .parked && workers[$0] != .done }
            if cancelled || stopped { enabled = enabled.filter { workers[$0] != .parked } }
            let roll = random.next() % 100
            if roll < 1 && !cancelled {
                cancelled = true
                if tracing { trace.append("cancel") }
                if let problem = apply(state.cancel()) { return problem }
                if workers.contains(.parked) { return "a worker waits after cancel" }
                continue
            }
            if let deadline = timer, enabled.isEmpty || roll < 20 {
                now = max(now, deadline)
                timer = nil
                if tracing { trace.append("timer at \(now)") }
                let wasPaused = state.reason != nil
                let actions = state.timerFired(now: now)
                if let problem = apply(actions) { return problem }
                if state.stopped != nil && !stopped {
                    stopped = true
                    guard wasPaused, let openedAt, now - openedAt >= settings.maxPause else { return "stopped before max_pause" }
                    if workers.contains(.parked) { return "a worker waits after the stop" }
                }
                continue
            }
            if enabled.isEmpty {
                if workers.contains(.parked) { return "deadlock: workers wait and nothing can wake them (\(workers))" }
                return "nothing to do: \(workers)"
            }
            now += Int64(random.next() % 40)
            let index = enabled[Int(random.next() % UInt64(enabled.count))]
            if let problem = step(index) { return problem }
            if let problem = check() { return problem }
        }
        return "did not end in 3,000 events"
    }

    mutating func step(_ index: Int) -> String? {
        switch workers[index] {
        case .ready:
            // A worker can hold its row back only while fresh rows remain (half the time, to try both).
            mayStepAside[index] = nextOrdinal < totalRows && random.next() % 2 == 0
            let (admission, actions) = state.admit(index, ordinal: rows[index], mayStepAside: mayStepAside[index])
            if tracing { trace.append("w\(index) row \(rows[index]) admit: \(admission.map { "\($0)" } ?? "parked")") }
            if let admission {
                if let problem = admitted(index, admission) { return problem }
            } else {
                if state.reason == nil { return "parked while sending goes on" }
                workers[index] = .parked
            }
            return apply(actions)
        case .sending(let probe):
            // The endpoint is down a third of the time; in a pause a probe finds it down or up.
            let roll = random.next() % 100
            let signal: AttemptSignal = roll < 8 ? .none : roll < 40 ? .transient : roll < 45 ? .refused : .answered
            let wasPaused = state.reason != nil
            let reasonBefore = state.reason
            // Some failures are a row's first with a retry to come: they weigh as nothing; some
            // attempts are their row's last (and always weigh).
            let last = random.next() % 3 == 0
            let weighs = probe || last || random.next() % 3 != 0
            let (counts, actions) = state.attemptEnded(ordinal: rows[index], signal: signal, probe: probe, now: now, weighs: weighs,
                                                       last: last, sentAt: sentAt[index])
            if tracing {
                trace.append("w\(index) row \(rows[index]) \(probe ? "probe " : "")ended \(signal)\(last ? " (last)" : ""): counts \(counts)"
                             + "\(actions.undecided ? " undecided" : "")\(actions.decided.isEmpty ? "" : " verdicts \(actions.decided)")")
            }
            if let problem = judge(actions, row: rows[index], signal: signal, counts: counts, last: last, weighs: weighs,
                                   opened: !wasPaused && state.reason != nil, suspect: !wasPaused && signal == .transient && suspects.contains(rows[index]),
                                   sentAt: sentAt[index]) { return problem }
            if probeWorker == index { probeWorker = nil }
            let wasSuspect = !wasPaused && signal == .transient && suspects.contains(rows[index])
            if wasSuspect { suspects.remove(rows[index]) }
            if !wasPaused && state.reason != nil {
                if wasSuspect { return "a suspect row's failure opened a pause" }
                suspects = []
                if signal == .transient && !weighs { return "a failure that weighs nothing opened a pause" }
                openedAt = now
                failedInPause = []
            }
            if wasPaused && state.reason == nil && !probe, let openedAt, sentAt[index] <= openedAt {
                return "an answer to an attempt sent before the pause opened (or in its tick) ended it"
            }
            if state.reason == nil {
                // An outage that an answer ended: the rows that failed in it fail on their own.
                if reasonBefore == .outage && signal == .answered { suspects.formUnion(failedInPause.subtracting([rows[index]])) }
                failedInPause = []
                probeWorker = nil
            }
            if signal == .answered { suspects.remove(rows[index]) }
            if !counts {
                if state.reason == nil { return "a failed attempt did not count while sending goes on" }
                failedInPause.insert(rows[index])
                workers[index] = .ready
            } else if signal == .answered || actions.undecided || last {
                // The row is done (answered, undecided, or its attempts are used up): a row held
                // back, one sent back by the pause, or the next.
                if let back = held[index].popLast() {
                    rows[index] = back
                    workers[index] = .ready
                } else if !resend.isEmpty {
                    rows[index] = resend.removeFirst()
                    workers[index] = .ready
                } else if nextOrdinal < totalRows {
                    rows[index] = nextOrdinal
                    nextOrdinal += 1
                    workers[index] = .ready
                } else {
                    workers[index] = .done
                }
            } else {
                workers[index] = .ready
            }
            return apply(actions)
        default:
            return nil
        }
    }

    /// Checks what an ended attempt did to the undecided rows.
    mutating func judge(_ actions: PauseState<Int>.Actions, row: Int, signal: AttemptSignal, counts: Bool, last: Bool, weighs: Bool,
                        opened: Bool, suspect: Bool, sentAt: Int64) -> String? {
        for (ordinal, verdict) in actions.decided {
            guard let failedAt = undecided.removeValue(forKey: ordinal) else { return "a verdict on row \(ordinal), which is not undecided" }
            verdicts += 1
            switch verdict {
            case .failed, .recheck:
                // One more try may come from an answer sent in the tick of the failure (the clock
                // is coarse); the verdict that fails a row only from one sent strictly later.
                if signal != .answered || ordinal == row || failedAt > sentAt || (verdict == .failed && failedAt == sentAt) {
                    return "row \(ordinal) judged (\(verdict)) without an answer to an attempt sent after its failure"
                }
                // A row fails for its own fault only after one more try.
                if verdict == .recheck {
                    if !rechecked.insert(ordinal).inserted { return "row \(ordinal) tried once more a second time" }
                    resend.append(ordinal)
                } else if !rechecked.contains(ordinal) {
                    return "row \(ordinal) failed without one more try"
                }
            case .resend:
                if !opened { return "row \(ordinal) sent again without a pause opening" }
                rechecked.remove(ordinal)
                resend.append(ordinal)
            }
        }
        if opened && !undecided.isEmpty { return "a pause opened and left rows undecided: \(undecided)" }
        if signal == .answered, let stale = undecided.first(where: { $0.key != row && ($0.value < sentAt || ($0.value == sentAt && !rechecked.contains($0.key))) }) {
            return "row \(stale.key) stays undecided after an answer sent after its failure"
        }
        let shouldWait = counts && last && signal == .transient && weighs && !suspect && state.reason == nil
            && settings.minimumFailures > 0 && state.stopped == nil && !state.cancelled
        if actions.undecided != shouldWait {
            return actions.undecided ? "row \(row) undecided although it did not fail its last attempt while sending went on"
                                     : "row \(row) failed its last attempt while sending went on and was not held undecided"
        }
        if actions.undecided { undecided[row] = now }
        return nil
    }

    mutating func admitted(_ index: Int, _ admission: PauseAdmission) -> String? {
        sentAt[index] = now
        switch admission {
        case .go:
            if state.reason != nil { return "admitted while paused" }
            workers[index] = .sending(probe: false)
        case .probe:
            if probeWorker != nil { return "a second probe while the probe of this pause is out" }
            probeWorker = index
            workers[index] = .sending(probe: true)
        case .stepAside:
            if !mayStepAside[index] { return "a row stepped aside whose worker cannot take another" }
            // Fresh rows ran out since it said it could: it comes back with its own row (and
            // cannot step aside again), as a run's worker does when no fresh row can be had.
            guard nextOrdinal < totalRows else {
                workers[index] = .ready
                return nil
            }
            held[index].append(rows[index])
            stepAsides += 1
            rows[index] = nextOrdinal
            nextOrdinal += 1
            workers[index] = .ready
        case .stop, .cancelled:
            workers[index] = .done
        }
        return nil
    }

    /// Carries out what the state asked for, checking the probe's choice.
    mutating func apply(_ actions: PauseState<Int>.Actions) -> String? {
        if let deadline = actions.timer {
            if deadline < now { return "a timer armed in the past" }
            if let openedAt, deadline > max(now, openedAt + settings.maxPause) { return "a probe waits past max_pause" }
            timer = deadline
        }
        for (waiter, admission) in actions.resume {
            guard workers[waiter] == .parked else { return "resumed a worker that was not waiting" }
            if admission == .probe || admission == .stepAside {
                let fresh = workers.indices.contains { workers[$0] == .parked && $0 != waiter && !failedInPause.contains(rows[$0]) }
                if fresh && failedInPause.contains(rows[waiter]) { return "the probe is a row that failed while another waits" }
                if admission == .stepAside && fresh { return "a row stepped aside while a fresh row waits" }
                if admission == .stepAside && !failedInPause.contains(rows[waiter]) { return "a fresh row stepped aside" }
            }
            if admission == .probe, failedInPause.contains(rows[waiter]),
               workers.indices.contains(where: { workers[$0] == .parked && $0 != waiter && mayStepAside[$0] }) || mayStepAside[waiter] {
                return "a row that failed probes while a row could step aside for a fresh one"
            }
            if let problem = admitted(waiter, admission) { return problem }
        }
        return nil
    }

    func check() -> String? {
        let probes = probeWorker == nil ? 0 : 1
        if state.reason == nil && workers.contains(.parked) { return "a worker waits while sending goes on" }
        if state.reason != nil && !cancelled && !stopped && workers.contains(.parked)
            && probes == 0 && timer == nil && !workers.contains(where: { $0 == .ready || $0 == .sending(probe: false) }) {
            return "paused with workers waiting, no probe out, no timer and nobody to come"
        }
        return nil
    }
}
