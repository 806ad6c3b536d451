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
        guard number >= 1 else { return nil }
        var current = 1
        var start = 0
        if number > 1 {
            var index = 0
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "\n") {
                    current += 1
                    if current == number {
                        start = index + 1
                        break
                    }
                }
                index += 1
            }
            if current != number { return nil }
        }
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\n"), bytes[end] != UInt8(ascii: "\r") {
            end += 1
        }
        if start > bytes.count { return nil }
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

    /// Creates a diagnostic, quoting the line of `mark` from `source`.
    ///
    /// With `redactFrom`, the quoted line is cut at that column and `<redacted>` stands for the
    /// rest, so that an error about a header or payload value never prints the value.
    public init(source: SourceFile, mark: Mark?, message: String, redactFrom: Int? = nil) {
        self.file = source.name
        self.mark = mark
        self.message = message
        self.sourceLine = mark.flatMap { mark in
            guard var line = source.line(mark.line) else { return nil }
            if let redactFrom {
                line = String(String.UnicodeScalarView(line.unicodeScalars.prefix(max(0, redactFrom - 1)))) + "<redacted>"
            }
            // A binary or minified file can be one enormous line: quote only a readable part.
            let limit = 160
            if line.unicodeScalars.count > limit {
                guard mark.column < limit else { return nil }
                line = String(String.UnicodeScalarView(line.unicodeScalars.prefix(limit))) + "…"
            }
            return line
        }
    }

    /// Creates a diagnostic for a file whose text is not at hand (missing, unreadable).
    public init(file: String, message: String) {
        self.file = file
        self.mark = nil
        self.message = message
        self.sourceLine = nil
    }

    public var description: String {
        guard let mark else { return "\(file): error: \(message)" }
        var text = "\(file):\(mark.line):\(mark.column): error: \(message)"
        if let sourceLine {
            // Tabs stay tabs under the caret so it lines up in any terminal.
            var pad = ""
            for scalar in sourceLine.unicodeScalars.prefix(max(0, mark.column - 1)) {
                pad.append(scalar == "\t" ? "\t" : " ")
            }
            text += "\n  \(sourceLine)\n  \(pad)^"
        }
        return text
    }
}
