import Foundation
import Synchronization

/// Reveals, encodes and writes finished rows, in order, on a thread of its own.
///
/// With the curl transport one thread drives every transfer and runs every task; parsing answers,
/// encoding rows, writing files and syncing journals there would stall the transfers. The runner hands rows
/// over in batches (one lock and at most one wakeup per batch), so the writer costs that thread
/// almost nothing and uses the other core.
final class RowWriter: @unchecked Sendable {
    typealias Entry = (row: FinishedRow, target: Int)

    /// A checkpoint is taken after this many rows of an output, or this many milliseconds: each
    /// costs a sync of the output and of its journal, and bounds what a crash makes the
    /// resumed run send again.
    static let checkpointRows = 4096
    static let checkpointInterval: Int64 = 1000

    /// Rows queued at most: past this `submit` waits for the writer, so that a slow output (a
    /// pipe read slowly, a full disk) holds the run back instead of growing memory.
    private static let capacity = 4096

    private let queue = BatchQueue<Entry>(capacity: RowWriter.capacity)
    private let error = Mutex<RunError?>(nil)
    // Used by the writer thread until `finish` returns, then by the caller.
    private let files: [OutputFile?]
    private let journals: [Journal?]
    /// Writes binary labels' files, when a request has any.
    private let labelFiles: LabelFileWriter?
    private var lastCheckpoint: [Int64]
    private var thread: WorkerThread!
    // Statuses of the answers revealed here (the runner counts the rows it was given whole).
    private let okCount = Atomic<Int>(0)
    private let partialCount = Atomic<Int>(0)
    private let failedCount = Atomic<Int>(0)

    // Every row this run writes, by code and status; read once `finish` has returned.
    private var rowTally = RowTally()

    /// The rows written, by error code and HTTP status; complete once `finish` has returned.
    var tally: RowTally { rowTally }

    /// Answers revealed as ok so far, for progress lines.
    var revealedOK: Int { okCount.load(ordering: .relaxed) }

    /// Answers revealed as failed so far, for progress lines.
    var revealedFailed: Int { failedCount.load(ordering: .relaxed) }

    /// Statuses of the answers revealed; complete once `finish` has returned.
    var revealedCounts: (ok: Int, partial: Int, failed: Int) {
        (okCount.load(ordering: .relaxed), partialCount.load(ordering: .relaxed), failedCount.load(ordering: .relaxed))
    }

    /// Starts the writer for `files` and their `journals` (nil for standard output); binary
    /// labels' files are written by `labelFiles`, each before the row that names it.
    init(files: [OutputFile?], journals: [Journal?], labelFiles: LabelFileWriter? = nil) {
        self.files = files
        self.journals = journals
        self.labelFiles = labelFiles
        lastCheckpoint = Array(repeating: coarseMilliseconds(), count: files.count)
        thread = WorkerThread(name: "showbatch-write") { [self] in work() }
    }

    /// Queues rows to be written after those already queued, waiting (as a task, holding no
    /// thread) while the queue is full. After a write error they are dropped.
    func submit(_ entries: [Entry]) async {
        await queue.putWhenRoom(entries)
    }

    /// The first write error, if any (the rows after it are not written).
    var failure: RunError? { error.withLock { $0 } }

    /// Writes everything queued, stops the thread and returns the first write error.
    func finish() -> RunError? {
        queue.finish()
        thread.join()
        return failure
    }

    /// Writes a row, notes it in the journal when it failed, and takes a checkpoint when one is due.
    private func write(_ row: ResultRow, to target: Int) throws(RunError) {
        guard let file = files[target] else { return }
        rowTally.add(row)
        let span = try file.write(row)
        guard let journal = journals[target] else { return }
        if row.status == .failed { journal.recordFailed(Journal.FailedRow(ordinal: row.ordinal, start: span.start, end: span.end)) }
        let now = coarseMilliseconds()
        if file.rowsSinceCheckpoint >= Self.checkpointRows || now - lastCheckpoint[target] >= Self.checkpointInterval {
            // The output first: a checkpoint may only say what is on disk (label files included).
            try labelFiles?.sync()
            try file.sync()
            try journal.checkpoint(file.checkpoint)
            file.rowsSinceCheckpoint = 0
            lastCheckpoint[target] = now
        }
    }

    private func work() {
        var batch: [Entry] = []
        while queue.take(into: &batch) == .taken {
            for entry in batch {
                do {
                    let row: ResultRow
                    switch entry.row {
                    case .row(let whole): row = whole
                    case .answer(let answer):
                        // A binary label's file is written (and may fail the label) before its row.
                        if let labelFiles, answer.hasFiles {
                            row = try labelFiles.reveal(answer, target: entry.target)
                        } else {
                            row = answer.revealed()
                        }
                        switch row.status {
                        case .ok: okCount.add(1, ordering: .relaxed)
                        case .partial: partialCount.add(1, ordering: .relaxed)
                        case .failed: failedCount.add(1, ordering: .relaxed)
                        }
                    }
                    try write(row, to: entry.target)
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
}

/// A finished work item: its row, or a 2xx answer whose labels are still to be extracted.
enum FinishedRow: Sendable {
    /// An answer to reveal.
    struct Answer: Sendable {
        let ordinal: Int
        let request: String
        let status: Int
        let attempts: Int
        let body: [UInt8]
        let labels: [LabelBinding]
        /// The request's `extras`, carried into the row.
        var extras: [String] = []
        /// Where each binary label goes (nil for a text label); empty when there is none.
        var files: [LabelFileTarget?] = []

        /// The row: labels extracted, transformed and masked.
        func revealed() -> ResultRow {
            var row = Reveal.row(ordinal: ordinal, request: request, status: status, attempts: attempts, body: body, labels: labels)
            row.extras = extras
            return row
        }
    }

    case row(ResultRow)
    case answer(Answer)

    /// Attempts made.
    var attempts: Int {
        switch self {
        case .row(let row): return row.attempts
        case .answer(let answer): return answer.attempts
        }
    }
}
