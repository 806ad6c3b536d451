/// One problem found in a file, rendered as `file:line:col: error: message`, the line and a caret.
package struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    /// The file name as given by the user.
    package let file: String
    /// Where the problem is; nil when it concerns the whole file.
    package let mark: Mark?
    /// What is wrong and what was expected. Never holds a secret value.
    package let message: String
    /// The quoted source line, when the mark points into the file.
    package let sourceLine: String?
    /// The caret's column within the quoted (possibly redacted) line.
    let caretColumn: Int

    /// The most characters of a line an error quotes: a binary or minified file can be one
    /// enormous line, of which only a readable part is shown.
    package static let quoteLimit = 160

    /// Whether a diagnostic at `mark` quotes its line: not past the end of the file, and not
    /// when the caret would fall beyond the part of a long line that is shown.
    package static func quotesLine(of mark: Mark, in source: SourceFile) -> Bool {
        guard let window = source.lineWindow(mark.line, limit: quoteLimit) else { return false }
        return !window.truncated || mark.column < quoteLimit
    }

    /// Creates a diagnostic, quoting the line of `mark` from `source`.
    ///
    /// Parts of the line inside `redacting` spans (header and payload values) are shown as
    /// `<redacted>`, so that an error never prints a secret even when it points next to one. Only
    /// the part of the line that is shown is read and redacted, however long the line.
    package init(source: SourceFile, mark: Mark?, message: String, redacting spans: [SourceSpan] = []) {
        self.file = source.name
        self.message = message
        self.mark = mark
        let limit = Diagnostic.quoteLimit
        guard let mark, let window = source.lineWindow(mark.line, limit: limit), !window.truncated || mark.column < limit else {
            self.sourceLine = nil
            self.caretColumn = mark?.column ?? 1
            return
        }
        var scalars = window.scalars
        var caret = mark.column
        // Replace right to left so earlier columns stay valid; a span running past the shown
        // part is cut with it.
        let cuts = spans.compactMap { $0.columns(onLine: mark.line, lineLength: scalars.count) }
            .filter { $0.lowerBound <= scalars.count }
            .sorted { $0.lowerBound > $1.lowerBound }
        var lastStart = Int.max
        for cut in cuts where cut.upperBound <= lastStart {
            let replacement = Array("<redacted>".unicodeScalars)
            let lower = cut.lowerBound - 1, upper = min(cut.upperBound - 1, scalars.count)
            guard lower < upper else { continue }
            scalars.replaceSubrange(lower..<upper, with: replacement)
            if caret > cut.lowerBound {
                caret = caret >= cut.upperBound ? caret + replacement.count - (upper - lower) : cut.lowerBound
            }
            lastStart = cut.lowerBound
        }
        if window.truncated { scalars.append("…") }
        var line = String.UnicodeScalarView()
        line.append(contentsOf: scalars)
        self.sourceLine = String(line)
        self.caretColumn = caret
    }

    /// Creates a diagnostic for a file whose text is not at hand (missing, unreadable).
    package init(file: String, message: String) {
        self.file = file
        self.mark = nil
        self.message = message
        self.sourceLine = nil
        self.caretColumn = 1
    }

    /// `file:line:col: error: message`, then the quoted line and a caret under the column.
    package var description: String {
        guard let mark else { return "\(file): error: \(message)" }
        var text = "\(file):\(mark.line):\(mark.column): error: \(message)"
        if let sourceLine {
            // Tabs stay tabs under the caret so it lines up in any terminal.
            var pad = ""
            for scalar in sourceLine.unicodeScalars.prefix(max(0, caretColumn - 1)) {
                pad.append(scalar == "\t" ? "\t" : " ")
            }
            text += "\n  \(sourceLine)\n  \(pad)^"
        }
        return text
    }
}
