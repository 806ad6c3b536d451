import ShowbatchBasics
import ShowbatchManifest

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
                // A byte-order mark some servers put first is no content.
                if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
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
                if let ambiguity = parser.ambiguity { throw ambiguity }
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
            // A key on a path that is there twice fails the row: parsers differ on which value
            // counts, so the revealed one cannot be told.
            var open = ids
            var taken: [Int] = []
            var matches: [Int] = []
            try readObject(name: { parser throws(JSONParseError) in
                if open.isEmpty && taken.isEmpty {
                    matches = []
                    try parser.skipString()
                } else {
                    let start = parser.index
                    let all = try parser.matchingKey(paths, open + taken, level: level)
                    if all.contains(where: taken.contains) {
                        // Said once the whole body is read: a body that is not JSON says that.
                        if parser.ambiguity == nil {
                            var error = JSONParseError(reason: "a key on a label's path is in its object twice, so which value is meant cannot be told", offset: start)
                            error.ambiguous = true
                            parser.ambiguity = error
                        }
                        matches = []
                        return
                    }
                    matches = all
                    if !matches.isEmpty {
                        open.removeAll(where: matches.contains)
                        taken += matches
                    }
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
