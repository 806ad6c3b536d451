import Foundation

/// A strict RFC 8259 parser over bytes.
package struct JSONParser {
    package let bytes: UnsafeBufferPointer<UInt8>
    package var index = 0
    package let maxDepth: Int
    /// A key on a label's path found twice (`LabelScanner`), thrown once the body is read.
    package var ambiguity: JSONParseError?

    /// Parses one JSON value filling all of `data` (white space around it allowed).
    package static func parse<Bytes: ContiguousBytes>(_ data: Bytes, maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { raw in
            var parser = JSONParser(bytes: raw.bindMemory(to: UInt8.self), maxDepth: maxDepth)
            do {
                parser.skipSpace()
                let value = try parser.value(depth: 0)
                parser.skipSpace()
                guard parser.index == parser.bytes.count else { throw parser.fail("unexpected text after the JSON value") }
                return .success(value)
            } catch let error as JSONParseError {
                return .failure(error)
            } catch {
                return .failure(JSONParseError(reason: "\(error)", offset: 0))
            }
        }
        return try result.get()
    }

    package init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    package func fail(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

    package mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw fail("invalid literal")
        }
        index += count
        return value
    }

    package mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < maxDepth else { throw fail("nesting deeper than \(maxDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            var members: [JSONMember] = []
            var key = ""
            try readObject(name: { parser throws(JSONParseError) in key = try parser.string() },
                           value: { parser throws(JSONParseError) in members.append(JSONMember(key, try parser.value(depth: depth + 1))) })
            return .object(members)
        case UInt8(ascii: "["):
            var items: [JSONValue] = []
            try readArray { parser, _ throws(JSONParseError) in items.append(try parser.value(depth: depth + 1)) }
            return .array(items)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default: return try number()
        }
    }

    /// Reads the object at the cursor (at its `{`) up to its `}`: `name` reads each member's name
    /// (the cursor at its opening quote), then `value` its value (the cursor past the colon).
    @inline(__always)
    package mutating func readObject(name: (inout JSONParser) throws(JSONParseError) -> Void,
                                     value: (inout JSONParser) throws(JSONParseError) -> Void) throws(JSONParseError) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            try name(&self)
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipSpace()
            try value(&self)
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return }
            throw fail("expected ',' or '}'")
        }
    }

    /// Reads the array at the cursor (at its `[`) up to its `]`: `item` reads each item, given
    /// its position.
    @inline(__always)
    package mutating func readArray(item: (inout JSONParser, Int) throws(JSONParseError) -> Void) throws(JSONParseError) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return }
        var position = 0
        while true {
            skipSpace()
            try item(&self, position)
            position += 1
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return }
            throw fail("expected ',' or ']'")
        }
    }

    package func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    package mutating func digits() -> Int {
        let start = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        return index - start
    }

    package mutating func number() throws(JSONParseError) -> JSONValue {
        let start = index
        try skipNumber()
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    /// Moves past a number, checking its syntax.
    package mutating func skipNumber() throws(JSONParseError) {
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid value") }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { _ = digits() }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw fail("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw fail("invalid number") }
        }
    }

    package mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    package mutating func string() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                // ASCII is valid UTF-8: the non-validating initializer is much cheaper per string.
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            ascii = ascii && byte < 0x80
            index += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("unpaired surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        throw fail("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    out.append(contentsOf: String(Character(unicode)).utf8)
                default: throw fail("invalid escape")
                }
            case 0..<0x20: throw fail("control character in a string")
            default:
                out.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }
}

/// Why a body could not be read as JSON. Carries a byte offset, never the body's content.
package struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    package let reason: String
    /// The byte offset of the problem.
    package let offset: Int
    /// The JSON is valid, but a key on a label's path is in its object twice: which value the
    /// label means cannot be told.
    package var ambiguous = false

    package init(reason: String, offset: Int, ambiguous: Bool = false) {
        self.reason = reason
        self.offset = offset
        self.ambiguous = ambiguous
    }

    /// The reason and the byte offset.
    package var description: String { "\(reason) at byte \(offset)" }
}
