import Foundation
import ShowbatchBasics

/// A dot-separated path into a JSON response (`card_data.card_number`, `cards.0.number`, `a\.b`).
package struct ContentPath: Sendable, Equatable, CustomStringConvertible {
    /// The segments, with `\.` already unescaped.
    package let segments: [String]
    /// The path as written.
    package let text: String
    /// True when the path is ASCII: its segments then compare with a response's plain member
    /// names as bytes (others compare as strings, by canonical equivalence).
    package let isASCII: Bool

    /// The path of one member, `name` (a dot in it is part of the name).
    package init(member name: String) {
        segments = [name]
        text = name.replacingOccurrences(of: ".", with: "\\.")
        isASCII = name.utf8.allSatisfy { $0 < 0x80 }
    }

    /// Parses a content path; the error says what is wrong with it.
    package init(parsing text: String) throws(ContentPathError) {
        guard let firstByte = text.utf8.first, let lastByte = text.utf8.last else {
            throw ContentPathError(message: "content path is empty")
        }
        // ASCII ends are checked by byte; only other characters need Character's white-space rules.
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        if isSpace(firstByte) || isSpace(lastByte)
            || (firstByte >= 0x80 && text.first!.isWhitespace) || (lastByte >= 0x80 && text.last!.isWhitespace) {
            throw ContentPathError(message: "content path \"\(text)\" has leading or trailing white space")
        }
        // Without escapes (the usual case) the bytes are split at dots.
        let (segments, isASCII) = withUTF8(of: text) { bytes -> ([String], Bool) in
            let isASCII = bytes.allSatisfy { $0 < 0x80 }
            if bytes.contains(UInt8(ascii: "\\")) { return (Self.unescapedSegments(text), isASCII) }
            var segments: [String] = []
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: ".") {
                segments.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            return (segments, isASCII)
        }
        if segments.contains(where: \.isEmpty) {
            throw ContentPathError(message: "content path \"\(text)\" has an empty segment")
        }
        self.segments = segments
        self.text = text
        self.isASCII = isASCII
    }

    /// The segments of a path with `\.` escapes, unescaped.
    private static func unescapedSegments(_ text: String) -> [String] {
        var segments: [String] = []
        var current = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if character == "\\" {
                if let next = iterator.next() {
                    if next == "." { current.append(".") } else { current.append("\\"); current.append(next) }
                } else {
                    current.append("\\")
                }
            } else if character == "." {
                segments.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        segments.append(current)
        return segments
    }

    /// The value at this path, or nil when a key is missing or an index is out of range.
    package func lookup(in root: JSONValue) -> JSONValue? { lookup(in: root, from: 0) }

    /// The value at the path's segments from `level` on, looked up in `root`.
    package func lookup(in root: JSONValue, from level: Int) -> JSONValue? {
        var current = root
        for segment in segments[level...] {
            switch current {
            case .object(let members):
                guard let member = members.first(where: { $0.key == segment }) else { return nil }
                current = member.value
            case .array(let items):
                guard let index = ContentPath.arrayIndex(segment), index < items.count else { return nil }
                current = items[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The array index a segment names: ASCII digits (an optional `+`), nil for anything else.
    package static func arrayIndex(_ segment: String) -> Int? {
        guard let index = Int(segment), index >= 0, segment.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        return index
    }

    /// The path as written.
    package var description: String { text }
}

/// A content path that does not parse.
package struct ContentPathError: Error, Sendable {
    /// What is wrong.
    package let message: String
}
