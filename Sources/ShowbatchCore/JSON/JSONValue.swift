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
