import Foundation

/// A bounded queue between two threads that hands elements over in batches: a producer adds a
/// whole batch under one lock with one wakeup, and the consumer takes everything queued at once.
///
/// Handing over element by element would cost a lock and a wakeup per element; the run's feed,
/// writer and the concurrent request decoder each pass tens of thousands of elements a second.
/// The producer waits while the queue is full, so a slow consumer holds it back instead of
/// memory growing.
final class BatchQueue<Element>: @unchecked Sendable {
    /// What `take` found.
    enum Taken: Equatable {
        /// Elements were moved into the batch.
        case taken
        /// Nothing is queued yet (only when not waiting).
        case empty
        /// Nothing is queued and nothing more will be: the producer finished, or the queue was closed.
        case ended
    }

    private let condition = NSCondition()
    /// Most elements queued before `put` waits.
    let capacity: Int
    // Guarded by `condition`.
    private var items: [Element] = []
    private var finished = false
    private var closed = false

    /// A queue that holds at most about `capacity` elements (a batch is never split).
    init(capacity: Int = .max) {
        self.capacity = capacity
    }

    /// Adds `batch` after what is queued, waiting while the queue is full. Returns false, adding
    /// nothing, once the consumer has closed the queue.
    @discardableResult
    func put(_ batch: [Element]) -> Bool {
        guard !batch.isEmpty else { return true }
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        if closed { return false }
        items.append(contentsOf: batch)
        condition.broadcast()
        return true
    }

    /// Moves everything queued into `batch`, which must be empty. With `wait`, waits until
    /// something is queued or the queue has ended.
    func take(into batch: inout [Element], wait: Bool = true) -> Taken {
        condition.lock()
        defer { condition.unlock() }
        while wait && items.isEmpty && !finished && !closed { condition.wait() }
        if items.isEmpty { return finished || closed ? .ended : .empty }
        swap(&batch, &items)
        // A producer may be waiting for room.
        condition.broadcast()
        return .taken
    }

    /// Waits until something is queued or the queue has ended.
    func waitForElements() {
        condition.lock()
        while items.isEmpty && !finished && !closed { condition.wait() }
        condition.unlock()
    }

    /// The producer's last word: nothing more will be put.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The consumer's last word: puts are refused from now on (a waiting producer returns).
    /// Returns how many elements were still queued; they are dropped.
    @discardableResult
    func close() -> Int {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        let left = items.count
        items.removeAll()
        condition.broadcast()
        return left
    }
}
