import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one attempt came back with.
public enum TransportResult: Sendable {
    /// An HTTP answer; header names are lower-cased.
    case response(status: Int, headers: [String: String], body: [UInt8])
    /// No usable answer.
    case failure(TransportFailure)
}

/// Why an attempt has no usable answer.
public enum TransportFailure: Error, Sendable, Equatable {
    /// Connect, reset, DNS or TLS failure, described without any request data.
    case network(String)
    /// No complete answer within the per-attempt timeout.
    case timeout
    /// The body is over the size limit.
    case bodyTooLarge(Int)
    /// The run was cancelled (interrupt).
    case cancelled
}

/// Sends one HTTP request. Kept narrow so that another transport can stand in.
public protocol Transport: Sendable {
    /// Sends `request`, giving up after `timeout`.
    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult
}

/// The transport on FoundationNetworking's URLSession: one session per run.
public final class URLSessionTransport: Transport, @unchecked Sendable {
    // URLSession is thread-safe; the class holds only immutable state.
    private let session: URLSession
    private let maxBodyBytes: Int

    /// A session allowing `maxConnections` connections per host, refusing bodies over `maxBodyBytes`.
    public init(maxConnections: Int, maxBodyBytes: Int = 16 << 20) {
        let configuration = URLSessionConfiguration.ephemeral
        // The default of 6 would queue requests past it until they time out.
        configuration.httpMaximumConnectionsPerHost = max(maxConnections, 6)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForResource = 24 * 3600
        session = URLSession(configuration: configuration)
        self.maxBodyBytes = maxBodyBytes
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ prepared: PreparedRequest, timeout: Duration) async -> TransportResult {
        guard let url = URL(string: prepared.url) else { return .failure(.network("invalid URL")) }
        var request = URLRequest(url: url)
        request.httpMethod = prepared.method.rawValue
        request.timeoutInterval = timeout.seconds
        for header in prepared.headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        if let body = prepared.body { request.httpBody = Data(body) }
        let session = self.session
        let limit = maxBodyBytes
        let finished = request
        // The request races a timer: URLRequest's timeout is an idle timeout, not a deadline.
        return await withTaskGroup(of: TransportResult?.self) { group in
            group.addTask {
                do {
                    let (data, response) = try await session.data(for: finished)
                    guard let http = response as? HTTPURLResponse else { return .failure(.network("not an HTTP response")) }
                    if data.count > limit { return .failure(.bodyTooLarge(limit)) }
                    var headers: [String: String] = [:]
                    for (key, value) in http.allHeaderFields {
                        if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
                    }
                    return .response(status: http.statusCode, headers: headers, body: [UInt8](data))
                } catch {
                    if Task.isCancelled { return nil }
                    return .failure(URLSessionTransport.classify(error))
                }
            }
            group.addTask {
                do {
                    try await Task.sleep(for: timeout)
                    return .failure(.timeout)
                } catch {
                    return nil
                }
            }
            var outcome: TransportResult = .failure(.cancelled)
            for await result in group {
                if let result {
                    outcome = result
                    break
                }
                if Task.isCancelled { break }
            }
            group.cancelAll()
            return outcome
        }
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
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return .network("TLS failure")
        case .badServerResponse: return .network("bad server response")
        case .dataLengthExceedsMaximum: return .bodyTooLarge(16 << 20)
        default: return .network("URL error \(urlError.code.rawValue)")
        }
    }
}
