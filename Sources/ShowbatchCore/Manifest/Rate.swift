import Foundation

/// Requests per interval, across a whole run.
package struct Rate: Sendable, Equatable {
    /// How many requests may start per interval.
    package let count: Int
    /// The interval.
    package let per: Duration

    /// Creates a rate.
    package init(count: Int, per: Duration) {
        self.count = count
        self.per = per
    }

    /// The interval between two requests.
    package var spacing: Duration { per / count }

    /// A share of this rate: one of `parts` processes keeping the rate together.
    package func share(of parts: Int) -> Rate { Rate(count: count, per: per * parts) }
}
