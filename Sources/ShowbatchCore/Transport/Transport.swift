import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// Sends one HTTP request. Kept narrow so that another transport can stand in.
package protocol Transport: Sendable {
    /// Sends `request`, giving up after `timeout`.
    func send(_ request: PreparedRequest, timeout: Duration) async -> TransportResult

    /// The executor the run's tasks should prefer, when the transport has a thread of its own
    /// that can run them between transfers; nil for the shared pool.
    var executor: (any TaskExecutor)? { get }
}

extension Transport {
    /// No executor of its own: tasks run on the shared pool.
    package var executor: (any TaskExecutor)? { nil }
}

/// What one attempt came back with.
package enum TransportResult: Sendable {
    /// An HTTP answer; header names are lower-cased. The curl transport keeps only the headers
    /// the engine reads (`retry-after`, `x-ratelimit-remaining`, `x-ratelimit-reset` and their
    /// `ratelimit-` forms).
    case response(status: Int, headers: [String: String], body: [UInt8])
    /// No usable answer.
    case failure(TransportFailure)
}

/// Why an attempt has no usable answer.
package enum TransportFailure: Error, Sendable, Equatable {
    /// Connect, reset, DNS or TLS failure, described without any request data.
    case network(String)
    /// No complete answer within the per-attempt timeout.
    case timeout
    /// The body is over the size limit.
    case bodyTooLarge(Int)
    /// The server's certificate is not trusted, names another host or has expired, or the client
    /// certificate cannot be used: never retried (a run stops on it).
    case certificate(String)
    /// Something answered, but not in HTTP (another protocol, or HTTP/0.9): the row error 1400.
    case notHTTP(String)
    /// The run was cancelled (interrupt).
    case cancelled
    /// The run must stop, for this reason (a call's pacer waited past `circuit.max_pause`).
    case stopped(String)

    /// The failure in words, for an attempt line, a row's error or a stop (no request data).
    package var words: String {
        switch self {
        case .network(let detail): return detail
        case .timeout: return "timeout"
        case .bodyTooLarge(let limit): return "body over \(limit >> 20) MiB"
        case .notHTTP(let detail): return detail
        case .certificate(let detail): return "TLS: \(detail)"
        case .cancelled: return "cancelled"
        case .stopped(let reason): return reason
        }
    }
}

/// The `Retry-After` header (RFC 9110 10.2.3).
enum RetryAfter {
    /// The wait it asks for, as seconds or an HTTP date, capped at ten minutes; nil when it is neither.
    static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0 { return Units.seconds(min(seconds, 600)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return Units.seconds(min(max(0, date.timeIntervalSinceNow), 600))
    }
}

extension RetryPolicy {
    /// Whether an attempt that got no answer for `failure` is made again (attempts allowing).
    func retries(_ failure: TransportFailure) -> Bool {
        switch failure {
        case .network: return network
        case .timeout: return timeout
        case .bodyTooLarge, .certificate, .notHTTP, .cancelled, .stopped: return false
        }
    }
}

extension TransportFailure {
    /// True when no retry can fix it and every row shares it (an untrusted certificate): the run stops.
    var stopsTheRun: Bool {
        switch self {
        case .certificate, .stopped: return true
        default: return false
        }
    }
}
