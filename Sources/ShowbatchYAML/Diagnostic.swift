import Synchronization

/// A 1-based position in a source file.
public struct Mark: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 1-based line.
    public let line: Int
    /// The 1-based column, counted in Unicode scalars as libyaml counts them.
    public let column: Int

    /// Creates a mark from 1-based line and column numbers.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public static func < (lhs: Mark, rhs: Mark) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    public var description: String { "\(line):\(column)" }
}

/// The text of a file being read, kept so that errors can quote the offending line.
public struct SourceFile: Sendable {
    /// The name printed in diagnostics (the path as the user gave it).
    public let name: String
    /// The raw bytes of the file.
    public let bytes: [UInt8]

    /// Byte offsets where each line starts: found at the first quoted line (a valid manifest never
    /// needs them), then kept, so that a file with thousands of problems does not rescan itself
    /// for every quoted line.
    private let lineIndex = LineIndex()

    /// Wraps bytes read from `name`.
    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    /// Wraps a string, as tests and generated manifests do.
    public init(name: String, text: String) {
        self.init(name: name, bytes: Array(text.utf8))
    }

    /// The text of the 1-based line `number`, without its line break; nil past the end.
    public func line(_ number: Int) -> String? {
        guard number >= 1, let start = lineIndex.start(ofLine: number, in: bytes) else { return nil }
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\n"), bytes[end] != UInt8(ascii: "\r") {
            end += 1
        }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The 1-based mark of a byte offset, for errors that libyaml reports by offset only.
    public func mark(ofByteOffset offset: Int) -> Mark {
        var line = 1
        var column = 1
        var index = 0
        let limit = min(offset, bytes.count)
        while index < limit {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return Mark(line: line, column: column)
    }
}

/// Line starts of a source, found once on first use.
private final class LineIndex: Sendable {
    private let starts = Mutex<[Int]?>(nil)

    /// The byte offset where 1-based line `number` starts; nil past the end.
    func start(ofLine number: Int, in bytes: [UInt8]) -> Int? {
        starts.withLock { starts in
            if starts == nil {
                var found = [0]
                for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") { found.append(index + 1) }
                starts = found
            }
            return number <= starts!.count ? starts![number - 1] : nil
        }
    }
}

/// One problem found in a file, rendered as `file:line:col: error: message`, the line and a caret.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    /// The file name as given by the user.
    public let file: String
    /// Where the problem is; nil when it concerns the whole file.
    public let mark: Mark?
    /// What is wrong and what was expected. Never holds a secret value.
    public let message: String
    /// The quoted source line, when the mark points into the file.
    public let sourceLine: String?
    /// The caret's column within the quoted (possibly redacted) line.
    let caretColumn: Int

    /// Creates a diagnostic, quoting the line of `mark` from `source`.
    ///
    /// Parts of the line inside `redacting` spans (header and payload values) are shown as
    /// `<redacted>`, so that an error never prints a secret even when it points next to one.
    public init(source: SourceFile, mark: Mark?, message: String, redacting spans: [SourceSpan] = []) {
        self.file = source.name
        self.message = message
        guard let mark, let text = source.line(mark.line) else {
            self.mark = mark
            self.sourceLine = nil
            self.caretColumn = mark?.column ?? 1
            return
        }
        self.mark = mark
        var scalars = Array(text.unicodeScalars)
        var caret = mark.column
        // Replace right to left so earlier columns stay valid.
        let cuts = spans.compactMap { $0.columns(onLine: mark.line, lineLength: scalars.count) }
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
        // A binary or minified file can be one enormous line: quote only a readable part.
        let limit = 160
        if scalars.count > limit {
            guard caret < limit else {
                self.sourceLine = nil
                self.caretColumn = caret
                return
            }
            scalars = Array(scalars.prefix(limit)) + ["…"]
        }
        var line = String.UnicodeScalarView()
        line.append(contentsOf: scalars)
        self.sourceLine = String(line)
        self.caretColumn = caret
    }

    /// Creates a diagnostic for a file whose text is not at hand (missing, unreadable).
    public init(file: String, message: String) {
        self.file = file
        self.mark = nil
        self.message = message
        self.sourceLine = nil
        self.caretColumn = 1
    }

    public var description: String {
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

/// A range of source text between two marks (end exclusive).
public struct SourceSpan: Sendable, Hashable {
    /// The first character.
    public let start: Mark
    /// Just past the last character.
    public let end: Mark

    /// Creates a span.
    public init(start: Mark, end: Mark) {
        self.start = start
        self.end = end
    }

    /// The columns the span covers on `line` (1-based, end exclusive), if any.
    func columns(onLine line: Int, lineLength: Int) -> Range<Int>? {
        guard start.line <= line, end.line >= line else { return nil }
        let lower = start.line == line ? start.column : 1
        let upper = end.line == line ? end.column : lineLength + 1
        return lower < upper ? lower..<upper : nil
    }
}
