import Foundation
import Synchronization

/// What the workers of a run share: the work items still to send, and the finished rows waiting
/// for their turn. Rows are handed to the writer in work-item order.
///
/// A run has one long-lived worker per unit of concurrency; each takes a request, sends it, puts
/// its row here and takes the next. A task per request would cost a task's creation, a wakeup of
/// a coordinating task and its end, for every request, on the thread that drives the transfers.
final class RunDispatch: Sendable {
    /// A request to send, with where its row goes.
    struct Job: Sendable {
        let sequence: Int
        let target: Int
        let ordinal: Int
        let request: PreparedRequest
        let labels: [LabelBinding]
    }

    /// What a worker does next.
    enum Next {
        case send(Job)
        /// The window is full: wait for the oldest row to be written.
        case wait
        /// Nothing more to send (the end, `--fail-fast`, a write error, or an interrupt).
        case stop
    }

    /// What the run needs once the workers are done.
    struct Outcome {
        var summary: RunSummary
        /// True when rows were left unwritten behind a request that never finished.
        var gap: Bool
        var stopped: Bool
        var exhausted: Bool
        var writeError: RunError?
    }

    // Only ever used inside `state`'s lock. Journals are not Sendable: their replay side is read
    // here and their append side only by the writer thread.
    private struct State: ~Copyable, @unchecked Sendable {
        let manifest: Manifest
        let feed: RequestFeed
        let writer: RowWriter
        let journals: [Journal?]
        let byRequest: [Int]
        let failFast: Bool
        let window: Int
        let total: Int?
        let start: ContinuousClock.Instant
        let events: @Sendable (RunEvent) -> Void

        var summary = RunSummary()
        /// Rows that finished before their turn, by sequence.
        var pending: [Int: RowWriter.Entry] = [:]
        var nextToWrite = 0
        var nextSequence = 0
        var stopped = false
        var exhausted = false
        var writeError: RunError?
        /// Rows in order, not yet handed to the writer: handed over in batches.
        var outbox: [RowWriter.Entry] = []
        var lastHandOver: Int64
        var lastProgress: Int64
        /// Workers waiting for room in the window.
        var parked: [UnsafeContinuation<Void, Never>] = []

        var windowFull: Bool { nextSequence - nextToWrite >= window }

        mutating func next() -> Next {
            if Task.isCancelled { stopped = true }
            var queuedRows = false
            defer { if queuedRows { writeReady() } }
            while !stopped && !exhausted {
                if windowFull { return .wait }
                guard let item = feed.next() else {
                    exhausted = true
                    break
                }
                let sequence = nextSequence
                nextSequence += 1
                let target = byRequest[item.requestIndex]
                if let row = journals[target]?.replayed(item.ordinal) {
                    pending[sequence] = (.row(row), target, true)
                    queuedRows = true
                    continue
                }
                switch item.request {
                case .failure(let failure):
                    let labels = manifest.requests[item.requestIndex].labels.map { (name: $0.name, value: String?.none) }
                    pending[sequence] = (.row(ResultRow(ordinal: item.ordinal, request: failure.name, status: .failed, httpStatus: nil,
                                                        attempts: 0, labels: labels, errors: [failure.error])), target, false)
                    queuedRows = true
                    if failFast { stopped = true }
                case .success(let request):
                    return .send(Job(sequence: sequence, target: target, ordinal: item.ordinal, request: request,
                                     labels: manifest.requests[item.requestIndex].labels))
                }
            }
            return .stop
        }

        /// Moves the rows whose turn has come to the outbox, handing it over when it is worth a
        /// wakeup of the writer (or has waited long enough).
        mutating func writeReady() {
            while let entry = pending.removeValue(forKey: nextToWrite) {
                nextToWrite += 1
                guard writeError == nil else { continue }
                outbox.append(entry)
                summary.rows += 1
                summary.retries += max(0, entry.row.attempts - 1)
                if entry.replayed { summary.replayed += 1 }
                // An answer's status is known once the writer has revealed it; the writer counts those.
                guard case .row(let row) = entry.row else { continue }
                switch row.status {
                case .ok: summary.ok += 1
                case .partial: summary.partial += 1
                case .failed: summary.failed += 1
                }
                if row.status == .failed && failFast { stopped = true }
            }
            let now = coarseMilliseconds()
            // A slow run still hands rows over within 20 ms of the last batch.
            if outbox.count >= 256 || (!outbox.isEmpty && now - lastHandOver >= 20) {
                lastHandOver = now
                handOver()
            }
            if now - lastProgress > 100 {
                lastProgress = now
                events(.progress(RunProgress(done: summary.rows, total: total, failed: summary.failed + writer.revealedFailed,
                                             elapsed: ContinuousClock.now - start)))
            }
        }

        mutating func handOver() {
            writer.submit(outbox)
            outbox.removeAll(keepingCapacity: true)
            if writeError == nil, let error = writer.failure {
                writeError = error
                stopped = true
            }
        }

        /// The parked workers to wake, when there is room again or the run is stopping.
        mutating func wakeable() -> [UnsafeContinuation<Void, Never>] {
            guard !parked.isEmpty, stopped || !windowFull else { return [] }
            defer { parked.removeAll() }
            return parked
        }
    }

    private let state: Mutex<State>

    /// Dispatch for a run: `feed` gives the work items, `writer` takes the rows.
    init(manifest: Manifest, feed: RequestFeed, writer: RowWriter, journals: [Journal?], byRequest: [Int], failFast: Bool,
         window: Int, total: Int?, start: ContinuousClock.Instant, events: @escaping @Sendable (RunEvent) -> Void) {
        let now = coarseMilliseconds()
        state = Mutex(State(manifest: manifest, feed: feed, writer: writer, journals: journals, byRequest: byRequest,
                            failFast: failFast, window: window, total: total, start: start, events: events,
                            lastHandOver: now, lastProgress: now))
    }

    /// One worker: sends requests until there are none left, `--fail-fast` stops, or the run is
    /// cancelled (the request then in flight leaves its row unwritten; a resumed run sends it).
    func work(_ context: AttemptContext, revealLater: Bool) async {
        while true {
            switch state.withLock({ $0.next() }) {
            case .stop:
                return
            case .wait:
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    // Parked only if nothing made room since `next`; else straight on.
                    let parked = state.withLock { state -> Bool in
                        guard state.windowFull && !state.stopped else { return false }
                        state.parked.append(continuation)
                        return true
                    }
                    if !parked { continuation.resume() }
                }
            case .send(let job):
                let row = await context.perform(job.request, ordinal: job.ordinal, labels: job.labels, revealLater: revealLater)
                let woken = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
                    if let row {
                        state.pending[job.sequence] = (row, job.target, false)
                        // Written before this worker takes another, so --fail-fast sends nothing past a failure.
                        state.writeReady()
                    } else {
                        // Cancelled: the row is not written, nor any after it.
                        state.stopped = true
                    }
                    return state.wakeable()
                }
                woken.forEach { $0.resume() }
            }
        }
    }

    /// Hands what is left to the writer; called once every worker has returned.
    func finish() -> Outcome {
        state.withLock { state in
            state.handOver()
            return Outcome(summary: state.summary, gap: !state.pending.isEmpty, stopped: state.stopped,
                           exhausted: state.exhausted, writeError: state.writeError)
        }
    }
}
