import Synchronization

/// The text of a file being read, kept so that errors can quote the offending line.
package struct SourceFile: Sendable {
    /// The name printed in diagnostics (the path as the user gave it).
    package let name: String
    /// The raw bytes of the file.
    package let bytes: [UInt8]

    /// Byte offsets where each line starts: found at the first quoted line (a valid manifest never
    /// needs them), then kept, so that a file with thousands of problems does not rescan itself
    /// for every quoted line.
    private let lineIndex = LineIndex()

    /// Wraps bytes read from `name`.
    package init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    /// Wraps a string, as tests and generated manifests do.
    package init(name: String, text: String) {
        self.init(name: name, bytes: Array(text.utf8))
    }

    /// The text of the 1-based line `number`, without its line break; nil past the end.
    package func line(_ number: Int) -> String? {
        guard number >= 1, let start = lineIndex.start(ofLine: number, in: bytes) else { return nil }
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\n"), bytes[end] != UInt8(ascii: "\r") {
            end += 1
        }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The 1-based mark of a byte offset, for errors that libyaml reports by offset only.
    package func mark(ofByteOffset offset: Int) -> Mark {
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
