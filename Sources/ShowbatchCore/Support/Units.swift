import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Parsing of durations (`500ms`, `30s`, `2m`, plain seconds) and rates (`50/s`, `600/m`).
package enum Units {
    /// A duration from text; nil when it is not one or not positive.
    package static func duration(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            let number = trimmed.dropLast(unit.suffix.count)
            guard let value = Double(number), value.isFinite, value > 0, number.first != "+",
                  number.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
            return seconds(value * unit.seconds)
        }
        guard let value = Double(trimmed), value.isFinite, value > 0,
              trimmed.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
        return seconds(value)
    }

    /// A duration of `value` seconds.
    package static func seconds(_ value: Double) -> Duration {
        .nanoseconds(Int64((value * 1e9).rounded()))
    }

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

    /// A latency `D` or `D±J` (also `D+-J`): the base and the jitter; `0` is allowed.
    package static func latency(_ text: String) -> (Duration, Duration)? {
        func base(_ part: String) -> Duration? {
            ["0", "0s", "0ms"].contains(part) ? .zero : duration(part)
        }
        for separator in ["±", "+-"] {
            if let range = text.range(of: separator) {
                guard let value = base(String(text[..<range.lowerBound])),
                      let jitter = duration(String(text[range.upperBound...])) else { return nil }
                return (value, jitter)
            }
        }
        guard let value = base(text) else { return nil }
        return (value, .zero)
    }

    /// Text for a duration as a person reads it (`250ms`, `1.5s`).
    package static func text(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds == seconds.rounded() { return "\(Int(seconds))s" }
        return String(format2: seconds) + "s"
    }
}

/// Requests per interval, across a whole run.
public struct Rate: Sendable, Equatable {
    /// How many requests may start per interval.
    public let count: Int
    /// The interval.
    public let per: Duration

    /// Creates a rate.
    public init(count: Int, per: Duration) {
        self.count = count
        self.per = per
    }

    /// The interval between two requests.
    public var spacing: Duration { per / count }
}

extension Duration {
    /// The duration in seconds as a Double.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// Milliseconds on a coarse monotonic clock: read without a system call, a few milliseconds
/// coarse, which is enough to pace progress lines and journal syncs on every row.
func coarseMilliseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}
