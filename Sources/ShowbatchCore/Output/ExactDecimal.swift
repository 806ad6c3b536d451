/// A decimal number held exactly, however large (no floating point, no overflow): what a
/// trailer's `${run.sum.NAME}` adds up.
struct ExactDecimal: Equatable, CustomStringConvertible {
    /// The magnitude times 10^`scale`, in base 10^9 digits, least significant first, no
    /// leading zero digit (zero is empty).
    private var magnitude: [UInt32]
    private var negative: Bool
    /// Digits after the point: the most any value added had.
    private(set) var scale: Int

    /// The most digits after the point a value may have.
    static let maxScale = 18
    private static let base: UInt64 = 1_000_000_000

    static let zero = ExactDecimal(magnitude: [], negative: false, scale: 0)

    private init(magnitude: [UInt32], negative: Bool, scale: Int) {
        self.magnitude = magnitude
        self.negative = negative && !magnitude.isEmpty
        self.scale = scale
    }

    /// `-12.50`, `7`, `0.125`: an optional minus, digits, and optionally a point and at most
    /// `maxScale` digits; nil for anything else (an exponent, a plus, thousands separators,
    /// spaces).
    init?(_ text: Substring) {
        var bytes = Array(text.utf8)[...]
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { bytes = bytes.dropFirst() }
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let whole = point.map { bytes[..<$0] } ?? bytes
        let fraction = point.map { bytes[bytes.index(after: $0)...] } ?? bytes[bytes.endIndex...]
        let digits = Array(whole) + Array(fraction)
        guard !whole.isEmpty, point == nil || !fraction.isEmpty, fraction.count <= Self.maxScale,
              digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        // Base 10^9 digits from the right.
        var magnitude: [UInt32] = []
        var end = digits.count
        while end > 0 {
            let start = max(0, end - 9)
            var value: UInt32 = 0
            for byte in digits[start..<end] { value = value * 10 + UInt32(byte - 48) }
            magnitude.append(value)
            end = start
        }
        self.init(magnitude: Self.trimmed(magnitude), negative: negative, scale: fraction.count)
    }

    /// The sum, at the larger scale.
    func adding(_ other: ExactDecimal) -> ExactDecimal {
        let scale = max(self.scale, other.scale)
        let left = Self.times10(magnitude, scale - self.scale), right = Self.times10(other.magnitude, scale - other.scale)
        if negative == other.negative { return ExactDecimal(magnitude: Self.add(left, right), negative: negative, scale: scale) }
        // Opposite signs: the larger magnitude keeps its sign.
        if Self.compare(left, right) >= 0 { return ExactDecimal(magnitude: Self.subtract(left, right), negative: negative, scale: scale) }
        return ExactDecimal(magnitude: Self.subtract(right, left), negative: other.negative, scale: scale)
    }

    /// `-12.50`: as many digits after the point as `scale`; zero has no sign.
    var description: String {
        var digits = magnitude.last.map { String($0) } ?? "0"
        for digit in magnitude.dropLast().reversed() {
            let text = String(digit)
            digits += String(repeating: "0", count: 9 - text.count) + text
        }
        if digits.count <= scale { digits = String(repeating: "0", count: scale - digits.count + 1) + digits }
        if scale > 0 { digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -scale)) }
        return (negative ? "-" : "") + digits
    }

    private static func trimmed(_ digits: [UInt32]) -> [UInt32] {
        var digits = digits
        while digits.last == 0 { digits.removeLast() }
        return digits
    }

    private static func add(_ left: [UInt32], _ right: [UInt32]) -> [UInt32] {
        var out: [UInt32] = []
        var carry: UInt64 = 0
        for index in 0..<max(left.count, right.count) {
            let sum = UInt64(index < left.count ? left[index] : 0) + UInt64(index < right.count ? right[index] : 0) + carry
            out.append(UInt32(sum % base))
            carry = sum / base
        }
        if carry > 0 { out.append(UInt32(carry)) }
        return out
    }

    /// `left - right`, for `left >= right`.
    private static func subtract(_ left: [UInt32], _ right: [UInt32]) -> [UInt32] {
        var out: [UInt32] = []
        var borrow: Int64 = 0
        for index in 0..<left.count {
            var difference = Int64(left[index]) - Int64(index < right.count ? right[index] : 0) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += Int64(base) }
            out.append(UInt32(difference))
        }
        return trimmed(out)
    }

    private static func compare(_ left: [UInt32], _ right: [UInt32]) -> Int {
        if left.count != right.count { return left.count < right.count ? -1 : 1 }
        for index in left.indices.reversed() where left[index] != right[index] { return left[index] < right[index] ? -1 : 1 }
        return 0
    }

    /// `digits` times 10^`power`.
    private static func times10(_ digits: [UInt32], _ power: Int) -> [UInt32] {
        guard power > 0, !digits.isEmpty else { return digits }
        var out = digits
        var left = power
        while left > 0 {
            let step = min(left, 9)
            var factor: UInt64 = 1
            for _ in 0..<step { factor *= 10 }
            var carry: UInt64 = 0
            for index in out.indices {
                let product = UInt64(out[index]) * factor + carry
                out[index] = UInt32(product % base)
                carry = product / base
            }
            if carry > 0 { out.append(UInt32(carry)) }
            left -= step
        }
        return out
    }
}
