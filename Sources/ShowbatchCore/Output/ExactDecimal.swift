/// A decimal number held exactly (no floating point): what a trailer's `${run.sum.NAME}` adds up.
struct ExactDecimal: Equatable, CustomStringConvertible {
    /// The value times 10^`scale`.
    private(set) var units: Int128
    /// Digits after the point: the most any value added had.
    private(set) var scale: Int

    /// The most digits after the point a value may have.
    static let maxScale = 18

    static let zero = ExactDecimal(units: 0, scale: 0)

    private init(units: Int128, scale: Int) {
        self.units = units
        self.scale = scale
    }

    /// `-12.50`, `7`, `0.125`: an optional minus, digits, and optionally a point and digits;
    /// nil for anything else (an exponent, a plus, thousands separators, spaces) and for a value
    /// too large to be held exactly.
    init?(_ text: Substring) {
        var digits = Array(text.utf8)[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        let point = digits.firstIndex(of: UInt8(ascii: "."))
        let whole = point.map { digits[..<$0] } ?? digits
        let fraction = point.map { digits[digits.index(after: $0)...] } ?? digits[digits.endIndex...]
        guard !whole.isEmpty, point == nil || !fraction.isEmpty, fraction.count <= Self.maxScale,
              (Array(whole) + Array(fraction)).allSatisfy({ (48...57).contains($0) }) else { return nil }
        var units: Int128 = 0
        for byte in Array(whole) + Array(fraction) {
            let (times, overTimes) = units.multipliedReportingOverflow(by: 10)
            let (plus, overPlus) = times.addingReportingOverflow(Int128(byte - 48))
            guard !overTimes, !overPlus else { return nil }
            units = plus
        }
        self.init(units: negative ? -units : units, scale: fraction.count)
    }

    /// The sum, at the larger scale; nil when it is too large to be held exactly.
    func adding(_ other: ExactDecimal) -> ExactDecimal? {
        guard let left = rescaled(to: max(scale, other.scale)), let right = other.rescaled(to: max(scale, other.scale)) else { return nil }
        let (sum, overflow) = left.units.addingReportingOverflow(right.units)
        return overflow ? nil : ExactDecimal(units: sum, scale: left.scale)
    }

    private func rescaled(to wanted: Int) -> ExactDecimal? {
        var units = self.units
        for _ in scale..<wanted {
            let (times, overflow) = units.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            units = times
        }
        return ExactDecimal(units: units, scale: wanted)
    }

    /// `-12.50`: as many digits after the point as `scale`; zero has no sign.
    var description: String {
        let magnitude = units.magnitude
        var digits = String(magnitude)
        if digits.count <= scale { digits = String(repeating: "0", count: scale - digits.count + 1) + digits }
        if scale > 0 { digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -scale)) }
        return (units < 0 ? "-" : "") + digits
    }
}
