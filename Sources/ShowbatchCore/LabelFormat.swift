import Foundation

/// A regular-expression replacement applied to a revealed value (SPEC 2.6).
public struct RegexTransform: @unchecked Sendable {
    // NSRegularExpression is immutable once built and safe to share for matching.
    private let regex: NSRegularExpression
    /// The pattern as written.
    public let pattern: String
    /// The replacement template (`$1` refers to the first group).
    public let template: String

    /// Compiles `pattern` (ICU syntax); the error carries ICU's reason.
    public init(pattern: String, template: String) throws(TransformError) {
        do {
            regex = try NSRegularExpression(pattern: pattern)
        } catch {
            throw TransformError(message: "regex '\(pattern)' does not compile")
        }
        self.pattern = pattern
        self.template = template
    }

    /// Replaces every match in `value`.
    public func apply(_ value: String) -> String {
        // NSRange over UTF-16 covers the whole string whatever graphemes precede a match.
        let range = NSRange(location: 0, length: (value as NSString).length)
        return regex.stringByReplacingMatches(in: value, options: [], range: range, withTemplate: template)
    }
}

/// A regular expression that does not compile.
public struct TransformError: Error, Sendable {
    /// What is wrong.
    public let message: String
}

/// Replaces characters of a revealed value with a symbol (SPEC 2.6).
public struct Mask: Sendable, Equatable {
    /// A closed range over Characters; nil bounds mean the start or the end.
    public struct Range: Sendable, Equatable {
        /// The first masked character, nil for 0.
        public var start: Int?
        /// The last masked character, nil for the last one.
        public var end: Int?

        /// Creates a range.
        public init(start: Int?, end: Int?) {
            self.start = start
            self.end = end
        }
    }

    /// The ranges; empty masks everything.
    public var ranges: [Range]
    /// The replacement Character; nil disables the mask (`symbol: ""`).
    public var symbol: Character?

    /// Creates a mask.
    public init(ranges: [Range] = [], symbol: Character? = "*") {
        self.ranges = ranges
        self.symbol = symbol
    }

    /// The masked value.
    public func apply(_ value: String) -> String {
        guard let symbol else { return value }
        var characters = Array(value)
        guard !characters.isEmpty else { return value }
        if ranges.isEmpty {
            return String(repeating: symbol, count: characters.count)
        }
        let last = characters.count - 1
        for range in ranges {
            let start = range.start ?? 0
            var end = range.end ?? last
            // Ranges the SDK ignores: negative bounds, reversed, or starting past the end.
            if start < 0 || end < 0 || start > end || start > last { continue }
            end = min(end, last)
            for index in start...end { characters[index] = symbol }
        }
        return String(characters)
    }
}
