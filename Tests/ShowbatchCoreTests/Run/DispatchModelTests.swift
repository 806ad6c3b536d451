import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// `DispatchState` driven by seeded random event sequences, as async-http-client tests its
/// connection pool's state machine: workers take jobs, park, wait for the feed and hand rows
/// over; answers come back ok, failed, cancelled or as stops in any order; the writer is slow or
/// fails; the run is cancelled at any moment. After every event the model checks the invariants:
/// rows reach the writer in work-item order and at most once, no worker is parked with nothing
/// that could wake it, `.wait` is never answered with nothing in flight or being handed over,
/// and after a cancellation no worker stays parked. At the end every row taken was written
/// exactly once, unless the run was cancelled or stopped (then what was written is in order).
/// Rows also end undecided, and the pause's verdicts on them (fail, or send again) come while
/// other jobs are in flight, sometimes before the row is handed back; a row sent again is
/// written once.
@Suite struct DispatchModelTests {
    /// Seeds per test case; the cases run in parallel.
    static let perCase = 12_500

    @Test(arguments: 0..<8) func randomSequencesKeepTheInvariants(part: Int) async {
        for seed in (part * Self.perCase)..<((part + 1) * Self.perCase) {
            // Now and then the thread goes back to the pool: other tests' tasks wait on it.
            if seed % 500 == 0 { await Task.yield() }
            var model = DispatchModel(seed: UInt64(seed))
            if model.run() != nil {
                // Run again, telling what happens, for the message.
                model = DispatchModel(seed: UInt64(seed), tracing: true)
                let problem = model.run() ?? "(not again)"
                Issue.record("seed \(seed): \(problem)\nevents: \(model.trace.joined(separator: "; "))")
                return
            }
        }
    }

    /// The sequence of issue 18: one worker, a row that fails (held as a possible outage streak),
    /// then more unsendable rows than the window holds. It used to park the only worker for ever.
    @Test func heldRowsBehindAFullWindowAreWrittenWhenNothingIsInFlight() {
        let entries = [sendEntry(0)] + (1...100).map(unsendable)
        let source = ModelSource(entries)
        var state = DispatchState<Int>(labels: [[]], byRequest: [0], failFast: false, window: 64, failureLimit: 25, now: 0)
        var written: [Int] = []
        guard case .send(let job) = state.next(from: source, cancelled: false, now: 0).0 else {
            Issue.record("expected the first row to be sent")
            return
        }
        written += handOver(state.finished(job, outcome: .row(.row(failedRow(0))), now: 0), &state)
        var rounds = 0
        while rounds < 1000 {
            rounds += 1
            let (next, actions) = state.next(from: source, cancelled: false, now: 0)
            written += handOver(actions, &state)
            if case .stop = next { break }
            if case .wait = next {
                #expect(state.inFlight > 0, "told to wait with nothing in flight")
                let parked = state.park(1)
                #expect(!parked, "parked with nothing that could wake it")
            }
        }
        written += state.finish().handOver.map { $0.row.ordinalForTest }
        #expect(written == Array(0...100))
    }

    /// A cancellation wakes every parked worker, and nobody parks after it.
    @Test func cancelWakesEveryParkedWorker() {
        let source = ModelSource((0..<10).map(sendEntry))
        var state = DispatchState<Int>(labels: [[]], byRequest: [0], failFast: false, window: 2, now: 0)
        _ = state.next(from: source, cancelled: false, now: 0)
        _ = state.next(from: source, cancelled: false, now: 0)
        let parked = state.park(1) && state.park(2)
        #expect(parked)
        let woken = state.cancel().wake
        #expect(woken == [1, 2])
        let late = state.park(3)
        #expect(!late)
        if case .stop = state.next(from: source, cancelled: false, now: 0).0 {} else { Issue.record("expected stop") }
    }
}

private func sendEntry(_ ordinal: Int) -> WorkEntry {
    WorkEntry(ordinal: ordinal, requestIndex: 0,
              work: .send(PreparedRequest(name: "r\(ordinal)", method: .post, url: "http://127.0.0.1/p", headers: [], body: nil)))
}

private func unsendable(_ ordinal: Int) -> WorkEntry {
    WorkEntry(ordinal: ordinal, requestIndex: 0,
              work: .failed(PreparationFailure(name: "d:row \(ordinal)", error: RowError(code: .invalidRow, label: nil, message: "bad row"))))
}

private func okRow(_ ordinal: Int) -> ResultRow {
    ResultRow(ordinal: ordinal, request: "r\(ordinal)", status: .ok, httpStatus: 200, attempts: 1, labels: [], errors: [])
}

private func failedRow(_ ordinal: Int) -> ResultRow {
    ResultRow(ordinal: ordinal, request: "r\(ordinal)", status: .failed, httpStatus: 503, attempts: 3, labels: [],
              errors: [RowError(code: .httpStatus, label: nil, message: "HTTP 503")])
}

/// Hands over what the actions say, at once and successfully; returns the ordinals.
private func handOver(_ actions: DispatchState<Int>.Actions, _ state: inout DispatchState<Int>) -> [Int] {
    var written: [Int] = []
    var batch = actions.handOver
    while let rows = batch {
        written += rows.map { $0.row.ordinalForTest }
        batch = state.handedOver(writerFailure: nil, now: 0).handOver
    }
    return written
}

extension FinishedRow {
    var ordinalForTest: Int {
        switch self {
        case .row(let row): return row.ordinal
        case .answer(let answer): return answer.ordinal
        }
    }
}

/// Work items from a list; `stalled` makes polls answer "not ready" until the feed catches up.
private final class ModelSource: WorkSource {
    var entries: [WorkEntry]
    var stalled = false

    init(_ entries: [WorkEntry]) { self.entries = entries.reversed() }

    func poll() -> WorkPoll {
        if stalled { return .notReady }
        return entries.popLast().map(WorkPoll.item) ?? .end
    }
}

/// One random run of the dispatch: workers, a feed, a writer, and the events between them.
private struct DispatchModel: ~Copyable {
    enum Worker {
        case idle
        /// Handing a batch to the writer; then `afterwards`.
        case handing(afterwards: Afterwards)
        case inFlight(DispatchState<Int>.Job)
        case parked
        case awaitingFeed
        case done
    }

    enum Afterwards {
        case next(DispatchState<Int>.Next)
        case idle
    }

    var random: SeededGenerator
    var state: DispatchState<Int>
    let source: ModelSource
    var workers: [Worker]
    /// The batch being handed over, and by whom.
    var handOver: (worker: Int, rows: [Int])?
    var written: [Int] = []
    var taken: [Int] = []
    /// Rows the pause sent to be tried once more, not yet sent.
    var rechecks: Set<Int> = []
    var cancelled = false
    var writerFailed = false
    var stoppedByJob = false
    /// Rows handed back undecided and not yet decided, as the model saw them.
    var undecided: Set<Int> = []
    /// What happened, for the message of a broken invariant.
    var trace: [String] = []
    let tracing: Bool

    init(seed: UInt64, tracing: Bool = false) {
        self.tracing = tracing
        random = SeededGenerator(seed: seed &* 0x9E3779B97F4A7C15 &+ 7)
        let count = Int(random.next() % 14)
        var entries: [WorkEntry] = []
        let unsendableShare = random.unit() * 0.6
        for ordinal in 0..<count {
            entries.append(random.unit() < unsendableShare ? unsendable(ordinal) : sendEntry(ordinal))
        }
        source = ModelSource(entries)
        let window = 1 + Int(random.next() % 5)
        let failureLimit = [0, 2, 3][Int(random.next() % 3)]
        let failFast = random.next() % 8 == 0
        let outboxLimit = random.next() % 3 == 0 ? 2 : 4096
        state = DispatchState(labels: [[]], byRequest: [0], failFast: failFast, window: window, outboxLimit: outboxLimit,
                              failureLimit: failureLimit, now: 0)
        workers = Array(repeating: .idle, count: 1 + Int(random.next() % 3))
    }

    /// Runs events until every worker is done; the first broken invariant, if any.
    mutating func run() -> String? {
        var now: Int64 = 0
        for _ in 0..<2_000 {
            now += Int64(random.next() % 15)
            var enabled: [Int] = []
            for (index, worker) in workers.enumerated() {
                switch worker {
                case .idle, .inFlight: enabled.append(index)
                case .awaitingFeed where !source.stalled: enabled.append(index)
                default: break
                }
            }
            let canHandOver = handOver != nil
            let canUnstall = source.stalled
            if enabled.isEmpty && !canHandOver && !canUnstall {
                if workers.allSatisfy({ if case .done = $0 { return true } else { return false } }) { return finish() }
                return "deadlock: \(workers)"
            }
            // Occasional outside events: a cancel, the feed stalling or catching up.
            let roll = random.next() % 100
            if roll < 2 && !cancelled {
                cancelled = true
                if tracing { trace.append("cancel") }
                wake(state.cancel().wake)
                if workers.contains(where: { if case .parked = $0 { return true } else { return false } }) {
                    return "a worker stayed parked after cancel"
                }
                continue
            }
            if roll < 6 && !source.stalled && !source.entries.isEmpty {
                source.stalled = true
                if tracing { trace.append("stall") }
                continue
            }
            if canUnstall && (roll < 30 || enabled.isEmpty) {
                source.stalled = false
                if tracing { trace.append("unstall") }
                continue
            }
            let inFlight = workers.contains { if case .inFlight = $0 { return true } else { return false } }
            if roll >= 90 && inFlight && !undecided.isEmpty {
                // The pause decides a row: an attempt in flight ended.
                let ordinal = undecided.sorted()[Int(random.next() % UInt64(undecided.count))]
                undecided.remove(ordinal)
                let verdict: UndecidedVerdict = [.failed, .resend, .recheck][Int(random.next() % 3)]
                if tracing { trace.append("verdict \(ordinal) \(verdict)") }
                if verdict == .recheck { rechecks.insert(ordinal) }
                wake(state.decided([(ordinal, verdict)]).wake)
                continue
            }
            if canHandOver && (roll < 55 || enabled.isEmpty) {
                if let problem = completeHandOver(now: now) { return problem }
                continue
            }
            guard !enabled.isEmpty else { continue }
            let index = enabled[Int(random.next() % UInt64(enabled.count))]
            let problem: String?
            switch workers[index] {
            case .idle, .awaitingFeed: problem = step(index, now: now)
            case .inFlight(let job): problem = finish(job, by: index, now: now)
            default: problem = nil
            }
            if let problem { return problem }
            if let problem = checkOrder() { return problem }
        }
        return "did not end in 2,000 events: \(workers)"
    }

    /// A worker asks what to do next.
    mutating func step(_ index: Int, now: Int64) -> String? {
        let (next, actions) = state.next(from: source, cancelled: cancelled, now: now)
        if tracing { trace.append("w\(index) next: \(describe(next)) handOver \(actions.handOver.map { $0.map { $0.row.ordinalForTest } } ?? []) wake \(actions.wake) forget \(actions.forget)") }
        for ordinal in actions.forget {
            guard undecided.remove(ordinal) != nil else { return "forgot row \(ordinal), which is not undecided" }
        }
        if !actions.forget.isEmpty && !undecided.isEmpty { return "forgot some undecided rows and kept others: \(undecided)" }
        if case .send(let job) = next {
            taken.append(job.ordinal)
            // A row tried once more goes on from its attempts; every other row starts afresh.
            if job.attemptsMade != (rechecks.remove(job.ordinal) != nil ? 3 : 0) {
                return "row \(job.ordinal) sent after \(job.attemptsMade) attempts"
            }
        }
        if case .wait = next, state.inFlight == 0, handOver == nil, actions.handOver == nil {
            return "told to wait with nothing in flight or being handed over"
        }
        wake(actions.wake)
        if let rows = actions.handOver {
            return begin(rows, by: index, afterwards: .next(next))
        }
        return act(on: next, by: index)
    }

    /// What a worker does with the dispatch's answer.
    mutating func act(on next: DispatchState<Int>.Next, by index: Int) -> String? {
        switch next {
        case .send(let job): workers[index] = .inFlight(job)
        case .stop: workers[index] = .done
        case .awaitFeed: workers[index] = .awaitingFeed
        case .wait:
            if state.park(index) {
                workers[index] = .parked
                if state.inFlight == 0 && handOver == nil { return "parked with nothing in flight or being handed over" }
                if cancelled { return "parked after cancel" }
            } else {
                workers[index] = .idle
            }
        }
        return nil
    }

    /// A job ends: its row (ok or failed), a cancellation or a stop.
    mutating func finish(_ job: DispatchState<Int>.Job, by index: Int, now: Int64) -> String? {
        let roll = random.next() % 100
        let outcome: JobOutcome
        if roll < 3 {
            // A job ends cancelled only when the run is being cancelled.
            outcome = .cancelled
            stoppedByJob = true
        } else if roll < 5 {
            outcome = .stop(RunStop("stop"))
            stoppedByJob = true
        } else if roll < 30 {
            outcome = .row(.row(failedRow(job.ordinal)))
        } else if roll < 45 {
            outcome = .undecided(failedRow(job.ordinal))
            if roll < 35 {
                // The verdict comes before the row is handed back.
                let verdict: UndecidedVerdict = [.failed, .resend, .recheck][Int(roll % 3)]
                if tracing { trace.append("early verdict \(job.ordinal) \(verdict)") }
                if verdict == .recheck { rechecks.insert(job.ordinal) }
                wake(state.decided([(job.ordinal, verdict)]).wake)
            } else {
                undecided.insert(job.ordinal)
            }
        } else {
            outcome = .row(.row(okRow(job.ordinal)))
        }
        let actions = state.finished(job, outcome: outcome, now: now)
        for ordinal in actions.forget { undecided.remove(ordinal) }
        if tracing { trace.append("w\(index) finished \(job.ordinal): \(roll < 3 ? "cancelled" : roll < 5 ? "stop" : roll < 30 ? "failed" : roll < 45 ? "undecided" : "ok") handOver \(actions.handOver.map { $0.map { $0.row.ordinalForTest } } ?? [])") }
        wake(actions.wake)
        if let rows = actions.handOver { return begin(rows, by: index, afterwards: .idle) }
        workers[index] = .idle
        return nil
    }

    mutating func begin(_ rows: [RowWriter.Entry], by index: Int, afterwards: Afterwards) -> String? {
        guard handOver == nil else { return "a second hand-over began while one was under way" }
        handOver = (index, rows.map { $0.row.ordinalForTest })
        workers[index] = .handing(afterwards: afterwards)
        return nil
    }

    /// The writer took the batch under way (or failed).
    mutating func completeHandOver(now: Int64) -> String? {
        guard let (index, rows) = handOver else { return nil }
        handOver = nil
        if !writerFailed { written += rows }
        let failure: RunError? = !writerFailed && random.next() % 50 == 0 ? .runtime(FileError(.write, "out.csv.partial", errno: ENOSPC)) : nil
        if failure != nil { writerFailed = true }
        let actions = state.handedOver(writerFailure: failure, now: now)
        for ordinal in actions.forget {
            guard undecided.remove(ordinal) != nil else { return "forgot row \(ordinal), which is not undecided" }
        }
        if tracing { trace.append("handed over \(rows)\(failure == nil ? "" : " then failed")") }
        wake(actions.wake)
        guard case .handing(let afterwards) = workers[index] else { return "the handing worker was not handing" }
        if let more = actions.handOver {
            handOver = (index, more.map { $0.row.ordinalForTest })
            return nil
        }
        switch afterwards {
        case .idle:
            workers[index] = .idle
            return nil
        case .next(let next): return act(on: next, by: index)
        }
    }

    func describe(_ next: DispatchState<Int>.Next) -> String {
        switch next {
        case .send(let job): return "send \(job.ordinal)"
        case .wait: return "wait"
        case .awaitFeed: return "awaitFeed"
        case .stop: return "stop"
        }
    }

    mutating func wake(_ waiters: [Int]) {
        for waiter in waiters {
            if case .parked = workers[waiter] { workers[waiter] = .idle }
        }
    }

    /// Written rows are in work-item order, each once.
    func checkOrder() -> String? {
        for (previous, next) in zip(written, written.dropFirst()) where next <= previous {
            return "rows written out of order or twice: \(written)"
        }
        return nil
    }

    /// Every worker is done: what is left goes to the writer, and every row taken is written
    /// exactly once unless the run was cancelled or stopped.
    mutating func finish() -> String? {
        let (rest, outcome) = state.finish()
        if !writerFailed { written += rest.map { $0.row.ordinalForTest } }
        if let problem = checkOrder() { return problem }
        let interrupted = cancelled || stoppedByJob || writerFailed || outcome.stopReason != nil
        if !interrupted {
            if outcome.gap { return "a gap in a run that was neither cancelled nor stopped" }
            let unsent = Set(written).subtracting(taken)
            // Unsendable rows are written without being taken as jobs.
            if written.count != Set(written).count { return "a row was written twice: \(written)" }
            if !undecided.isEmpty { return "rows left undecided at the end: \(undecided)" }
            if !Set(taken).isSubset(of: Set(written)) { return "rows taken but never written: \(Set(taken).subtracting(written))" }
            if !state.failFast && !outcome.stopped && written != Array(0..<written.count) { return "rows missing: \(written), unsent \(unsent)" }
        }
        return nil
    }
}
