import Foundation
import Synchronization
internal import CCurl

/// The event loop: a thread that owns the multi handle and every easy handle, and runs the jobs
/// of tasks that prefer it.
final class CurlLoop: TaskExecutor, @unchecked Sendable {
    // `multi`, `running` and `pool` are touched only by the loop thread; `inbox` is shared.
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
    private let maxBodyBytes: Int
    private let inbox = Mutex(Inbox())
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var pool: [UnsafeMutableRawPointer] = []
    /// Header lists of requests with fixed headers, kept for the next request that sends the
    /// same (a run has a few): building one costs an allocation and a copy per header.
    private var sharedLists: [(headers: [(name: String, value: String)], emptyPost: Bool, list: UnsafeMutablePointer<curl_slist>?)] = []
    private static let maxSharedLists = 16
    private let finished = DispatchSemaphore(value: 0)
    /// True while the loop is (about to be) blocked in `curl_multi_poll`: only then does work
    /// handed to it need a wakeup, a system call the busy loop would otherwise pay per request.
    private let sleeping = Atomic<Bool>(false)
    /// The loop thread, set by the thread itself before anything can be handed to it.
    private let loopThread = Mutex<pthread_t?>(nil)
    private let started = DispatchSemaphore(value: 0)

    init(maxConnections: Int, maxBodyBytes: Int) {
        _ = CurlLoop.globalInit
        multi = curl_multi_init()!
        self.maxBodyBytes = maxBodyBytes
        _ = sb_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnections)
        _ = sb_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections * 2)
        _ = sb_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        let thread = Thread { [self] in
            loopThread.withLock { $0 = pthread_self() }
            started.signal()
            run()
        }
        thread.name = "showbatch-curl"
        thread.start()
        started.wait()
    }

    private var onLoopThread: Bool {
        loopThread.withLock { thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Wakes the loop if it is blocked; called after adding to the inbox.
    private func wake() {
        // Pairs with the loop's store-then-check in `run`: either the loop sees the new work when
        // it checks the inbox, or this sees it asleep and wakes it (a wakeup is never lost: it
        // also cuts short a poll that starts after it).
        if sleeping.load(ordering: .sequentiallyConsistent) { curl_multi_wakeup(multi) }
    }

    func submit(_ transfer: CurlTransfer) {
        inbox.withLock { $0.submitted.append(transfer) }
        wake()
    }

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
        if onLoopThread { return }
        curl_multi_wakeup(multi)
        finished.wait()
    }

    private func run() {
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
            for transfer in work.submitted { start(transfer) }
            for transfer in work.cancelled {
                if let easy = transfer.easy, running[easy] != nil { finish(easy, .failure(.cancelled)) }
            }
            for job in work.jobs { job.runSynchronously(on: executor) }
            if work.stopping {
                shutDown()
                return
            }
            var stillRunning: Int32 = 0
            curl_multi_perform(multi, &stillRunning)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                complete(easy, code: sb_message_result(message))
            }
            sleeping.store(true, ordering: .sequentiallyConsistent)
            let idle = inbox.withLock { $0.submitted.isEmpty && $0.cancelled.isEmpty && $0.jobs.isEmpty && !$0.stopping }
            if idle { curl_multi_poll(multi, nil, 0, 1000, nil) }
            sleeping.store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Fails what is in flight, runs the jobs that brings (and any that follow), then frees
    /// every handle; jobs arriving later go to the shared pool.
    private func shutDown() {
        let executor = asUnownedTaskExecutor()
        for easy in Array(running.keys) { finish(easy, .failure(.cancelled)) }
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
        for easy in pool { curl_easy_cleanup(easy) }
        pool.removeAll()
        for shared in sharedLists { curl_slist_free_all(shared.list) }
        sharedLists.removeAll()
        curl_multi_cleanup(multi)
        finished.signal()
    }

    private func start(_ transfer: CurlTransfer) {
        if transfer.cancelled.load(ordering: .acquiring) {
            transfer.continuation?.resume(returning: .failure(.cancelled))
            return
        }
        let easy = pool.popLast() ?? newEasy()
        transfer.easy = easy
        transfer.limit = maxBodyBytes
        let request = transfer.request
        // Handles are reused without a reset: every option that varies per request is set here.
        _ = sb_easy_setopt_pointer(easy, CURLOPT_URL, request.url)
        let milliseconds = max(1, Int(transfer.timeout.seconds * 1000))
        _ = sb_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds)
        _ = sb_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds)
        // Back to a plain GET first, so nothing of the handle's previous request carries over.
        _ = sb_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, nil)
        switch request.method {
        case .get: break
        case .post: _ = sb_easy_setopt_long(easy, CURLOPT_POST, 1)
        default:
            if request.body != nil { _ = sb_easy_setopt_long(easy, CURLOPT_POST, 1) }
            _ = sb_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, request.method.rawValue)
        }
        if let body = request.body {
            _ = sb_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { _ = sb_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)) }
        }
        let emptyPost = request.method == .post && request.body == nil
        if emptyPost {
            // A POST without fields would make curl read the body from standard input (sending
            // whatever the process was given there); send an empty body instead.
            _ = sb_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0)
            _ = sb_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, "")
        }
        let list: UnsafeMutablePointer<curl_slist>?
        if request.fixedHeaders,
           let shared = sharedLists.first(where: { $0.emptyPost == emptyPost && Self.same($0.headers, request.headers) }) {
            list = shared.list
        } else {
            list = Self.headerList(request.headers, emptyPost: emptyPost)
            if request.fixedHeaders && sharedLists.count < Self.maxSharedLists {
                sharedLists.append((request.headers, emptyPost, list))
            } else {
                transfer.headerList = list
            }
        }
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, list)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        running[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    /// The header lines of a request with `headers`.
    private static func headerList(_ headers: [(name: String, value: String)], emptyPost: Bool) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, "\(header.name): \(header.value)") }
        if emptyPost && !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            // Without this curl labels the empty body of a POST a form.
            list = curl_slist_append(list, "Content-Type:")
        }
        // No "Expect: 100-continue" round trip before small JSON bodies.
        return curl_slist_append(list, "Expect:")
    }

    /// Whether two header sets are the same, in the same order.
    private static func same(_ a: [(name: String, value: String)], _ b: [(name: String, value: String)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// A new easy handle with the options every request shares.
    private func newEasy() -> UnsafeMutableRawPointer {
        let easy = curl_easy_init()!
        _ = sb_easy_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = sb_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // TLS verification stays on: peer certificate and host name.
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        _ = sb_easy_setopt_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxBodyBytes))
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = sb_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        return easy
    }

    private func complete(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        guard let transfer = running[easy] else { return }
        if code == CURLE_OK {
            var status = 0
            _ = sb_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            finish(easy, .response(status: status, headers: transfer.headers, body: transfer.body))
            return
        }
        let failure: TransportFailure
        switch code {
        case CURLE_OPERATION_TIMEDOUT: failure = .timeout
        case CURLE_FILESIZE_EXCEEDED: failure = .bodyTooLarge(maxBodyBytes)
        case CURLE_WRITE_ERROR where transfer.tooLarge: failure = .bodyTooLarge(maxBodyBytes)
        case CURLE_COULDNT_CONNECT: failure = .network("connection refused")
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: failure = .network("host not found")
        case CURLE_GOT_NOTHING: failure = .network("connection closed without an answer")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE: failure = .network("connection lost")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            failure = .network("TLS failure")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: failure = .network("invalid URL")
        default: failure = .network("curl error \(code.rawValue)")
        }
        finish(easy, .failure(failure))
    }

    private func finish(_ easy: UnsafeMutableRawPointer, _ result: TransportResult) {
        guard let transfer = running.removeValue(forKey: easy) else { return }
        curl_multi_remove_handle(multi, easy)
        // The handle must not point at the freed list, nor at this transfer, while it waits in the pool.
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, nil)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, nil)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, nil)
        curl_slist_free_all(transfer.headerList)
        transfer.headerList = nil
        transfer.easy = nil
        pool.append(easy)
        let continuation = transfer.continuation
        transfer.continuation = nil
        continuation?.resume(returning: transfer.cancelled.load(ordering: .acquiring) ? .failure(.cancelled) : result)
    }
}
