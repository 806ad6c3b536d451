import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Reads data rows and prepares requests ahead on a thread of its own, handing them over in
/// batches, so that the thread driving the transfers spends no time reading CSV or building
/// URLs and JSON bodies.
final class RequestFeed: WorkSource, @unchecked Sendable {
    typealias Entry = WorkEntry

    private static let batchSize = 128
    private let queue: BatchQueue<Entry>
    // The consumer's current batch, last entry first: entries are moved out with popLast, which
    // costs no retain now and no release when the batch is cleared. Only the consumer (the
    // dispatch, under its lock) touches it.
    private var taken: [Entry] = []
    private var ended = false
    // The producer's, until `stop` has joined it.
    private var items: WorkItemSequence
    /// Items the producer had prepared but could not queue when it was stopped.
    private var leftover = 0
    /// The shard's work items, up to `--limit` of them, after which the feed ends.
    private let selection: WorkSelection
    /// The shard's work items met so far (sent or skipped).
    private var met = 0
    private var producer: WorkerThread!

    /// Starts preparing `manifest`'s work items (those of `shard`) against `baseURL`, keeping
    /// at most about `capacity` ready. Items that `skips` (by output, `byRequest` mapping requests
    /// to outputs) say are not to be sent are passed over: a resumed run's finished items, the
    /// kept rows of a retry.
    init(manifest: Manifest, baseURL: String, selection: WorkSelection, byRequest: [Int] = [], extras: [[[ColumnPart]]] = [],
         skips: [SkipRule] = [], capacity: Int = 1024) {
        items = WorkItemSequence(manifest: manifest)
        self.selection = selection
        queue = BatchQueue(capacity: capacity)
        let preparer = RequestPreparer(manifest: manifest, baseURL: baseURL, extras: extras)
        let skipping = skips.contains { $0 != .none } ? (byRequest, skips) : nil
        producer = WorkerThread(name: "showbatch-feed") { [self] in produce(preparer, skipping) }
    }

    private func produce(_ preparer: RequestPreparer, _ skipping: (byRequest: [Int], skips: [SkipRule])?) {
        var batch: [Entry] = []
        batch.reserveCapacity(Self.batchSize)
        while true {
            var ended = false
            while batch.count < Self.batchSize {
                guard selection.hasRoom(after: met), let item = items.next() else {
                    ended = true
                    break
                }
                if !selection.takes(item.ordinal) { continue }
                met += 1
                if let skipping, skipping.skips[skipping.byRequest[item.requestIndex]].skips(item.ordinal) { continue }
                let work: WorkEntry.Work
                switch preparer.prepare(item) {
                case .success(let request): work = .send(request)
                case .failure(let failure): work = .failed(failure)
                }
                batch.append(WorkEntry(ordinal: item.ordinal, requestIndex: item.requestIndex, work: work))
            }
            guard queue.put(batch) else {
                leftover = batch.count
                return
            }
            batch.removeAll(keepingCapacity: true)
            if ended {
                queue.finish()
                return
            }
        }
    }

    /// After `stop`: the rows read from each data-driven request's file (by request index) when
    /// every work item was read, nil when the feed ended before that (`--limit`, an interrupt).
    var rowsRead: [Int: Int]? { items.finished ? items.rowsRead : nil }

    /// The next work item with its prepared request, without waiting.
    func poll() -> WorkPoll {
        if let entry = taken.popLast() { return .item(entry) }
        if ended { return .end }
        switch queue.take(into: &taken, wait: false) {
        case .taken:
            taken.reverse()
            return .item(taken.popLast()!)
        case .empty: return .notReady
        case .ended:
            ended = true
            return .end
        }
    }

    /// Waits, as a task, until `poll` has an item or the end to give (or the task is cancelled).
    func itemsReady() async {
        await queue.elements()
    }

    /// Stops the producer and returns how many of the shard's work items were not handed out.
    /// With `countingRest`, also reads the rest of the work items to count them (for the
    /// summary of a run --fail-fast stopped); an interrupted run does not wait for that.
    func stop(countingRest: Bool) -> Int {
        var remaining = taken.count + queue.close()
        producer.join()
        remaining += leftover
        guard countingRest else { return remaining }
        while selection.hasRoom(after: met), let item = items.next() {
            if selection.takes(item.ordinal) {
                remaining += 1
                met += 1
            }
        }
        return remaining
    }
}

/// A work item as the dispatch gets it: its request, prepared. Its data row is not handed over:
/// it is freed on the feed thread.
struct WorkEntry: Sendable {
    /// What is to be done with the item.
    enum Work: Sendable {
        /// Send this request.
        case send(PreparedRequest)
        /// The item cannot be sent: it is this failed row.
        case failed(PreparationFailure)
    }

    let ordinal: Int
    let requestIndex: Int
    let work: Work
}

/// What a work source has next.
enum WorkPoll {
    case item(WorkEntry)
    /// The producer has fallen behind (at the start of a run): wait with `waitForItems`.
    case notReady
    /// Every work item has been handed out.
    case end
}

/// Where the dispatch takes its work items from: the feed, or a list in tests.
protocol WorkSource: AnyObject {
    /// The next work item, without waiting.
    func poll() -> WorkPoll
}
