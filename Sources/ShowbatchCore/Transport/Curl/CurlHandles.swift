import Foundation
import ShowbatchBasics
internal import CCurl
import ShowbatchManifest

/// The easy handles of a loop and the transfers they carry: handles are set up per request,
/// reused from a pool, and their results turned into transport results.
///
/// Loop-thread only: every method asserts it (in debug builds). libcurl's handles may be used
/// from one thread at a time, and this state is not locked.
final class CurlHandles {
    private let multi: UnsafeMutableRawPointer
    private let maxBodyBytes: Int
    private let tls: TLSSettings
    /// Shared by every handle: TLS sessions (a new connection resumes one instead of a full
    /// handshake) and DNS answers. Loop-thread only, so it needs no lock callbacks.
    private let share: OpaquePointer?
    private let thread: LoopThread
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var pool: [UnsafeMutableRawPointer] = []
    /// libcurl's own words for the last failure of each handle (CURLOPT_ERRORBUFFER).
    private var errorBuffers: [UnsafeMutableRawPointer: UnsafeMutablePointer<CChar>] = [:]
    /// Header lists of requests with fixed headers, kept for the next request that sends the
    /// same (a run has a few): building one costs an allocation and a copy per header.
    private var sharedLists: [(headers: [(name: String, value: String)], emptyPost: Bool, list: UnsafeMutablePointer<curl_slist>?)] = []
    private static let maxSharedLists = 16

    init(multi: UnsafeMutableRawPointer, maxBodyBytes: Int, tls: TLSSettings, thread: LoopThread) {
        self.multi = multi
        self.maxBodyBytes = maxBodyBytes
        self.tls = tls
        self.thread = thread
        share = OpaquePointer(curl_share_init())
        if let share {
            _ = sb_share_setopt_long(UnsafeMutableRawPointer(share), CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
            _ = sb_share_setopt_long(UnsafeMutableRawPointer(share), CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue))
        }
    }

    /// Drives the transfers and completes those that ended.
    func perform() {
        thread.preconditionOnLoop()
        var stillRunning: Int32 = 0
        curl_multi_perform(multi, &stillRunning)
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            complete(easy, code: sb_message_result(message))
        }
    }

    /// Ends a transfer that was cancelled, if it is still running.
    func cancel(_ transfer: CurlTransfer) {
        thread.preconditionOnLoop()
        if let easy = transfer.easy, running[easy] != nil { finish(easy, .failure(.cancelled)) }
    }

    /// Ends every running transfer as cancelled.
    func cancelAll() {
        thread.preconditionOnLoop()
        for easy in Array(running.keys) { finish(easy, .failure(.cancelled)) }
    }

    /// Frees every easy handle and shared header list; nothing may run after.
    func free() {
        thread.preconditionOnLoop()
        for easy in pool { curl_easy_cleanup(easy) }
        for buffer in errorBuffers.values { buffer.deallocate() }
        errorBuffers.removeAll()
        if let share { curl_share_cleanup(UnsafeMutableRawPointer(share)) }
        pool.removeAll()
        for shared in sharedLists { curl_slist_free_all(shared.list) }
        sharedLists.removeAll()
    }

    /// Starts a transfer: a handle from the pool, set up for its request, added to the multi handle.
    func start(_ transfer: CurlTransfer) {
        thread.preconditionOnLoop()
        if transfer.cancelled.load(ordering: .acquiring) {
            transfer.continuation?.resume(returning: .failure(.cancelled))
            return
        }
        let easy = pool.popLast() ?? newEasy()
        transfer.easy = easy
        errorBuffers[easy]?[0] = 0
        transfer.limit = maxBodyBytes
        let request = transfer.request
        // Handles are reused without a reset: every option that varies per request is set here.
        // Strings: Swift passes a temporary C copy that lives only for the call, so only options
        // whose string libcurl copies may be given a String (URL, CUSTOMREQUEST, COPYPOSTFIELDS,
        // PROTOCOLS_STR all copy); HTTPHEADER keeps the list itself (see below).
        _ = sb_easy_setopt_pointer(easy, CURLOPT_URL, request.url)  // copied by libcurl
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
            _ = sb_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, request.method.rawValue)  // copied
        }
        if let body = request.body {
            _ = sb_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            // COPYPOSTFIELDS copies the body (POSTFIELDS would keep a pointer into this array).
            body.withUnsafeBytes { _ = sb_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)) }
        }
        let emptyPost = request.method == .post && request.body == nil
        if emptyPost {
            // A POST without fields would make curl read the body from standard input (sending
            // whatever the process was given there); send an empty body instead.
            _ = sb_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, 0)
            _ = sb_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, "")  // copied
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
        // Not copied: libcurl reads the list until the transfer ends, so a transfer's own list is
        // freed in `finish` and shared lists live until `free`. (curl_slist_append copies each line.)
        _ = sb_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, list)
        // Not copied: pointers handed back to the callbacks; `running` keeps the transfer alive.
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

    /// The environment's `no_proxy` list with the loopback hosts added.
    static let noProxy: String = {
        let environment = ProcessInfo.processInfo.environment
        let given = environment["no_proxy"] ?? environment["NO_PROXY"] ?? ""
        if given.trimmingCharacters(in: .whitespaces) == "*" { return "*" }
        return ([given] + ["127.0.0.1", "localhost", "::1"]).filter { !$0.isEmpty }.joined(separator: ",")
    }()

    /// A new easy handle with the options every request shares.
    private func newEasy() -> UnsafeMutableRawPointer {
        thread.preconditionOnLoop()
        let easy = curl_easy_init()!
        _ = sb_easy_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")  // copied
        _ = sb_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // The path goes out exactly as built (and as --verbose prints it): no dot-segment removal.
        _ = sb_easy_setopt_long(easy, CURLOPT_PATH_AS_IS, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // TLS verification stays on: peer certificate and host name. File names are copied.
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = sb_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = tls.caFile { _ = sb_easy_setopt_pointer(easy, CURLOPT_CAINFO, caFile) }
        if let caPath = tls.caPath { _ = sb_easy_setopt_pointer(easy, CURLOPT_CAPATH, caPath) }
        if let certificate = tls.clientCertificate { _ = sb_easy_setopt_pointer(easy, CURLOPT_SSLCERT, certificate) }
        if let key = tls.clientKey { _ = sb_easy_setopt_pointer(easy, CURLOPT_SSLKEY, key) }
        // Over HTTP/2, wait for a connection that can multiplex this request instead of opening
        // one per transfer; TLS sessions and DNS answers are shared by every handle.
        _ = sb_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        // Loopback (the emulator, a satellite) is never sent through a proxy; the option replaces
        // no_proxy, so the environment's list is kept in it. Copied.
        _ = sb_easy_setopt_pointer(easy, CURLOPT_NOPROXY, CurlHandles.noProxy)
        if let share { _ = sb_easy_setopt_pointer(easy, CURLOPT_SHARE, UnsafeRawPointer(share)) }
        _ = sb_easy_setopt_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxBodyBytes))
        _ = sb_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = sb_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        // Not copied: libcurl writes into this buffer, which lives as long as the handle.
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer[0] = 0
        errorBuffers[easy] = buffer
        _ = sb_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, buffer)
        return easy
    }

    private func complete(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        thread.preconditionOnLoop()
        guard let transfer = running[easy] else { return }
        if code == CURLE_OK {
            var status = 0
            _ = sb_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            finish(easy, .response(status: status, headers: transfer.headers, body: transfer.body))
            return
        }
        let failure = CurlHandles.failure(code, detail: errorText(easy), tooLarge: transfer.tooLarge, limit: maxBodyBytes)
        finish(easy, .failure(failure))
    }

    private func finish(_ easy: UnsafeMutableRawPointer, _ result: TransportResult) {
        thread.preconditionOnLoop()
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

    /// libcurl's words for the last failure of `easy`, or "".
    private func errorText(_ easy: UnsafeMutableRawPointer) -> String {
        guard let buffer = errorBuffers[easy], buffer[0] != 0 else { return "" }
        return String(cString: buffer)
    }

    /// What a failed transfer becomes: its cause in words, with libcurl's own text (which names
    /// hosts, ports and certificate problems, never headers or bodies).
    static func failure(_ code: CURLcode, detail: String, tooLarge: Bool, limit: Int) -> TransportFailure {
        let curlWords = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        func network(_ words: String) -> TransportFailure { .network("\(words) (curl: \(curlWords))") }
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timeout
        case CURLE_FILESIZE_EXCEEDED: return .bodyTooLarge(limit)
        case CURLE_WRITE_ERROR where tooLarge: return .bodyTooLarge(limit)
        case CURLE_UNSUPPORTED_PROTOCOL where detail.contains("HTTP/0.9") || detail.contains("HTTP version"):
            return .notHTTP("the answer is not HTTP (curl: \(curlWords))")
        // A status line whose code is not three digits (HTTP 2000): the server's answer, not our URL.
        case CURLE_UNSUPPORTED_PROTOCOL where detail.contains("response code"):
            return .notHTTP("the answer is not valid HTTP: its status is not a 3-digit code (curl: \(curlWords))")
        case CURLE_WEIRD_SERVER_REPLY: return .notHTTP("the answer is not valid HTTP (curl: \(curlWords))")
        // A TLS alert about certificates is the server turning our side of the handshake away:
        // a client certificate it requires and did not get, or one it does not trust. No retry
        // changes that. Anything else these codes carry (a reset, a closed reused connection) is
        // a network failure, which is retried. One `where` per pattern: in `case a, b where c`,
        // `c` applies to `b` only.
        case CURLE_RECV_ERROR where refusesOurCertificate(detail), CURLE_SEND_ERROR where refusesOurCertificate(detail),
             CURLE_SSL_CONNECT_ERROR where refusesOurCertificate(detail):
            return .certificate("the server refused the TLS handshake: it wants a client certificate, or does not trust the one given (curl: \(curlWords))")
        case CURLE_COULDNT_CONNECT: return network("connection refused")
        case CURLE_COULDNT_RESOLVE_HOST: return network("host not found")
        case CURLE_COULDNT_RESOLVE_PROXY: return network("proxy host not found")
        case CURLE_GOT_NOTHING: return network("connection closed without an answer")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR: return network("connection lost")
        case CURLE_PARTIAL_FILE: return network("the answer ended before its announced length")
        case CURLE_OUT_OF_MEMORY: return network("the answer could not be read: its headers are too large (over 100 KB) or memory ran out")
        case CURLE_SSL_CONNECT_ERROR: return network("TLS handshake failed")
        case CURLE_PEER_FAILED_VERIFICATION:
            return .certificate("the server's certificate is not trusted, has expired or does not name the host (curl: \(curlWords))")
        case CURLE_SSL_CERTPROBLEM: return .certificate("the client certificate cannot be used (curl: \(curlWords))")
        case CURLE_SSL_CIPHER: return network("TLS: no cipher in common with the server")
        case CURLE_SSL_CACERT_BADFILE: return .certificate("the CA file cannot be used (curl: \(curlWords))")
        case CURLE_SSL_ISSUER_ERROR: return .certificate("the certificate's issuer is not the one required (curl: \(curlWords))")
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH: return .certificate("the server's key does not match the pinned key (curl: \(curlWords))")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return network("the URL cannot be used")
        case CURLE_HTTP2, CURLE_HTTP2_STREAM: return network("HTTP/2 stream or framing error")
        default: return network("transfer failed (curl error \(code.rawValue))")
        }
    }

    /// Whether libcurl's words for a failed handshake are a TLS alert about our certificate
    /// (`sslv3 alert bad certificate`, `tlsv13 alert certificate required`, `tlsv1 alert unknown ca`).
    private static func refusesOurCertificate(_ detail: String) -> Bool {
        detail.contains("alert") && (detail.contains("certificate") || detail.contains("unknown ca"))
    }

    /// `failure` for a CURLcode given as its number (tests cannot import libcurl's module).
    package static func failure(code: UInt32, detail: String, tooLarge: Bool = false, limit: Int = Limits.responseBody) -> TransportFailure {
        failure(CURLcode(rawValue: code), detail: detail, tooLarge: tooLarge, limit: limit)
    }
}
