/// A JSON value that keeps numbers as their source text and object members in order.
///
/// Numbers stay text so that a revealed `1.50` is written back as `1.50`, not as a rounded double.
package indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The value of the first member named `key`, if this is an object.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Compact JSON text of this value.
    package var compactText: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends compact JSON for this value to `out`.
    package func write(to out: inout [UInt8]) {
        JSONWriter.append(to: &out) { $0.value(self) }
    }
}

/// One member of a JSON object.
package struct JSONMember: Sendable, Equatable {
    /// The member's name.
    package var key: String
    /// The member's value.
    package var value: JSONValue

    /// Creates a member.
    package init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}
