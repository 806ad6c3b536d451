import Foundation
import ShowbatchBasics
import Synchronization
internal import CCurl
import ShowbatchManifest

/// The event loop: a thread that owns the multi handle and every easy handle, and runs the jobs
/// of tasks that prefer it.
///
/// Thread rules: `inbox` is shared (under its lock) and `curl_multi_wakeup` may be called from
/// any thread; everything else (`handles`, and through it every easy handle and the multi
/// handle's transfers) belongs to the loop thread, which asserts it in debug builds.
final class CurlLoop: TaskExecutor, @unchecked Sendable {
    private struct Inbox {
        var submitted: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
        var jobs: [UnownedJob] = []
        var stopping = false
        /// Set when the loop has ended: jobs then go to the shared pool.
        var ended = false
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    /// The thread the loop runs on, recorded by the thread itself before anything is handed to it.
    private let thread = LoopThread()
    /// Loop-thread only.
    private let handles: CurlHandles
    private let finished = DispatchSemaphore(value: 0)
    /// True while the loop is (about to be) blocked in `curl_multi_poll`: only then does work
    /// handed to it need a wakeup, a system call the busy loop would otherwise pay per request.
    private let sleeping = Atomic<Bool>(false)
    private let started = DispatchSemaphore(value: 0)

    init(maxConnections: Int, maxBodyBytes: Int, tls: TLSSettings) {
        _ = CurlLoop.globalInit
        multi = curl_multi_init()!
        _ = sb_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnections)
        _ = sb_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections * 2)
        _ = sb_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        handles = CurlHandles(multi: multi, maxBodyBytes: maxBodyBytes, tls: tls, thread: thread)
        let worker = Thread { [self] in
            thread.record()
            NonBlockingThread.markCurrent()
            started.signal()
            run()
        }
        worker.name = "showbatch-curl"
        worker.start()
        started.wait()
    }

    /// Wakes the loop if it is blocked; called after adding to the inbox.
    private func wake() {
        // Pairs with the loop's store-then-check in `run`: either the loop sees the new work when
        // it checks the inbox, or this sees it asleep and wakes it (a wakeup is never lost: it
        // also cuts short a poll that starts after it).
        if sleeping.load(ordering: .sequentiallyConsistent) { curl_multi_wakeup(multi) }
    }

    /// Hands a transfer to the loop (any thread).
    func submit(_ transfer: CurlTransfer) {
        inbox.withLock { $0.submitted.append(transfer) }
        wake()
    }

    /// Asks the loop to end a transfer as cancelled (any thread).
    func cancel(_ transfer: CurlTransfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        inbox.withLock { $0.cancelled.append(transfer) }
        wake()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let ended = inbox.withLock { inbox -> Bool in
            if !inbox.ended { inbox.jobs.append(job) }
            return inbox.ended
        }
        if ended {
            // A task that still prefers a stopped loop runs on the shared pool instead.
            globalConcurrentExecutor.enqueue(job)
        } else {
            wake()
        }
    }

    /// Ends the loop, failing what is still in flight as cancelled, and frees the handles.
    /// Called on the loop thread itself (the last reference dropped by a job), it cannot wait:
    /// the loop then ends after the job that called it.
    func stop() {
        inbox.withLock { $0.stopping = true }
        if thread.isCurrent { return }
        curl_multi_wakeup(multi)
        finished.wait()
    }

    private func run() {
        thread.preconditionOnLoop()
        let executor = asUnownedTaskExecutor()
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer {
                    inbox.submitted.removeAll(keepingCapacity: true)
                    inbox.cancelled.removeAll(keepingCapacity: true)
                    inbox.jobs.removeAll(keepingCapacity: true)
                }
                return inbox
            }
            for transfer in work.submitted { handles.start(transfer) }
            for transfer in work.cancelled { handles.cancel(transfer) }
            for job in work.jobs { job.runSynchronously(on: executor) }
            if work.stopping {
                shutDown()
                return
            }
            handles.perform()
            sleeping.store(true, ordering: .sequentiallyConsistent)
            let idle = inbox.withLock { $0.submitted.isEmpty && $0.cancelled.isEmpty && $0.jobs.isEmpty && !$0.stopping }
            if idle { curl_multi_poll(multi, nil, 0, 1000, nil) }
            sleeping.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Fails what is in flight, runs the jobs that brings (and any that follow), then frees
    /// every handle; jobs arriving later go to the shared pool.
    private func shutDown() {
        thread.preconditionOnLoop()
        let executor = asUnownedTaskExecutor()
        handles.cancelAll()
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                let taken = inbox
                inbox.submitted.removeAll()
                inbox.cancelled.removeAll()
                inbox.jobs.removeAll()
                if taken.jobs.isEmpty && taken.submitted.isEmpty { inbox.ended = true }
                return taken
            }
            for transfer in work.submitted { transfer.continuation?.resume(returning: .failure(.cancelled)) }
            for job in work.jobs { job.runSynchronously(on: executor) }
            if work.jobs.isEmpty && work.submitted.isEmpty { break }
        }
        handles.free()
        curl_multi_cleanup(multi)
        finished.signal()
    }
}

/// The thread a loop runs on, recorded when it starts, so that loop-only code can check that it
/// runs there (as SwiftNIO's `NIOLoopBound` does): a slip shows in a debug build at once, not
/// as a rare corruption of libcurl's handles.
final class LoopThread: Sendable {
    // pthread_t is an integer on Linux; 0 until recorded.
    private let id = Atomic<UInt>(0)

    /// Called by the loop thread itself, first thing.
    func record() { id.store(UInt(pthread_self()), ordering: .releasing) }

    /// Whether the caller runs on the loop thread.
    var isCurrent: Bool {
        let recorded = id.load(ordering: .acquiring)
        return recorded != 0 && pthread_equal(pthread_t(recorded), pthread_self()) != 0
    }

    /// Traps when called off the loop thread, in release builds too (as NIOLoopBound does): a
    /// handle touched from two threads is a crash in libcurl later, far from its cause.
    @inline(__always)
    func preconditionOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isCurrent, "curl loop state touched off the loop thread", file: file, line: line)
    }
}
