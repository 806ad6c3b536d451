import Foundation
import ShowbatchBasics

/// A regular-expression replacement applied to a revealed value, as the Show SDKs apply it.
package struct RegexTransform: @unchecked Sendable {
    // NSRegularExpression is immutable once built and safe to share for matching.
    private let regex: NSRegularExpression
    /// The pattern as written.
    package let pattern: String
    /// The replacement template (`$1` refers to the first group).
    package let template: String

    /// Compiles `pattern` (ICU syntax); the error carries ICU's reason.
    package init(pattern: String, template: String) throws(TransformError) {
        do {
            regex = try NSRegularExpression(pattern: pattern)
        } catch {
            throw TransformError(message: "regex '\(pattern)' does not compile")
        }
        self.pattern = pattern
        self.template = template
    }

    /// Replaces every match in `value`.
    package func apply(_ value: String) -> String {
        // NSRange over UTF-16 covers the whole string whatever graphemes precede a match.
        let range = NSRange(location: 0, length: (value as NSString).length)
        return regex.stringByReplacingMatches(in: value, options: [], range: range, withTemplate: template)
    }
}

/// A regular expression that does not compile.
package struct TransformError: Error, Sendable {
    /// What is wrong.
    package let message: String
}
