import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// What one attempt's result means, decided without sending or waiting: what it says of the
/// endpoint (for the circuit pause) and what the row does next. `AttemptContext.perform` carries
/// the decision out; the decision is table-tested without sockets.
struct AttemptDecision: Equatable {
    /// What the attempt showed about the endpoint. A 401 with credentials is `.none` here: whether
    /// it says the credentials are refused needs the token's history, which `perform` asks.
    let signal: AttemptSignal
    /// Whether a transient failure weighs towards an outage (see `PauseState.attemptEnded`).
    let weighs: Bool
    let next: Next

    /// What the row does after the attempt.
    enum Next: Equatable {
        /// A 2xx: its labels are revealed.
        case reveal(status: Int, body: [UInt8])
        /// A 401 with credentials: the token is renewed and the row sent again, no attempt used.
        case renewToken
        /// A 429 the pacer handles: the row is sent again when it says, no attempt used.
        case throttled
        /// Another attempt after the backoff, or after `after` when the server said.
        case retry(after: Duration?)
        /// The row fails with `error` (and the answer's status, if any).
        case fail(status: Int?, RowError)
        /// A failure no retry can fix and every row shares: the run stops.
        case stop(String)
        /// The run was interrupted.
        case cancelled
    }

    /// The decision on `result`, the `attempt`-th (1-based) of a row under `policy`. `probe`: it
    /// probed a pause; `failedBefore`: the row's previous attempt failed transiently;
    /// `credentials`: the run sends tokens; `paced`: a pacer handles 429.
    static func of(_ result: TransportResult, attempt: Int, policy: RetryPolicy, timeout: Duration, probe: Bool = false,
                   failedBefore: Bool = false, credentials: Bool = false, paced: Bool = false) -> AttemptDecision {
        let last = attempt >= policy.attempts
        let canRetry = !last
        let signal: AttemptSignal
        let next: Next
        switch result {
        case .response(401, _, _) where credentials:
            signal = .none
            next = .renewToken
        case .response(let status, let headers, let body):
            // An outage is what the retry policy calls transient, but 429: the server pacing
            // us, which Retry-After and the pacer handle.
            signal = status != 429 && status >= 500 && policy.retries(status: status) ? .transient : .answered
            if (200..<300).contains(status) {
                next = .reveal(status: status, body: body)
            } else if status == 429 && paced && policy.retries(status: 429) {
                next = .throttled
            } else if canRetry && policy.retries(status: status) {
                next = .retry(after: headers["retry-after"].flatMap(RetryAfter.parse))
            } else if status == 429 {
                next = .fail(status: status, RowError(code: .rateLimited, label: nil, message: "HTTP 429 after \(attempt) attempt\(attempt == 1 ? "" : "s")"))
            } else {
                next = .fail(status: status, RowError(code: .httpStatus, label: nil, message: "HTTP \(status)"))
            }
        case .failure(.cancelled):
            signal = .none
            next = .cancelled
        case .failure(let failure) where failure.stopsTheRun:
            // Never retried, paused or not: a certificate does not get trusted by asking again.
            signal = .none
            next = .stop(failure.words)
        case .failure(let failure):
            // A probe that got no answer keeps the pause going whatever `retry.on` says:
            // otherwise nobody would probe again and every worker would wait for ever.
            signal = policy.retries(failure) || probe ? .transient : .none
            if canRetry && policy.retries(failure) {
                next = .retry(after: nil)
            } else {
                switch failure {
                case .timeout:
                    next = .fail(status: nil, RowError(code: .timeout, label: nil, message: "no answer within \(Units.text(timeout))"))
                case .network(let detail):
                    next = .fail(status: nil, RowError(code: .network, label: nil, message: detail))
                case .notHTTP(let detail), .certificate(let detail):
                    next = .fail(status: nil, RowError(code: .unexpectedResponseType, label: nil, message: detail))
                case .bodyTooLarge(let limit):
                    next = .fail(status: nil, RowError(code: .unexpectedResponseDataFormat, label: nil, message: "response body is over \(limit >> 20) MiB"))
                case .cancelled:
                    next = .cancelled
                case .stopped(let reason):
                    next = .stop(reason)
                }
            }
        }
        // A connection reset or dropped, or a timeout, with a retry to come says little (a load
        // balancer does that now and then): the row's second failure in a row, its last attempt,
        // a probe, or an answer saying the service is unavailable says the endpoint is failing.
        var answered = false
        if case .response = result { answered = true }
        let weighs = probe || failedBefore || last || answered
        return AttemptDecision(signal: signal, weighs: weighs, next: next)
    }
}
