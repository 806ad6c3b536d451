import Foundation
import Testing
@testable import ShowbatchBasics

/// The one condition-variable queue: the feed's, the writer's, the decoder's, and each blocking
/// thread's jobs.
@Suite struct BatchQueueTests {
    /// What was put before the producer's last word is taken; a put after it is refused, since
    /// no one would take it (a blocking thread's executor then runs the job on the pool).
    @Test func aPutAfterTheLastWordIsRefusedAndWhatCameBeforeIsTaken() {
        let queue = BatchQueue<Int>()
        #expect(queue.putIfRoom([1, 2]) == true)
        queue.finish()
        #expect(queue.putIfRoom([3]) == false && queue.put([4]) == false)
        var batch: [Int] = []
        #expect(queue.take(into: &batch, wait: false) == .taken && batch == [1, 2])
        batch.removeAll()
        #expect(queue.take(into: &batch, wait: false) == .ended && batch.isEmpty)
    }

    /// A full queue makes `putIfRoom` say so at once instead of waiting; a closed one refuses.
    @Test func putIfRoomNeverWaits() {
        let queue = BatchQueue<Int>(capacity: 2)
        #expect(queue.putIfRoom([1, 2]) == true)
        #expect(queue.putIfRoom([3]) == nil)
        #expect(queue.close() == 2)
        #expect(queue.putIfRoom([3]) == false)
    }

    /// Blocking work runs on a thread showbatch made for it (marked as one that may block), and
    /// its task comes back to its caller with the result.
    @Test func blockingWorkRunsOnAThreadOfItsOwn() async {
        let marked = await Blocking.run("test-blocking") { Thread.current.threadDictionary["showbatch.may-block"] != nil }
        #expect(marked)
        for index in 0..<50 {
            #expect(await Blocking.run("test-blocking-\(index)") { index * 2 } == index * 2)
        }
    }
}
