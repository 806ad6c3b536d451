import Foundation
import ShowbatchBasics

/// What a label's value must look like (`expect`): a pattern the whole value matches, and the
/// Luhn check of a card number. An alias the proxy does not know comes back unchanged with a 2xx,
/// so without it such a row would be `ok` with the alias in the cell.
package struct LabelExpectation: Sendable {
    /// The pattern the whole value must match, if any.
    package var pattern: ExpectedPattern?
    /// Whether the value must pass the Luhn check.
    package var luhn = false

    /// Creates an expectation.
    package init(pattern: ExpectedPattern? = nil, luhn: Bool = false) {
        self.pattern = pattern
        self.luhn = luhn
    }

    /// Which check `value` fails, in words that never quote it; nil when it passes both.
    package func failure(of value: String) -> String? {
        if let pattern, !pattern.matchesWhole(value) { return "does not match the expected pattern" }
        if luhn && !Self.passesLuhn(value) { return "fails the Luhn check" }
        return nil
    }

    /// True for digits (at least two) whose Luhn sum is a multiple of 10. ASCII spaces and
    /// hyphens between them are ignored, so a number a transform grouped (`4111 1111 …`) is
    /// checked as it will be written; any other character fails.
    package static func passesLuhn(_ value: String) -> Bool {
        var digits: [Int] = []
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits.append(Int(byte - UInt8(ascii: "0")))
            case UInt8(ascii: " "), UInt8(ascii: "-"): continue
            default: return false
            }
        }
        guard digits.count >= 2 else { return false }
        var sum = 0
        // From the right: every second digit is doubled, and 9 taken off a result over 9.
        for (position, digit) in digits.reversed().enumerated() {
            if position % 2 == 1 {
                let doubled = digit * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += digit
            }
        }
        return sum % 10 == 0
    }
}

/// A regular expression (ICU syntax) that a whole value must match.
package struct ExpectedPattern: @unchecked Sendable {
    // NSRegularExpression is immutable once built and safe to share for matching.
    private let regex: NSRegularExpression
    /// The pattern as written.
    package let pattern: String

    /// Compiles `pattern`; the error names the pattern (a setting, not a value).
    package init(pattern: String) throws(TransformError) {
        // The pattern alone first, so that its own mistakes are reported as written; then held
        // between \A and \z so that it must match the whole value (`a|ab` matches "ab").
        guard (try? NSRegularExpression(pattern: pattern)) != nil,
              let whole = try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z") else {
            throw TransformError(message: "expect pattern '\(pattern)' does not compile")
        }
        regex = whole
        self.pattern = pattern
    }

    /// True when the pattern matches all of `value`.
    package func matchesWhole(_ value: String) -> Bool {
        let range = NSRange(location: 0, length: (value as NSString).length)
        return regex.firstMatch(in: value, options: [], range: range) != nil
    }
}
