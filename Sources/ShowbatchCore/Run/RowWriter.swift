import Foundation
import ShowbatchBasics
import Synchronization
import ShowbatchManifest

/// Reveals, encodes and writes finished rows, in order, on a thread of its own.
///
/// With the curl transport one thread drives every transfer and runs every task; parsing answers,
/// encoding rows, writing files and syncing journals there would stall the transfers. The runner hands rows
/// over in batches (one lock and at most one wakeup per batch), so the writer costs that thread
/// almost nothing and uses the other core.
final class RowWriter: @unchecked Sendable {
    typealias Entry = (row: FinishedRow, target: Int)

    /// What the writer did, once it is done: the rows of the outputs by status (an earlier run's
    /// included), the retries and what went wrong in the rows this run wrote, and the first write
    /// error (the rows after it are not written).
    struct Result {
        var counts: RowCounts
        var retries: Int
        var tally: RowTally
        var error: RunError?
        /// Rows queued but not written because the run was interrupted (`--resume` sends them).
        var dropped = 0
    }

    /// Rows written so far, for a progress line (read from any thread).
    struct Progress {
        var rows: Int
        var ok: Int
        var failed: Int
        var retries: Int
    }

    /// Rows queued at most: past this `submit` waits for the writer, so that a slow output (a
    /// pipe read slowly, a full disk) holds the run back instead of growing memory.
    private static let capacity = 4096

    private let queue = BatchQueue<Entry>(capacity: RowWriter.capacity)
    private let error = Mutex<RunError?>(nil)
    // Used by the writer thread until `finish` returns.
    private let outputs: RunOutputs
    /// Writes binary labels' files, when a request has any.
    private let labelFiles: LabelFileWriter?
    private var thread: WorkerThread!
    /// The rows written (with those an earlier run left) and the retries they took: counted here
    /// only, as each row is written; the atomics give progress lines a view as the run goes.
    private var counts: RowCounts
    private var retries = 0
    private var tally = RowTally()
    private let rowsSoFar: Atomic<Int>
    private let okSoFar: Atomic<Int>
    private let failedSoFar: Atomic<Int>
    private let retriesSoFar = Atomic<Int>(0)

    /// Starts the writer for `outputs`; binary labels' files are written by `labelFiles`, each
    /// before the row that names it. `carried` are the rows an earlier run left in the outputs.
    init(outputs: RunOutputs, labelFiles: LabelFileWriter? = nil, carried: RowCounts = RowCounts()) {
        self.outputs = outputs
        self.labelFiles = labelFiles
        counts = carried
        carriedRows = carried.rows
        rowsSoFar = Atomic(carried.rows)
        okSoFar = Atomic(carried.ok)
        failedSoFar = Atomic(carried.failed)
        thread = WorkerThread(name: "showbatch-write") { [self] in work() }
    }

    /// Queues rows to be written after those already queued, waiting (as a task, holding no
    /// thread) while the queue is full. After a write error they are dropped.
    func submit(_ entries: [Entry]) async {
        submitted.add(entries.count, ordering: .relaxed)
        await queue.putWhenRoom(entries)
    }

    /// The first write error, if any (the rows after it are not written).
    var failure: RunError? { error.withLock { $0 } }

    /// The rows written so far.
    var progress: Progress {
        Progress(rows: rowsSoFar.load(ordering: .relaxed), ok: okSoFar.load(ordering: .relaxed),
                 failed: failedSoFar.load(ordering: .relaxed), retries: retriesSoFar.load(ordering: .relaxed))
    }

    /// The run is interrupted: the row being written is the last. The rows queued and those
    /// still to come are dropped: writing thousands of them (a gpg run for each encrypted label
    /// file) would keep SIGTERM waiting for many seconds, and as no checkpoint covers them,
    /// `--resume` sends them again.
    func interrupt() {
        stopping.store(true, ordering: .relaxed)
        queue.close()
        outputs.abandonWaitingWrites()
    }

    /// Writes everything queued (unless interrupted), stops the thread and says what was written.
    func finish() -> Result {
        if !stopping.load(ordering: .relaxed) { queue.finish() }
        Blocking.assertMayBlock()
        thread.join()
        let dropped = submitted.load(ordering: .relaxed) - (counts.rows - carriedRows)
        return Result(counts: counts, retries: retries, tally: tally, error: failure, dropped: max(0, dropped))
    }

    /// Set by `interrupt`: the writer stops after the row in hand.
    private let stopping = Atomic<Bool>(false)
    /// Rows handed to `submit`, written or not.
    private let submitted = Atomic<Int>(0)
    private let carriedRows: Int

    private func work() {
        var batch: [Entry] = []
        while queue.take(into: &batch) == .taken {
            for entry in batch {
                if stopping.load(ordering: .relaxed) { break }
                do {
                    let row = outputs.checked(try entry.row.row(labelFiles: labelFiles, target: entry.target), for: entry.target)
                    let labelFiles = self.labelFiles
                    try outputs.write(row, to: entry.target) { () throws(RunError) in try labelFiles?.sync() }
                    count(row)
                } catch {
                    self.error.withLock { $0 = error }
                    // Nothing after a failed row is written; a waiting submitter goes on.
                    queue.close()
                    break
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
        // Every label file's name is on disk before the outputs take their last checkpoint
        // (when they are committed, or left for --resume after a failure or an interrupt).
        if let labelFiles {
            do {
                try labelFiles.sync()
            } catch {
                self.error.withLock { $0 = $0 ?? error }
            }
            labelFiles.close()
        }
    }

    private func count(_ row: ResultRow) {
        counts.count(row.status)
        tally.add(row)
        let retried = max(0, row.attempts - 1)
        retries += retried
        rowsSoFar.add(1, ordering: .relaxed)
        switch row.status {
        case .ok: okSoFar.add(1, ordering: .relaxed)
        case .failed: failedSoFar.add(1, ordering: .relaxed)
        case .partial: break
        }
        if retried > 0 { retriesSoFar.add(retried, ordering: .relaxed) }
    }
}

extension RunSummary {
    /// The summary of what the writer wrote (`written`), `carried` rows being in the outputs
    /// already, `unfinished` rows the dispatch did not finish, and what the attempts counted.
    init(written: RowWriter.Result, carried: Int, unfinished: Int, counts: AttemptCounts) {
        self.init()
        rows = written.counts.rows
        ok = written.counts.ok
        partial = written.counts.partial
        failed = written.counts.failed
        retries = written.retries
        replayed = carried
        tally = written.tally
        self.unfinished = unfinished + written.dropped
        resentAfter401 = counts.resentAfter401.load(ordering: .relaxed)
        resentAfter429 = counts.throttled.load(ordering: .relaxed)
    }
}
