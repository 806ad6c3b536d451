import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Encodes and writes finished rows, in order, on a thread of its own.
///
/// With the curl transport one thread drives every transfer and runs every task; encoding rows,
/// writing files and syncing journals there would stall the transfers. The runner hands rows
/// over in batches (one lock and at most one wakeup per batch), so the writer costs that thread
/// almost nothing and uses the other core.
final class RowWriter: @unchecked Sendable {
    typealias Entry = (row: ResultRow, target: Int, replayed: Bool)

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [Entry] = []
    private var closing = false
    private var error: RunError?
    // Used by the writer thread until `finish` returns, then by the caller.
    private let files: [OutputFile]
    private let journals: [Journal?]
    private let done = DispatchSemaphore(value: 0)

    /// Starts the writer for `files` and their `journals` (nil for standard output).
    init(files: [OutputFile], journals: [Journal?]) {
        self.files = files
        self.journals = journals
        let thread = Thread { [self] in
            work()
            done.signal()
        }
        thread.name = "showbatch-write"
        thread.start()
    }

    /// Queues rows to be written after those already queued.
    func submit(_ entries: [Entry]) {
        guard !entries.isEmpty else { return }
        condition.lock()
        queue.append(contentsOf: entries)
        condition.signal()
        condition.unlock()
    }

    /// The first write error, if any (the rows after it are not written).
    var failure: RunError? {
        condition.lock()
        defer { condition.unlock() }
        return error
    }

    /// Writes everything queued, stops the thread and returns the first write error.
    func finish() -> RunError? {
        condition.lock()
        closing = true
        condition.signal()
        condition.unlock()
        done.wait()
        return error
    }

    private func work() {
        var batch: [Entry] = []
        while true {
            condition.lock()
            while queue.isEmpty && !closing { condition.wait() }
            swap(&batch, &queue)
            let last = closing
            let failed = error != nil
            condition.unlock()
            if !failed {
                for entry in batch {
                    do {
                        try files[entry.target].write(entry.row)
                        if !entry.replayed { try journals[entry.target]?.append(entry.row) }
                    } catch {
                        condition.lock()
                        self.error = error
                        condition.unlock()
                        break
                    }
                }
            }
            batch.removeAll(keepingCapacity: true)
            // `closing` was read with the queue, so nothing was queued after this batch.
            if last { return }
        }
    }
}

/// Milliseconds on a coarse monotonic clock: read without a system call, a few milliseconds
/// coarse, which is enough to pace progress lines and journal syncs on every row.
func coarseMilliseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}
