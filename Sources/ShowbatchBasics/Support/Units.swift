import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Parsing of durations (`500ms`, `30s`, `2m`, plain seconds); rates (`50/s`) are with `Rate`.
package enum Units {
    /// Why a text is not a duration showbatch accepts.
    package enum DurationError: Error, Equatable {
        /// Not a number with an optional unit (`500ms`, `30s`, `2m`, `1h`).
        case malformed
        /// A duration, but outside `durationRange`.
        case outOfRange
    }

    /// The durations showbatch accepts: from a millisecond to a day. A larger one would not fit
    /// the clocks' 64-bit nanoseconds (about 292 years), and no timeout or backoff needs more.
    package static let durationRange: ClosedRange<Duration> = .milliseconds(1)...(.seconds(86_400))
    /// `durationRange` as a person reads it.
    package static let durationRangeText = "from 1ms to 24h"

    /// A duration from text; nil when it is not one or not in `durationRange`.
    package static func duration(_ text: String) -> Duration? {
        try? parseDuration(text).get()
    }

    /// A duration from text: a positive number of seconds, or a number with `ms`, `s`, `m` or `h`.
    package static func parseDuration(_ text: String) -> Result<Duration, DurationError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var number = Substring(trimmed)
        var unit = 1.0
        for (suffix, seconds) in [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)] where trimmed.hasSuffix(suffix) {
            number = trimmed.dropLast(suffix.count)
            unit = seconds
            break
        }
        guard let value = Double(number), value.isFinite, value > 0, number.first != "+",
              number.allSatisfy({ $0.isNumber || $0 == "." }) else { return .failure(.malformed) }
        let seconds = value * unit
        // Compared as seconds before any conversion: a huge value must never reach Duration.
        guard seconds >= 0.001 && seconds <= 86_400 else { return .failure(.outOfRange) }
        return .success(self.seconds(seconds))
    }

    /// A duration of `value` seconds, saturating at what a Duration can hold.
    package static func seconds(_ value: Double) -> Duration {
        let nanoseconds = (value * 1e9).rounded()
        guard nanoseconds < 9.2e18 else { return .nanoseconds(Int64.max) }
        guard nanoseconds > -9.2e18 else { return .nanoseconds(Int64.min) }
        return .nanoseconds(Int64(nanoseconds))
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

    /// Text for a duration as a person reads it (`250ms`, `1.5s`, `90s`, `13h`, `1h 30m`).
    package static func text(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        // `46800s` is a sum to do; an hour or more is said in hours, to the second.
        if seconds >= 3600 {
            let whole = seconds >= 9.2e18 ? Int.max : Int(seconds.rounded())
            let (hours, rest) = whole.quotientAndRemainder(dividingBy: 3600)
            let (minutes, secs) = rest.quotientAndRemainder(dividingBy: 60)
            return "\(hours)h" + (rest > 0 ? " \(minutes)m" : "") + (secs > 0 ? " \(secs)s" : "")
        }
        if seconds == seconds.rounded() { return "\(Int(seconds))s" }
        return String(format2: seconds) + "s"
    }
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
package func coarseMilliseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}
