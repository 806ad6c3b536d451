import Foundation
import ShowbatchBasics

/// How many rows that are not ok (failed or partial) a run may end with and still exit 0:
/// `max_failed` or `--max-failed`, a count (`25`) or a share of the run's rows (`0.1%`).
package enum FailureAllowance: Sendable, Equatable {
    case count(Int)
    /// A percentage, 0…100.
    case percent(Double)

    /// Parses `25` or `0.1%`; nil when it is neither.
    package static func parse(_ text: String) -> FailureAllowance? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast()), value.isFinite, (0...100).contains(value) else { return nil }
            return .percent(value)
        }
        guard let count = Int(trimmed), count >= 0 else { return nil }
        return .count(count)
    }

    /// The rows allowed out of `rows`.
    package func rows(of rows: Int) -> Int {
        switch self {
        case .count(let count): return count
        case .percent(let value): return Int((Double(rows) * value / 100).rounded(.down))
        }
    }

    /// As written: `25` or `0.1%`.
    package var text: String {
        switch self {
        case .count(let count): return String(count)
        case .percent(let value): return (value == value.rounded() ? String(Int(value)) : String(value)) + "%"
        }
    }
}
