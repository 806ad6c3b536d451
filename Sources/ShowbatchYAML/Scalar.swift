/// How a scalar was written in the source.
package enum ScalarStyle: UInt8, Sendable, Hashable {
    case plain, singleQuoted, doubleQuoted, literal, folded
}

/// A scalar's value typed by the YAML 1.2 core schema.
package enum ScalarValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    /// An integer beyond 64 bits, as its exact decimal digits (`-` and digits, no leading zeros).
    case bigInt(String)
    case float(Double)
    case string(String)

    /// A short name of the type, for error messages ("a string", "an integer").
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .bigInt: return "an integer"
        case .float: return "a number"
        case .string: return "a string"
        }
    }
}

/// The explicit tags a scalar may carry; any other tag is rejected while parsing. `!!merge`
/// marks a `<<` merge key.
package enum ScalarTag: UInt8, Sendable {
    case nonSpecific, str, null, bool, int, float, merge

    /// The tag's full name as YAML spells it.
    package var name: String {
        switch self {
        case .nonSpecific: return "!"
        case .str: return "tag:yaml.org,2002:str"
        case .null: return "tag:yaml.org,2002:null"
        case .bool: return "tag:yaml.org,2002:bool"
        case .int: return "tag:yaml.org,2002:int"
        case .float: return "tag:yaml.org,2002:float"
        case .merge: return "tag:yaml.org,2002:merge"
        }
    }
}
