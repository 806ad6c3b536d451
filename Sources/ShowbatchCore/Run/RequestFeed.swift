import Foundation

/// Reads data rows and prepares requests ahead on a thread of its own, handing them over in
/// batches, so that the thread driving the transfers spends no time reading CSV or building
/// URLs and JSON bodies.
final class RequestFeed: @unchecked Sendable {
    /// A prepared work item. Its data row is not handed over: it is freed on the feed thread.
    typealias Entry = (ordinal: Int, requestIndex: Int, request: Result<PreparedRequest, PreparationFailure>)

    private static let batchSize = 128
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [Entry] = []
    private var exhausted = false
    private var stopping = false
    /// Items the producer had prepared but not queued when it was stopped.
    private var leftover = 0
    // The consumer's current batch, last entry first: entries are moved out with popLast, which
    // costs no retain now and no release when the batch is cleared.
    private var taken: [Entry] = []
    // The producer's, until `stop` has joined it.
    private var items: WorkItemSequence
    private let shard: Shard?
    private let capacity: Int
    private let done = DispatchSemaphore(value: 0)

    /// Starts preparing `manifest`'s work items (those of `shard`) against `baseURL`, keeping
    /// at most about `capacity` ready.
    init(manifest: Manifest, baseURL: String, shard: Shard?, capacity: Int = 1024) {
        items = WorkItemSequence(manifest: manifest)
        self.shard = shard
        self.capacity = capacity
        let preparer = RequestPreparer(manifest: manifest, baseURL: baseURL)
        let thread = Thread { [self] in
            produce(preparer)
            done.signal()
        }
        thread.name = "showbatch-feed"
        thread.start()
    }

    private func produce(_ preparer: RequestPreparer) {
        var batch: [Entry] = []
        batch.reserveCapacity(Self.batchSize)
        while true {
            var ended = false
            while batch.count < Self.batchSize {
                guard let item = items.next() else {
                    ended = true
                    break
                }
                if let shard, !shard.takes(item.ordinal) { continue }
                batch.append((item.ordinal, item.requestIndex, preparer.prepare(item)))
            }
            condition.lock()
            while queue.count >= capacity && !stopping { condition.wait() }
            if stopping {
                leftover = batch.count
                condition.unlock()
                return
            }
            queue.append(contentsOf: batch)
            exhausted = ended
            condition.broadcast()
            condition.unlock()
            batch.removeAll(keepingCapacity: true)
            if ended { return }
        }
    }

    /// The next work item with its prepared request, or nil after the last. Waits only when
    /// the producer has fallen behind (at the start of a run).
    func next() -> Entry? {
        if let entry = taken.popLast() { return entry }
        condition.lock()
        while queue.isEmpty && !exhausted { condition.wait() }
        swap(&taken, &queue)
        condition.broadcast()
        condition.unlock()
        taken.reverse()
        return taken.popLast()
    }

    /// Stops the producer and returns how many of the shard's work items were not handed out.
    func stop() -> Int {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        done.wait()
        var remaining = taken.count + queue.count + leftover
        while let item = items.next() {
            if shard?.takes(item.ordinal) ?? true { remaining += 1 }
        }
        return remaining
    }
}
