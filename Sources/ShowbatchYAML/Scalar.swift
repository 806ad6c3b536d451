/// How a scalar was written in the source.
package enum ScalarStyle: UInt8, Sendable, Hashable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// A scalar's value typed by the YAML 1.2 core schema.
package enum ScalarValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)

    /// A short name of the type, for error messages ("a string", "an integer").
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int: return "an integer"
        case .float: return "a number"
        case .string: return "a string"
        }
    }
}

/// The explicit tags a scalar may carry; any other tag is rejected while parsing.
package enum ScalarTag: UInt8, Sendable {
    case nonSpecific, str, null, bool, int, float

    /// The tag's full name as YAML spells it.
    package var name: String {
        switch self {
        case .nonSpecific: return "!"
        case .str: return "tag:yaml.org,2002:str"
        case .null: return "tag:yaml.org,2002:null"
        case .bool: return "tag:yaml.org,2002:bool"
        case .int: return "tag:yaml.org,2002:int"
        case .float: return "tag:yaml.org,2002:float"
        }
    }
}
