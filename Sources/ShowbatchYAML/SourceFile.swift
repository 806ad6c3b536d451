import Synchronization

/// The text of a file being read, kept so that errors can quote the offending line.
package struct SourceFile: Sendable {
    /// The name printed in diagnostics (the path as the user gave it).
    package let name: String
    /// The raw bytes of the file.
    package let bytes: [UInt8]
    /// Where the text starts: after a UTF-8 byte order mark, which is no part of the first line
    /// (libyaml, told the encoding, would read it as a character and shift the first key).
    package let contentStart: Int

    /// Byte offsets where each line starts: found at the first quoted line (a valid manifest never
    /// needs them), then kept, so that a file with thousands of problems does not rescan itself
    /// for every quoted line.
    private let lineIndex = LineIndex()

    /// Wraps bytes read from `name`.
    package init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
        contentStart = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    }

    /// Wraps a string, as tests and generated manifests do.
    package init(name: String, text: String) {
        self.init(name: name, bytes: Array(text.utf8))
    }

    /// The text of the 1-based line `number`, without its line break; nil past the end. Lines are
    /// numbered as libyaml numbers them, so that a mark and its quoted line always agree.
    package func line(_ number: Int) -> String? {
        guard let start = start(ofLine: number) else { return nil }
        return String(decoding: bytes[start..<end(ofLineAt: start)], as: UTF8.self)
    }

    /// The first `limit` characters (Unicode scalars) of line `number`, and whether the line has
    /// more: the part of a line an error may quote, found without reading the rest of a line
    /// that may be megabytes long. Nil past the end.
    package func lineWindow(_ number: Int, limit: Int) -> (scalars: [Unicode.Scalar], truncated: Bool)? {
        guard let start = start(ofLine: number) else { return nil }
        // Bytes enough for `limit` scalars and one more, which tells a longer line.
        var end = start
        var count = 0
        while end < bytes.count, SourceFile.lineBreak(at: end, in: bytes) == 0, count <= limit {
            end += 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
            count += 1
        }
        var scalars = Array(String(decoding: bytes[start..<end], as: UTF8.self).unicodeScalars)
        let truncated = scalars.count > limit
        if truncated { scalars.removeLast(scalars.count - limit) }
        return (scalars, truncated)
    }

    /// The number of spaces that start line `number` (0 past the end).
    package func indentation(ofLine number: Int) -> Int {
        guard var index = start(ofLine: number) else { return 0 }
        let start = index
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        return index - start
    }

    /// The byte offset where 1-based line `number` starts; nil past the end.
    func start(ofLine number: Int) -> Int? {
        guard number >= 1 else { return nil }
        return lineIndex.start(ofLine: number, in: bytes, from: contentStart)
    }

    private func end(ofLineAt start: Int) -> Int {
        var end = start
        while end < bytes.count, SourceFile.lineBreak(at: end, in: bytes) == 0 {
            end += 1
        }
        return end
    }

    /// The length in bytes of the line break at `index`, or 0 when there is none. libyaml breaks
    /// lines at LF, CR, CR LF, NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR
    /// (U+2029); counting only LF would quote another line than the one a mark is on.
    static func lineBreak(at index: Int, in bytes: [UInt8]) -> Int {
        switch bytes[index] {
        case 0x0A: return 1
        case 0x0D: return index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
        case 0xC2: return index + 1 < bytes.count && bytes[index + 1] == 0x85 ? 2 : 0
        case 0xE2:
            return index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9) ? 3 : 0
        default: return 0
        }
    }

    /// The 1-based mark of a byte offset in `bytes`, for errors that libyaml reports by offset only.
    package func mark(ofByteOffset offset: Int) -> Mark {
        var line = 1
        var column = 1
        var index = contentStart
        let limit = min(offset, bytes.count)
        while index < limit {
            let length = SourceFile.lineBreak(at: index, in: bytes)
            if length > 0 {
                line += 1
                column = 1
                index += length
                continue
            }
            if bytes[index] & 0xC0 != 0x80 { column += 1 }
            index += 1
        }
        return Mark(line: line, column: column)
    }
}

/// Line starts of a source, found once on first use.
private final class LineIndex: Sendable {
    private let starts = Mutex<[Int]?>(nil)

    /// The byte offset where 1-based line `number` starts; nil past the end.
    func start(ofLine number: Int, in bytes: [UInt8], from first: Int) -> Int? {
        starts.withLock { starts in
            if starts == nil {
                var found = [first]
                var index = first
                while index < bytes.count {
                    let length = SourceFile.lineBreak(at: index, in: bytes)
                    index += max(length, 1)
                    if length > 0 { found.append(index) }
                }
                starts = found
            }
            return number <= starts!.count ? starts![number - 1] : nil
        }
    }
}
