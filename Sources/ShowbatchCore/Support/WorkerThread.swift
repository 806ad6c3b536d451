import Foundation

/// A thread of its own running one body, which its owner can wait for.
///
/// The feed, the writer and the concurrent request decoder each keep one: work that would stall
/// the thread driving the transfers (or libyaml's parse) goes to the other core.
final class WorkerThread: Sendable {
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread named `name`.
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread { [done] in
            body()
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits until the body has returned; returns at once when it already has.
    func join() {
        done.wait()
        // Left signalled, so that a second join does not wait forever.
        done.signal()
    }
}
