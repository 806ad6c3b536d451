import Foundation

/// How long to wait before trying again: `base`, doubled for each try made, up to `cap`, drawn
/// by `jitter`. Every retry's wait is one (it is a `RetryPolicy`'s).
package struct Backoff: Sendable, Equatable {
    /// How much of the wait is drawn at random, so that callers that failed together do not all
    /// come back together.
    package enum Jitter: Sendable, Equatable {
        /// Between none and the whole wait (AWS's "full jitter"): many callers, one endpoint.
        case full
        /// Between half and the whole wait: a single caller that must not come back too soon.
        case half
        /// The whole wait: one caller, with nothing to spread it from.
        case none
    }

    package var base: Duration
    package var cap: Duration
    package var jitter: Jitter

    package init(base: Duration, cap: Duration, jitter: Jitter) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// The longest wait after try `attempt` (1-based) failed.
    package func longest(after attempt: Int) -> Duration {
        let doubled = base.seconds * pow(2, Double(min(max(attempt, 1), 62) - 1))
        return Units.seconds(min(cap.seconds, doubled))
    }

    /// The wait after try `attempt` failed, drawn from `random` as `jitter` says.
    package func delay(after attempt: Int, random: inout SeededGenerator) -> Duration {
        let longest = longest(after: attempt)
        switch jitter {
        case .none: return longest
        case .full: return longest * random.unit()
        case .half: return longest / 2 + longest / 2 * random.unit()
        }
    }
}
