import Foundation

/// A bounded queue between two threads that hands elements over in batches: a producer adds a
/// whole batch under one lock with one wakeup, and the consumer takes everything queued at once.
///
/// Handing over element by element would cost a lock and a wakeup per element; the run's feed,
/// writer and the concurrent request decoder each pass tens of thousands of elements a second.
/// The producer waits while the queue is full, so a slow consumer holds it back instead of
/// memory growing. Elements cross threads, so they are `Sendable`; the queue's own state is
/// guarded by its condition (hence `@unchecked`). Inlinable, so that each user's copy is
/// specialized for its element type: across the module boundary, every element handed over
/// would go through the generic's witness tables.
package final class BatchQueue<Element: Sendable>: @unchecked Sendable {
    /// What `take` found.
    package enum Taken: Equatable {
        /// Elements were moved into the batch.
        case taken
        /// Nothing is queued yet (only when not waiting).
        case empty
        /// Nothing is queued and nothing more will be: the producer finished, or the queue was closed.
        case ended
    }

    @usableFromInline let condition = NSCondition()
    /// Most elements queued before `put` waits.
    package let capacity: Int
    // Guarded by `condition`.
    @usableFromInline var items: [Element] = []
    @usableFromInline var finished = false
    @usableFromInline var closed = false
    /// Tasks waiting, without a thread, for elements or for room.
    @usableFromInline var elementWaiters: [UnsafeContinuation<Void, Never>] = []
    @usableFromInline var roomWaiters: [UnsafeContinuation<Void, Never>] = []

    /// Tasks waiting now, for elements or for room (tests wait on it instead of sleeping).
    @inlinable package var parkedTasks: Int {
        condition.lock()
        defer { condition.unlock() }
        return elementWaiters.count + roomWaiters.count
    }

    /// A queue that holds at most about `capacity` elements (a batch is never split).
    @inlinable package init(capacity: Int = .max) {
        self.capacity = capacity
    }

    /// Adds `batch` after what is queued, waiting while the queue is full. Returns false, adding
    /// nothing, once the consumer has closed the queue.
    @discardableResult
    @inlinable package func put(_ batch: [Element]) -> Bool {
        guard !batch.isEmpty else { return true }
        NonBlockingThread.assertMayBlock()
        condition.lock()
        while items.count >= capacity && !closed { condition.wait() }
        return added(batch)
    }

    /// Adds `batch` after what is queued; a task waits for room without holding a thread (the
    /// curl loop's thread must never block). Returns false, adding nothing, once the consumer
    /// has closed the queue. A cancelled task waits too: the consumer is draining the queue, and
    /// an interrupted run still hands every finished row to the writer.
    @discardableResult
    @inlinable package func putWhenRoom(_ batch: [Element]) async -> Bool {
        guard !batch.isEmpty else { return true }
        while true {
            if let added = putIfRoom(batch) { return added }
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                condition.lock()
                if items.count < capacity || closed {
                    condition.unlock()
                    continuation.resume()
                    return
                }
                roomWaiters.append(continuation)
                condition.unlock()
            }
        }
    }

    /// Adds `batch` when there is room (or reports the queue closed); nil when it is full. It
    /// never waits: a queue without a capacity takes from any thread, the curl loop's too.
    @inlinable package func putIfRoom(_ batch: [Element]) -> Bool? {
        condition.lock()
        guard items.count < capacity || closed else {
            condition.unlock()
            return nil
        }
        return added(batch)
    }

    /// Adds under the lock taken by the caller, and releases it; refused once the queue was
    /// closed, or finished (a put after the producer's last word would never be taken).
    @inlinable func added(_ batch: [Element]) -> Bool {
        guard !closed && !finished else {
            condition.unlock()
            return false
        }
        items.append(contentsOf: batch)
        condition.broadcast()
        let waiting = elementWaiters
        elementWaiters.removeAll()
        condition.unlock()
        waiting.forEach { $0.resume() }
        return true
    }

    /// Resumes every waiting task (they check again and see why).
    @inlinable func resumeAllWaiters() {
        condition.lock()
        let waiting = elementWaiters + roomWaiters
        elementWaiters.removeAll()
        roomWaiters.removeAll()
        condition.unlock()
        waiting.forEach { $0.resume() }
    }

    /// Moves everything queued into `batch`, which must be empty. With `wait`, waits until
    /// something is queued or the queue has ended.
    @inlinable package func take(into batch: inout [Element], wait: Bool = true) -> Taken {
        if wait { NonBlockingThread.assertMayBlock() }
        condition.lock()
        while wait && items.isEmpty && !finished && !closed { condition.wait() }
        if items.isEmpty {
            condition.unlock()
            return finished || closed ? .ended : .empty
        }
        swap(&batch, &items)
        // A producer may be waiting for room.
        condition.broadcast()
        let waiting = roomWaiters
        roomWaiters.removeAll()
        condition.unlock()
        waiting.forEach { $0.resume() }
        return .taken
    }

    /// Waits, as a task, until something is queued or the queue has ended, or the task is
    /// cancelled (then at once: a cancelled run takes nothing more).
    @inlinable package func elements() async {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                condition.lock()
                // Cancellation is checked under the lock: a handler that ran before finds nothing to resume.
                if !items.isEmpty || finished || closed || Task.isCancelled {
                    condition.unlock()
                    continuation.resume()
                    return
                }
                elementWaiters.append(continuation)
                condition.unlock()
            }
        } onCancel: {
            resumeAllWaiters()
        }
    }

    /// The producer's last word: nothing more will be put.
    @inlinable package func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
        resumeAllWaiters()
    }

    /// The consumer's last word: puts are refused from now on (a waiting producer returns).
    /// Returns how many elements were still queued; they are dropped.
    @discardableResult
    @inlinable package func close() -> Int {
        condition.lock()
        closed = true
        let left = items.count
        items.removeAll()
        condition.broadcast()
        condition.unlock()
        resumeAllWaiters()
        return left
    }
}
