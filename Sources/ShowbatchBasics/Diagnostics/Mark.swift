/// A 1-based position in a source file.
package struct Mark: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 1-based line.
    package let line: Int
    /// The 1-based column, counted in Unicode scalars as libyaml counts them.
    package let column: Int

    /// Creates a mark from 1-based line and column numbers.
    package init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// Source order: by line, then column.
    package static func < (lhs: Mark, rhs: Mark) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    /// `line:column`.
    package var description: String { "\(line):\(column)" }
}

/// A range of source text between two marks (end exclusive).
package struct SourceSpan: Sendable, Hashable {
    /// The first character.
    package let start: Mark
    /// Just past the last character.
    package let end: Mark

    /// Creates a span.
    package init(start: Mark, end: Mark) {
        self.start = start
        self.end = end
    }

    /// The columns the span covers on `line` (1-based, end exclusive), if any.
    package func columns(onLine line: Int, lineLength: Int) -> Range<Int>? {
        guard start.line <= line, end.line >= line else { return nil }
        let lower = start.line == line ? start.column : 1
        let upper = end.line == line ? end.column : lineLength + 1
        return lower < upper ? lower..<upper : nil
    }
}
