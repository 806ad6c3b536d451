import Foundation

/// A JSON value that keeps numbers as their source text and object members in order.
///
/// Numbers stay text so that a revealed `1.50` is written back as `1.50`, not as a rounded double.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The value of the first member named `key`, if this is an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Compact JSON text of this value.
    public var compactText: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends compact JSON for this value to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let text): JSONValue.writeString(text, to: &out)
        case .array(let items): JSONValue.writeArray(items, to: &out) { item, out in item.write(to: &out) }
        case .object(let members): JSONValue.writeObject(members, key: \.key, to: &out) { member, out in member.value.write(to: &out) }
        }
    }

    /// Appends `[item,…]`, each item written by `write`.
    static func writeArray<Items: Sequence>(_ items: Items, to out: inout [UInt8], _ write: (Items.Element, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            write(item, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Appends `{"key":value,…}`, each value written by `write`.
    static func writeObject<Members: Sequence>(_ members: Members, key: (Members.Element) -> String, to out: inout [UInt8],
                                               _ write: (Members.Element, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for member in members {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(key(member), to: &out)
            out.append(UInt8(ascii: ":"))
            write(member, &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends `text` as a JSON string literal to `out`.
    public static func writeString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeStringContent(text, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped for the inside of a JSON string literal.
    static func writeStringContent(_ text: String, to out: inout [UInt8]) {
        // Most strings need no escape: copy them whole.
        let plain = withUTF8(of: text) { bytes in
            if bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain { return }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
    }
}

/// Calls `body` with the UTF-8 bytes of `text`, in place for a native string: iterating
/// `String.UTF8View` goes through an index per byte, which shows in per-row profiles.
@inline(__always)
func withUTF8<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    var text = text
    return try text.withUTF8(body)
}

/// One member of a JSON object.
public struct JSONMember: Sendable, Equatable {
    /// The member's name.
    public var key: String
    /// The member's value.
    public var value: JSONValue

    /// Creates a member.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// Why a body could not be read as JSON. Carries a byte offset, never the body's content.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public let reason: String
    /// The byte offset of the problem.
    public let offset: Int

    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser over bytes.
public struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private let maxDepth: Int

    /// Parses one JSON value filling all of `data` (white space around it allowed).
    public static func parse<Bytes: ContiguousBytes>(_ data: Bytes, maxDepth: Int = 512) throws(JSONParseError) -> JSONValue {
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

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private func fail(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw fail("invalid literal")
        }
        index += count
        return value
    }

    private mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
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
    private mutating func readObject(name: (inout JSONParser) throws(JSONParseError) -> Void,
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
    private mutating func readArray(item: (inout JSONParser, Int) throws(JSONParseError) -> Void) throws(JSONParseError) {
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

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        return index - start
    }

    private mutating func number() throws(JSONParseError) -> JSONValue {
        let start = index
        try skipNumber()
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    /// Moves past a number, checking its syntax.
    private mutating func skipNumber() throws(JSONParseError) {
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

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
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

    private mutating func string() throws(JSONParseError) -> String {
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

// Revealing reads a few values out of every answer. Building the whole document for that costs
// an allocation per string, member and container; this reads the same bytes with the same checks
// and builds only the values the paths lead to.
extension JSONParser {
    /// The values at `paths` in `data`, or nil when `data` is JSON but not an object. The whole
    /// body is checked: an error is the one `parse` would give, at the same offset.
    static func values(at paths: [ContentPath], in data: [UInt8], maxDepth: Int = 512) throws(JSONParseError) -> [JSONValue?]? {
        let result: Result<[JSONValue?]?, JSONParseError> = data.withUnsafeBufferPointer { bytes in
            var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
            do throws(JSONParseError) {
                parser.skipSpace()
                var found = [JSONValue?](repeating: nil, count: paths.count)
                let isObject = parser.index < parser.bytes.count && parser.bytes[parser.index] == UInt8(ascii: "{")
                if isObject {
                    try parser.find(paths, Array(paths.indices), level: 0, depth: 0, into: &found)
                } else {
                    try parser.skipValue(depth: 0)
                }
                parser.skipSpace()
                guard parser.index == parser.bytes.count else { throw parser.fail("unexpected text after the JSON value") }
                return .success(isObject ? found : nil)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads the value at the cursor, recording into `found` what the paths `ids` (which agree
    /// up to `level`) lead to.
    private mutating func find(_ paths: [ContentPath], _ ids: [Int], level: Int, depth: Int,
                               into found: inout [JSONValue?]) throws(JSONParseError) {
        // A path ending here takes the whole value; paths through it then look inside that.
        if ids.contains(where: { paths[$0].segments.count == level }) {
            let value = try value(depth: depth)
            for id in ids { found[id] = paths[id].lookup(in: value, from: level) }
            return
        }
        guard depth < maxDepth else { throw fail("nesting deeper than \(maxDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            // The first member with a name counts, as in `ContentPath.lookup`.
            var open = ids
            var matches: [Int] = []
            try readObject(name: { parser throws(JSONParseError) in
                if open.isEmpty {
                    matches = []
                    try parser.skipString()
                } else {
                    matches = try parser.matchingKey(paths, open, level: level)
                    if !matches.isEmpty { open.removeAll(where: matches.contains) }
                }
            }, value: { parser throws(JSONParseError) in
                if matches.isEmpty {
                    try parser.skipValue(depth: depth + 1)
                } else {
                    try parser.find(paths, matches, level: level + 1, depth: depth + 1, into: &found)
                }
            })
        case UInt8(ascii: "["):
            let wanted = ids.map { (id: $0, index: ContentPath.arrayIndex(paths[$0].segments[level])) }
            try readArray { parser, position throws(JSONParseError) in
                let matches = wanted.filter { $0.index == position }.map(\.id)
                if matches.isEmpty {
                    try parser.skipValue(depth: depth + 1)
                } else {
                    try parser.find(paths, matches, level: level + 1, depth: depth + 1, into: &found)
                }
            }
        default:
            // A scalar: the paths lead nowhere.
            try skipValue(depth: depth)
        }
    }

    /// Reads the member name at the cursor; the paths of `ids` whose segment at `level` it is.
    private mutating func matchingKey(_ paths: [ContentPath], _ ids: [Int], level: Int) throws(JSONParseError) -> [Int] {
        if let end = plainStringEnd() {
            // Plain ASCII: compared as bytes with ASCII segments (a non-ASCII segment can still
            // be canonically equal, so those compare as strings).
            let key = UnsafeBufferPointer(rebasing: bytes[(index + 1)..<end])
            index = end + 1
            return ids.filter { id in
                let segment = paths[id].segments[level]
                if paths[id].isASCII { return withUTF8(of: segment) { $0.elementsEqual(key) } }
                return String(decoding: key, as: UTF8.self) == segment
            }
        }
        let key = try string()
        return ids.filter { paths[$0].segments[level] == key }
    }

    /// The offset of the closing quote of the string at the cursor when it is plain ASCII (no
    /// escapes, control characters or UTF-8), which needs no further checks; nil otherwise.
    private func plainStringEnd() -> Int? {
        var end = index + 1
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { return end }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            end += 1
        }
        return nil
    }

    /// Moves past a string, checking it as `string()` does.
    private mutating func skipString() throws(JSONParseError) {
        if let end = plainStringEnd() {
            index = end + 1
            return
        }
        // Escapes, control characters, UTF-8 or the end of input: the full reader decides.
        _ = try string()
    }

    /// Moves past a value, checking it as `value(depth:)` does, building nothing.
    private mutating func skipValue(depth: Int) throws(JSONParseError) {
        guard depth < maxDepth else { throw fail("nesting deeper than \(maxDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try readObject(name: { parser throws(JSONParseError) in try parser.skipString() },
                           value: { parser throws(JSONParseError) in try parser.skipValue(depth: depth + 1) })
        case UInt8(ascii: "["):
            try readArray { parser, _ throws(JSONParseError) in try parser.skipValue(depth: depth + 1) }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): _ = try expect("true", .null)
        case UInt8(ascii: "f"): _ = try expect("false", .null)
        case UInt8(ascii: "n"): _ = try expect("null", .null)
        default: try skipNumber()
        }
    }
}
