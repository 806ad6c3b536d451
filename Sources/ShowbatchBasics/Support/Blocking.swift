import Foundation
import Synchronization

/// Blocking work of a run (waiting for a journal's lock, joining the writer thread, gpg making
/// a message) goes to a thread of its own, never to a thread of Swift's cooperative pool: the
/// pool has as many threads as cores (two here), and each one held in a wait is a core's worth
/// of tasks (the progress ticker, the pause's timers, another test's run) that cannot go on.
///
/// The work runs in the calling task, on a task executor backed by one thread made for it, so
/// that `Task.isCancelled` still says whether the run is being interrupted (a lock wait ends at
/// once on SIGTERM). Debug builds assert, where such work blocks, that it is not on the pool.
package enum Blocking {
    /// Runs `body` on a thread of its own named `name`, the calling task suspended meanwhile.
    package static func run<T>(_ name: String, _ body: () throws(RunError) -> T) async throws(RunError) -> T {
        let executor = ThreadExecutor(name: name)
        defer { executor.stop() }
        return try await withTaskExecutorPreference(executor) { () async throws(RunError) -> T in
            Blocking.assertMayBlock()
            return try body()
        }
    }

    /// `run` for work that cannot fail.
    package static func run<T>(_ name: String, _ body: () -> T) async -> T {
        let executor = ThreadExecutor(name: name)
        defer { executor.stop() }
        return await withTaskExecutorPreference(executor) { () async -> T in
            Blocking.assertMayBlock()
            return body()
        }
    }

    private static let key = "showbatch.may-block"

    /// Marks the calling thread as one made for work that blocks (showbatch's own threads).
    package static func markCurrent() {
        Thread.current.threadDictionary[key] = true
    }

    /// Traps in debug builds when called on a thread of the cooperative pool (or the curl loop):
    /// only the main thread and showbatch's own threads may block.
    @inline(__always)
    package static func assertMayBlock(file: StaticString = #fileID, line: UInt = #line) {
        assert(Thread.isMainThread || Thread.current.threadDictionary[key] != nil,
               "a blocking wait on a thread of the cooperative pool", file: file, line: line)
    }
}

/// A task executor with one thread of its own, for `Blocking.run`.
private final class ThreadExecutor: TaskExecutor, Sendable {
    /// Unbounded: a job is put by whatever thread resumes its task (the curl loop's among
    /// them), which must never wait.
    private let jobs = BatchQueue<UnownedJob>()

    init(name: String) {
        let thread = Thread { [self] in
            Blocking.markCurrent()
            run()
        }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // A task that still prefers a stopped executor runs on the shared pool instead.
        if jobs.putIfRoom([job]) != true { globalConcurrentExecutor.enqueue(job) }
    }

    /// Ends the thread once the jobs queued have run.
    func stop() { jobs.finish() }

    private func run() {
        let executor = asUnownedTaskExecutor()
        var batch: [UnownedJob] = []
        while jobs.take(into: &batch) == .taken {
            for job in batch { job.runSynchronously(on: executor) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
