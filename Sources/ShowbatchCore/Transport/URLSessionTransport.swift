import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport on FoundationNetworking's URLSession: one session per run.
package final class URLSessionTransport: Transport, @unchecked Sendable {
    // URLSession is thread-safe; the class holds only immutable state.
    private let session: URLSession
    private let maxBodyBytes: Int

    /// A session allowing `maxConnections` connections per host, refusing bodies over `maxBodyBytes`.
    package init(maxConnections: Int, maxBodyBytes: Int = Limits.responseBody) {
        let configuration = URLSessionConfiguration.ephemeral
        // The default of 6 would queue requests past it until they time out.
        configuration.httpMaximumConnectionsPerHost = max(maxConnections, 6)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForResource = 24 * 3600
        // Redirects are answers, as with the curl transport: following one could carry the
        // request's headers (credentials) to another host.
        session = URLSession(configuration: configuration, delegate: RefuseRedirects(), delegateQueue: nil)
        self.maxBodyBytes = maxBodyBytes
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends one request on the run's session, ending it at `timeout` whatever the server does.
    package func send(_ prepared: PreparedRequest, timeout: Duration) async -> TransportResult {
        guard let url = URL(string: prepared.url) else { return .failure(.network("invalid URL")) }
        var request = URLRequest(url: url)
        request.httpMethod = prepared.method.rawValue
        request.timeoutInterval = timeout.seconds
        for header in prepared.headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        if let body = prepared.body { request.httpBody = Data(body) }
        let session = self.session
        let state = AttemptState()
        let limit = maxBodyBytes
        // A completion handler, not async data(for:): cancelling the data task is what reliably
        // ends a transfer on Linux, both for an interrupt and for the per-attempt deadline
        // (URLRequest's timeout is an idle timeout, not a deadline).
        let (data, response, error) = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<(Data?, URLResponse?, (any Error)?), Never>) in
                let task = session.dataTask(with: request) { data, response, error in
                    // Settled first: a deadline that fires while this task waits for a thread to
                    // resume on must not turn the answer that came into a timeout.
                    state.settle()
                    continuation.resume(returning: (data, response, error))
                }
                state.start(task, deadline: timeout)
            }
        } onCancel: {
            state.cancel(timedOut: false)
        }
        if let error {
            switch state.outcome {
            case .timedOut: return .failure(.timeout)
            case .cancelled: return .failure(.cancelled)
            case .running, .settled: return .failure(URLSessionTransport.classify(error))
            }
        }
        guard let http = response as? HTTPURLResponse else { return .failure(.notHTTP("the answer is not HTTP")) }
        let body = data ?? Data()
        if body.count > limit { return .failure(.bodyTooLarge(limit)) }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return .response(status: http.statusCode, headers: headers, body: [UInt8](body))
    }

    static func classify(_ error: any Error) -> TransportFailure {
        guard let urlError = error as? URLError else { return .network("request failed") }
        switch urlError.code {
        case .timedOut: return .timeout
        case .cancelled: return .cancelled
        case .cannotConnectToHost: return .network("connection refused")
        case .cannotFindHost, .dnsLookupFailed: return .network("host not found")
        case .networkConnectionLost: return .network("connection lost")
        case .notConnectedToInternet: return .network("no network")
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return .certificate("the certificate was refused (URLError code \(urlError.code.rawValue))")
        case .secureConnectionFailed:
            return .network("TLS failure (the certificate or the TLS handshake was refused; URLError code \(urlError.code.rawValue))")
        // URLSession on Linux says this both for an empty reply and for one that is not HTTP.
        case .badServerResponse: return .network("no valid HTTP answer: the connection closed without one or the answer is not HTTP")
        case .dataLengthExceedsMaximum: return .bodyTooLarge(Limits.responseBody)
        // The URL is always http or https: this is URLSession turning away an HTTP/0.9 answer.
        case .unsupportedURL, .cannotParseResponse: return .notHTTP("the answer is not HTTP (URLError code \(urlError.code.rawValue))")
        case .badURL: return .network("the URL cannot be used")
        case .userAuthenticationRequired, .userCancelledAuthentication: return .network("the server asked for authentication the request cannot give")
        case .appTransportSecurityRequiresSecureConnection: return .network("a secure connection is required")
        case .cannotLoadFromNetwork, .callIsActive, .dataNotAllowed, .internationalRoamingOff: return .network("no network")
        case .redirectToNonExistentLocation, .httpTooManyRedirects: return .network("the answer redirects; showbatch does not follow redirects")
        case .zeroByteResource: return .network("connection closed without an answer")
        case .resourceUnavailable: return .network("the answer could not be read")
        case .cannotDecodeRawData, .cannotDecodeContentData: return .network("the answer's body cannot be decoded (Content-Encoding)")
        default: return .network("the request failed (URLError code \(urlError.code.rawValue))")
        }
    }
}

/// The data task of one attempt and why it ended, shared with the cancel and deadline paths.
private final class AttemptState: Sendable {
    enum Outcome { case running, settled, cancelled, timedOut }

    private struct Inner: @unchecked Sendable {
        // URLSessionDataTask is thread-safe for resume/cancel.
        var task: URLSessionDataTask?
        var outcome = Outcome.running
    }

    private let inner = Mutex(Inner())

    var outcome: Outcome { inner.withLock { $0.outcome } }

    /// Starts `task` unless the attempt was already cancelled, and arms the deadline.
    func start(_ task: URLSessionDataTask, deadline: Duration) {
        let cancelled = inner.withLock { inner -> Bool in
            inner.task = task
            return inner.outcome != .running
        }
        task.resume()
        if cancelled {
            task.cancel()
            return
        }
        let nanoseconds = Int(min(deadline.seconds, 86_400) * 1e9)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.cancel(timedOut: true)
        }
    }

    /// Notes that the transfer ended on its own, before any deadline or cancellation.
    func settle() {
        inner.withLock { if $0.outcome == .running { $0.outcome = .settled } }
    }

    /// Ends the transfer; the first reason wins.
    func cancel(timedOut: Bool) {
        let task = inner.withLock { inner -> URLSessionDataTask? in
            guard inner.outcome == .running else { return nil }
            inner.outcome = timedOut ? .timedOut : .cancelled
            return inner.task
        }
        task?.cancel()
    }
}

/// Hands 3xx answers back instead of following them.
private final class RefuseRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
