/// Resolution of plain scalars under the YAML 1.2 core schema.
package enum CoreSchema {
    /// A resolved plain scalar: the type, and the payload for booleans, integers and floats.
    enum Resolved: Equatable {
        case null, bool(Bool), int(Int), float(Double), string
    }

    /// The typed value of a plain scalar's text.
    package static func resolve(_ text: String) -> ScalarValue {
        var text = text
        let resolved = text.withUTF8 { resolve(bytes: $0) }
        switch resolved {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .int(value)
        case .float(let value): return .float(value)
        case .string: return .string(text)
        }
    }

    static func resolve(bytes: UnsafeBufferPointer<UInt8>) -> Resolved {
        // Most scalars are words: only these first characters can start a non-string.
        guard let first = bytes.first else { return .null }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
            break
        case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"), UInt8(ascii: "T"),
             UInt8(ascii: "f"), UInt8(ascii: "F"):
            return word(bytes)
        default:
            return .string
        }
        switch String(decoding: bytes, as: UTF8.self) {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
        case ".nan", ".NaN", ".NAN": return .float(.nan)
        default: break
        }
        if bytes.count > 2, bytes[0] == UInt8(ascii: "0") {
            let digits = UnsafeBufferPointer(rebasing: bytes[2...])
            if bytes[1] == UInt8(ascii: "x"), digits.allSatisfy(isHex), let value = integer(digits, radix: 16) {
                return .int(value)
            }
            if bytes[1] == UInt8(ascii: "o"), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }),
               let value = integer(digits, radix: 8) {
                return .int(value)
            }
        }
        if isDecimalInteger(bytes) {
            var negative = false
            var digits = bytes
            if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
                negative = bytes[0] == UInt8(ascii: "-")
                digits = UnsafeBufferPointer(rebasing: bytes[1...])
            }
            if let magnitude = integer(digits, radix: 10, negative: negative) { return .int(magnitude) }
            return .float(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        }
        if isFloat(bytes), let value = Double(String(decoding: bytes, as: UTF8.self)) { return .float(value) }
        return .string
    }

    private static func word(_ bytes: UnsafeBufferPointer<UInt8>) -> Resolved {
        guard bytes.count <= 5 else { return .string }
        switch String(decoding: bytes, as: UTF8.self) {
        case "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default: return .string
        }
    }

    /// Digits in `radix`, accumulated with overflow checks; nil on overflow.
    private static func integer(_ digits: UnsafeBufferPointer<UInt8>, radix: Int, negative: Bool = false) -> Int? {
        var value = 0
        for byte in digits {
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a")) + 10
            default: digit = Int(byte - UInt8(ascii: "A")) + 10
            }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
        }
        return value
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isDecimalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        guard index < bytes.count else { return false }
        return bytes[index...].allSatisfy(isDigit)
    }

    // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    private static func isFloat(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
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
