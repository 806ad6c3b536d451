import Foundation

/// A thread of its own running one body, which its owner can wait for.
///
/// The feed, the writer and the concurrent request decoder each keep one: work that would stall
/// the thread driving the transfers (or libyaml's parse) goes to the other core.
package final class WorkerThread: Sendable {
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    package init(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [done] in
            Blocking.markCurrent()
            body()
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits until the body has returned; returns at once when it already has.
    package func join() {
        done.wait()
        // Left signalled, so that a second join does not wait forever.
        done.signal()
    }
}

/// Threads that must never block, as SwiftNIO asserts of its event loops: the curl loop's thread
/// drives every transfer, so a condition wait there (a full writer queue, an empty feed) stalls
/// every request in flight until it times out. Blocking waits assert it in debug builds.
package enum NonBlockingThread {
    private static let key = "showbatch.non-blocking"

    /// Marks the calling thread as one that must never block.
    package static func markCurrent() {
        Thread.current.threadDictionary[key] = true
    }

    /// Whether the calling thread must never block.
    package static var isCurrent: Bool { Thread.current.threadDictionary[key] != nil }

    /// Traps in debug builds when called on a thread that must never block.
    @inline(__always)
    package static func assertMayBlock(file: StaticString = #fileID, line: UInt = #line) {
        assert(!isCurrent, "a blocking wait on a thread that must never block (the curl loop)", file: file, line: line)
    }
}
