import Foundation
import ShowbatchBasics

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

extension Units {
    /// A rate from text such as `50/s` or `600/m`; nil when it is not one.
    package static func rate(_ text: String) -> Rate? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[0]), count > 0, parts[0].allSatisfy(\.isNumber) else { return nil }
        switch parts[1] {
        case "s": return Rate(count: count, per: .seconds(1))
        case "m": return Rate(count: count, per: .seconds(60))
        default: return nil
        }
    }

    /// A rate as written in a manifest (`50/s`), or as a count per interval (`50/8s`).
    package static func rateText(_ rate: Rate) -> String {
        switch rate.per {
        case .seconds(1): return "\(rate.count)/s"
        case .seconds(60): return "\(rate.count)/m"
        default: return "\(rate.count)/\(text(rate.per))"
        }
    }
}
