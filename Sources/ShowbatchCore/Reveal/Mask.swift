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
