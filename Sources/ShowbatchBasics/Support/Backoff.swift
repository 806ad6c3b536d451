import Foundation
import ShowbatchBasics
import ShowbatchManifest

/// How long to wait before trying again: `base`, doubled for each try made, up to `cap`, drawn
/// by `jitter`. The one backoff of every caller that tries again (rows, delivery, the token
/// endpoint, the hostname check, the metrics push): each says only its numbers.
struct Backoff: Sendable, Equatable {
    /// How much of the wait is drawn at random, so that callers that failed together do not all
    /// come back together.
    enum Jitter: Sendable, Equatable {
        /// Between none and the whole wait (AWS's "full jitter"): many callers, one endpoint.
        case full
        /// Between half and the whole wait: a single caller that must not come back too soon.
        case half
        /// The whole wait: one caller, with nothing to spread it from.
        case none
    }

    let base: Duration
    let cap: Duration
    let jitter: Jitter

    /// The longest wait after try `attempt` (1-based) failed.
    func longest(after attempt: Int) -> Duration {
        let doubled = base.seconds * pow(2, Double(min(max(attempt, 1), 62) - 1))
        return Units.seconds(min(cap.seconds, doubled))
    }

    /// The wait after try `attempt` failed, drawn from `random` as `jitter` says.
    func delay(after attempt: Int, random: inout SeededGenerator) -> Duration {
        let longest = longest(after: attempt)
        switch jitter {
        case .none: return longest
        case .full: return longest * random.unit()
        case .half: return longest / 2 + longest / 2 * random.unit()
        }
    }

    /// A service the run depends on beside the endpoint (the token endpoint): 0.5 s, 1 s, 2 s…
    /// up to 30 s, half to all of it.
    static let service = Backoff(base: .milliseconds(500), cap: .seconds(30), jitter: .half)
    /// The Pushgateway: a push at the end of a run is short, 0.25 s then 0.5 s.
    static let push = Backoff(base: .milliseconds(250), cap: .seconds(1), jitter: .none)
}

extension RetryPolicy {
    /// The manifest's backoff (`retry.backoff`, `retry.max_backoff`), with full jitter.
    var rowBackoff: Backoff { Backoff(base: backoff, cap: maxBackoff, jitter: .full) }
}

/// Which answers of a server are worth asking again for, whoever asks: 5xx (the server's own
/// trouble), 429 (too many, for now) and 408 (it gave up waiting). Anything else (a 4xx) is the
/// server's word and will not change. Rows do not use it: which statuses a row retries is the
/// manifest's `retry.on`.
enum RetryableStatus {
    static func contains(_ status: Int) -> Bool { status >= 500 || status == 429 || status == 408 }
}
