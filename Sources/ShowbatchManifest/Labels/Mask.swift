import ShowbatchBasics
/// Replaces characters of a revealed value with a symbol, as the Show SDKs mask it.
package struct Mask: Sendable, Equatable {
    /// A closed range over Characters; nil bounds mean the start or the end.
    package struct Range: Sendable, Equatable {
        /// The first masked character, nil for 0.
        package var start: Int?
        /// The last masked character, nil for the last one.
        package var end: Int?

        /// Creates a range.
        package init(start: Int?, end: Int?) {
            self.start = start
            self.end = end
        }
    }

    /// The ranges; empty masks everything.
    package var ranges: [Range]
    /// The replacement Character; nil disables the mask (`symbol: ""`).
    package var symbol: Character?

    /// Creates a mask.
    package init(ranges: [Range] = [], symbol: Character? = "*") {
        self.ranges = ranges
        self.symbol = symbol
    }

    /// The masked value.
    package func apply(_ value: String) -> String {
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
