/// How a scalar was written in the source.
public enum ScalarStyle: Sendable, Hashable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// A scalar's value typed by the YAML 1.2 core schema.
public enum ScalarValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)

    /// A short name of the type, for error messages ("a string", "an integer").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .float: return "a number"
        case .string: return "a string"
        }
    }
}

/// A node of a YAML document with the 1-based mark of where it starts.
public struct Node: Sendable {
    /// A scalar with its source text, style, explicit tag and typed value.
    public struct Scalar: Sendable {
        /// The text as libyaml decoded it (quotes and escapes resolved).
        public let text: String
        /// How the scalar was written.
        public let style: ScalarStyle
        /// The explicit tag, if one was written (`!!str`).
        public let tag: String?
        /// The value under the core schema; quoted scalars are always strings.
        public let value: ScalarValue
    }

    /// One key/value entry of a mapping, in source order.
    public struct Pair: Sendable {
        /// The key node.
        public let key: Node
        /// The value node.
        public let value: Node
    }

    /// What the node holds.
    public enum Content: Sendable {
        case scalar(Scalar)
        case sequence([Node])
        case mapping([Pair])
    }

    /// What the node holds.
    public let content: Content
    /// Where the node starts in the source (for an alias: where the alias is written).
    public let mark: Mark
    /// Where the node ends (exclusive).
    public let end: Mark

    /// Creates a node.
    public init(content: Content, mark: Mark, end: Mark? = nil) {
        self.content = content
        self.mark = mark
        self.end = end ?? mark
    }

    /// The source range the node covers.
    public var span: SourceSpan { SourceSpan(start: mark, end: end) }

    /// The scalar, if this node is one.
    public var scalar: Scalar? {
        if case .scalar(let scalar) = content { return scalar }
        return nil
    }

    /// The entries, if this node is a mapping.
    public var mapping: [Pair]? {
        if case .mapping(let pairs) = content { return pairs }
        return nil
    }

    /// The items, if this node is a sequence.
    public var sequence: [Node]? {
        if case .sequence(let items) = content { return items }
        return nil
    }

    /// A short description of the node's type, for "expected X, found Y" errors.
    public var typeName: String {
        switch content {
        case .scalar(let scalar): return scalar.value.typeName
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    /// The same content seen at another mark (an alias is reported where it is used).
    func moved(to mark: Mark, end: Mark) -> Node { Node(content: content, mark: mark, end: end) }
}

/// Resolution of plain scalars under the YAML 1.2 core schema.
public enum CoreSchema {
    /// The typed value of a plain scalar's text.
    public static func resolve(_ text: String) -> ScalarValue {
        // Most scalars are words: only these first characters can start a non-string.
        if let first = text.utf8.first {
            switch first {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                 UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"), UInt8(ascii: "T"),
                 UInt8(ascii: "f"), UInt8(ascii: "F"):
                break
            default:
                return .string(text)
            }
        }
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
        case ".nan", ".NaN", ".NAN": return .float(.nan)
        default: break
        }
        let utf8 = Array(text.utf8)
        guard let first = utf8.first,
              first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || first == UInt8(ascii: ".")
                || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else {
            return .string(text)
        }
        if utf8.count > 2, utf8[0] == UInt8(ascii: "0") {
            if utf8[1] == UInt8(ascii: "x"), let value = Int(text.dropFirst(2), radix: 16),
               utf8.dropFirst(2).allSatisfy(isHex) {
                return .int(value)
            }
            if utf8[1] == UInt8(ascii: "o"), let value = Int(text.dropFirst(2), radix: 8),
               utf8.dropFirst(2).allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                return .int(value)
            }
        }
        if isDecimalInteger(utf8) {
            if let value = Int(text) { return .int(value) }
            return .float(Double(text) ?? 0)
        }
        if isFloat(utf8), let value = Double(text) { return .float(value) }
        return .string(text)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isDecimalInteger(_ bytes: [UInt8]) -> Bool {
        var index = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        guard index < bytes.count else { return false }
        return bytes[index...].allSatisfy(isDigit)
    }

    // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    private static func isFloat(_ bytes: [UInt8]) -> Bool {
        var index = 0
        func digits() -> Int {
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            return index - start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        } else {
            guard digits() > 0 else { return false }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                _ = digits()
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return index == bytes.count
    }
}
