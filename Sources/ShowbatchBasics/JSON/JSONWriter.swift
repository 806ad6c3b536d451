/// Writes compact JSON straight into a byte buffer, with no tree of values built first: output
/// rows, journal lines and request payloads are all written with it, so they escape and separate
/// the same way.
///
/// Commas are placed by the writer: each value, key or container after another in the same
/// container is preceded by one.
package struct JSONWriter {
    /// The bytes written so far (and whatever the buffer held before).
    private(set) var bytes: [UInt8]
    private var needsComma = false

    /// A writer appending to `bytes`.
    package init(bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    /// Lets `body` append to `buffer` through a writer, without copying the buffer.
    package static func append(to buffer: inout [UInt8], _ body: (inout JSONWriter) -> Void) {
        var writer = JSONWriter()
        swap(&writer.bytes, &buffer)
        body(&writer)
        swap(&writer.bytes, &buffer)
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
    }

    /// `{…}`, its members written by `body` with `key` and a value each.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// `[…]`, its items written by `body`.
    package mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member name; the member's value comes next.
    package mutating func key(_ name: String) {
        separate()
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A string.
    package mutating func string(_ text: String) {
        separate()
        appendString(text)
    }

    /// A string, or `null`.
    package mutating func string(_ text: String?) {
        if let text { string(text) } else { null() }
    }

    /// One string made of pieces, each escaped as it is written (a template's expansion).
    package mutating func string(pieces: ((String) -> Void) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        pieces { JSONWriter.appendStringContent($0, to: &bytes) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A number given as its JSON text (kept as written: `1.50` stays `1.50`).
    package mutating func number(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
    }

    /// An integer.
    package mutating func integer(_ value: Int) {
        number(String(value))
    }

    /// An integer, or `null`.
    package mutating func integer(_ value: Int?) {
        if let value { integer(value) } else { null() }
    }

    /// `true` or `false`.
    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// `null`.
    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// A parsed value, written back compactly.
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let text): number(text)
        case .string(let text): string(text)
        case .array(let items): array { writer in for item in items { writer.value(item) } }
        case .object(let members):
            object { writer in
                for member in members {
                    writer.key(member.key)
                    writer.value(member.value)
                }
            }
        }
    }

    private mutating func appendString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendStringContent(text, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped for the inside of a JSON string literal.
    package static func appendStringContent(_ text: String, to out: inout [UInt8]) {
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
