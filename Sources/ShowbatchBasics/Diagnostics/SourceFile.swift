import Foundation
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

    /// Whether every byte is ASCII: then characters and bytes are one, and libyaml's character
    /// positions are byte offsets.
    package var isASCII: Bool { lineIndex.isASCII(bytes) }

    /// The 1-based mark of byte offset `offset` (at most the size of the file), as libyaml
    /// counts lines and columns. Marks asked for in order on one long line are counted on from
    /// the one before, so that they cost the distance between them.
    package func mark(atOffset offset: Int) -> Mark {
        lineIndex.mark(atOffset: offset, in: bytes, from: contentStart)
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
        mark(atOffset: min(offset, bytes.count))
    }
}

/// Line starts of a source, found once on first use, and what marks are worked out with.
private final class LineIndex: Sendable {
    private struct State {
        var starts: [UInt32]?
        var ascii: Bool?
        /// The mark worked out last, to count on from.
        var last = (offset: 0, line: 0, column: 0)
        /// The index of the line of the mark worked out last.
        var hint = 0
    }

    private let state = Mutex(State())

    func isASCII(_ bytes: [UInt8]) -> Bool {
        state.withLock { state in LineIndex.ascii(&state, bytes) }
    }

    /// The byte offset where 1-based line `number` starts; nil past the end.
    func start(ofLine number: Int, in bytes: [UInt8], from first: Int) -> Int? {
        state.withLock { state in
            let starts = LineIndex.starts(&state, bytes, from: first)
            return number <= starts.count ? Int(starts[number - 1]) : nil
        }
    }

    func mark(atOffset offset: Int, in bytes: [UInt8], from first: Int) -> Mark {
        state.withLock { state in
            let starts = LineIndex.starts(&state, bytes, from: first)
            // The last line that starts at or before the offset: the line of the mark before, or
            // the one after it, when marks are asked for in order; else a binary search.
            var low = 0, high = starts.count - 1
            let hint = state.hint
            if hint < starts.count, Int(starts[hint]) <= offset {
                if hint + 1 == starts.count || offset < Int(starts[hint + 1]) {
                    low = hint
                    high = hint
                } else if hint + 2 == starts.count || offset < Int(starts[hint + 2]) {
                    low = hint + 1
                    high = hint + 1
                } else {
                    low = hint
                }
            }
            while low < high {
                let middle = (low + high + 1) / 2
                if Int(starts[middle]) <= offset { low = middle } else { high = middle - 1 }
            }
            state.hint = low
            let lineStart = Int(starts[low])
            if LineIndex.ascii(&state, bytes) { return Mark(line: low + 1, column: max(offset - lineStart, 0) + 1) }
            // Characters from the line's start, or from the last mark when it is before on this line.
            var index = lineStart, column = 1
            if state.last.line == low + 1, state.last.offset <= offset, state.last.offset >= lineStart {
                index = state.last.offset
                column = state.last.column
            }
            while index < offset && index < bytes.count {
                if bytes[index] & 0xC0 != 0x80 { column += 1 }
                index += 1
            }
            state.last = (offset, low + 1, column)
            return Mark(line: low + 1, column: column)
        }
    }

    private static func ascii(_ state: inout State, _ bytes: [UInt8]) -> Bool {
        if let ascii = state.ascii { return ascii }
        // Eight bytes at a time.
        let ascii = bytes.withUnsafeBytes { raw -> Bool in
            var index = 0
            var any: UInt64 = 0
            while index + 8 <= raw.count {
                any |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < raw.count {
                any |= UInt64(raw[index])
                index += 1
            }
            return any & 0x8080_8080_8080_8080 == 0
        }
        state.ascii = ascii
        return ascii
    }

    private static func starts(_ state: inout State, _ bytes: [UInt8], from first: Int) -> [UInt32] {
        if let starts = state.starts { return starts }
        var found: [UInt32] = [UInt32(first)]
        let carriageReturn = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.map { memchr($0, 0x0D, buffer.count) != nil } ?? false
        }
        if ascii(&state, bytes) && !carriageReturn {
            // Only LF breaks lines: found with memchr.
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                var index = first
                while index < buffer.count, let hit = memchr(base + index, 0x0A, buffer.count - index) {
                    index = base.distance(to: hit.assumingMemoryBound(to: UInt8.self)) + 1
                    found.append(UInt32(index))
                }
            }
        } else {
            var index = first
            while index < bytes.count {
                let length = SourceFile.lineBreak(at: index, in: bytes)
                index += max(length, 1)
                if length > 0 { found.append(UInt32(index)) }
            }
        }
        state.starts = found
        return found
    }
}
