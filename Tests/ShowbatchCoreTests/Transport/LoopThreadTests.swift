import Foundation
import Synchronization
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

@Suite struct LoopThreadTests {
    /// The loop's own thread passes the check; any other thread does not.
    @Test func onlyTheRecordedThreadIsCurrent() {
        let thread = LoopThread()
        #expect(!thread.isCurrent)
        let seen = Mutex<(onLoop: Bool, afterRecord: Bool)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let before = thread.isCurrent
            thread.record()
            seen.withLock { $0 = (before, thread.isCurrent) }
            done.signal()
        }.start()
        done.wait()
        #expect(seen.withLock { $0 }.map { !$0.onLoop && $0.afterRecord } == true)
        #expect(!thread.isCurrent)
    }

    /// Loop state touched from another thread stops the process, in every build.
    @Test func touchingLoopStateElsewhereTraps() async {
        await #expect(processExitsWith: .failure) {
            LoopThread().preconditionOnLoop()
        }
    }
}
