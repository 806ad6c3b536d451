/// Resolution of plain scalars under the YAML 1.2 core schema.
package enum CoreSchema {
    /// A resolved plain scalar: the type, and the payload for booleans, integers and floats.
    enum Resolved: Equatable {
        /// `bigInt`: an integer beyond 64 bits, read again from its text (`decimalDigits`);
        /// `tooLarge`: a hexadecimal or octal integer beyond 64 bits, which is refused.
        case null, bool(Bool), int(Int), bigInt, tooLarge, float(Double), string
    }

    /// The typed value of a plain scalar's text.
    package static func resolve(_ text: String) -> ScalarValue {
        var text = text
        let resolved = text.withUTF8 { resolve(bytes: $0) }
        switch resolved {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .int(value)
        case .bigInt, .tooLarge: return text.withUTF8 { decimalDigits($0) }.map { .bigInt($0) } ?? .string(text)
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
        if let radix = radixInteger(bytes) {
            let digits = UnsafeBufferPointer(rebasing: bytes[2...])
            // Beyond 64 bits a hexadecimal or octal integer cannot be written exactly in decimal
            // without big arithmetic; it is refused where it is read (`tooLarge`).
            guard let magnitude = unsigned(digits, radix: radix) else { return .tooLarge }
            return magnitude <= UInt64(Int.max) ? .int(Int(magnitude)) : .bigInt
        }
        if isDecimalInteger(bytes) {
            var negative = false
            var digits = bytes
            if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
                negative = bytes[0] == UInt8(ascii: "-")
                digits = UnsafeBufferPointer(rebasing: bytes[1...])
            }
            if let value = integer(digits, negative: negative) { return .int(value) }
            return .bigInt
        }
        if isFloat(bytes), let value = Double(String(decoding: bytes, as: UTF8.self)) { return .float(value) }
        return .string
    }

    /// 16 or 8 when `bytes` is a core-schema hexadecimal (`0x…`) or octal (`0o…`) integer.
    private static func radixInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count > 2, bytes[0] == UInt8(ascii: "0") else { return nil }
        let digits = bytes[2...]
        if bytes[1] == UInt8(ascii: "x"), digits.allSatisfy(isHex) { return 16 }
        if bytes[1] == UInt8(ascii: "o"), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) { return 8 }
        return nil
    }

    /// The exact decimal digits of an integer scalar (`-` first when negative, no leading zeros,
    /// no sign on zero): what JSON is sent for it, and what makes two integer keys the same.
    /// Nil when `bytes` is no integer the core schema reads exactly.
    static func decimalDigits(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if let radix = radixInteger(bytes) {
            return unsigned(UnsafeBufferPointer(rebasing: bytes[2...]), radix: radix).map { String($0) }
        }
        guard isDecimalInteger(bytes) else { return nil }
        let negative = bytes[0] == UInt8(ascii: "-")
        var start = bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") ? 1 : 0
        while start < bytes.count - 1, bytes[start] == UInt8(ascii: "0") { start += 1 }
        let digits = UnsafeBufferPointer(rebasing: bytes[start...])
        let zero = digits.count == 1 && digits[0] == UInt8(ascii: "0")
        return (negative && !zero ? "-" : "") + String(decoding: digits, as: UTF8.self)
    }

    /// The JSON number text of a core-schema number, digit for digit: a sign `+` and leading
    /// zeros dropped, `.5` written `0.5` and `1.` written `1.0`; an integer read as a float (`!!float
    /// 3`) gets `.0`. Nil for infinities and NaN, which JSON cannot hold, and for other text.
    static func jsonNumber(_ bytes: UnsafeBufferPointer<UInt8>, float: Bool) -> String? {
        if let digits = decimalDigits(bytes) {
            guard float else { return digits }
            return (bytes.first == UInt8(ascii: "-") && !digits.hasPrefix("-") ? "-" : "") + digits + ".0"
        }
        guard isFloat(bytes) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 2)
        var index = 0
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            if bytes[0] == UInt8(ascii: "-") { out.append(UInt8(ascii: "-")) }
            index = 1
        }
        // The integer part: leading zeros dropped, at least one digit.
        let integerStart = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        var significant = integerStart
        while significant < index - 1, bytes[significant] == UInt8(ascii: "0") { significant += 1 }
        if significant == index { out.append(UInt8(ascii: "0")) } else { out.append(contentsOf: bytes[significant..<index]) }
        // The fraction: at least one digit after a point.
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            out.append(UInt8(ascii: "."))
            index += 1
            let fractionStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            if fractionStart == index { out.append(UInt8(ascii: "0")) } else { out.append(contentsOf: bytes[fractionStart..<index]) }
        }
        // The exponent is JSON as written (`e`, `E`, a sign, digits).
        out.append(contentsOf: bytes[index...])
        return String(decoding: out, as: UTF8.self)
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

    /// Decimal digits accumulated with overflow checks; nil beyond `Int`.
    private static func integer(_ digits: UnsafeBufferPointer<UInt8>, negative: Bool) -> Int? {
        var value = 0
        for byte in digits {
            let digit = Int(byte - UInt8(ascii: "0"))
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
        }
        return value
    }

    /// Hexadecimal or octal digits as an unsigned magnitude; nil beyond 64 bits.
    private static func unsigned(_ digits: UnsafeBufferPointer<UInt8>, radix: Int) -> UInt64? {
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a")) + 10
            default: digit = UInt64(byte - UInt8(ascii: "A")) + 10
            }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: UInt64(radix))
            let (next, overflow2) = shifted.addingReportingOverflow(digit)
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
