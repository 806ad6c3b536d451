import Foundation

/// The closest candidate to `word` by edit distance, when it is close enough to be a typo.
package func closest(_ word: String, in candidates: [String]) -> String? {
    let target = Array(word.lowercased())
    var best: (String, Int)?
    for candidate in candidates {
        let other = Array(candidate.lowercased())
        var previous = Array(0...other.count)
        for (i, a) in target.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: other.count)
            for (j, b) in other.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
            }
            previous = current
        }
        let distance = previous[other.count]
        if distance <= max(2, other.count / 3), distance < (best?.1 ?? Int.max) { best = (candidate, distance) }
    }
    return best?.0
}

/// "a, b or c" for lists of choices in messages.
package func choices(_ items: [String]) -> String {
    guard items.count > 1 else { return items.first ?? "" }
    return items.dropLast().joined(separator: ", ") + " or " + items.last!
}

/// Calls `body` with the UTF-8 bytes of `text`, in place for a native string: iterating
/// `String.UTF8View` goes through an index per byte, which shows in per-row profiles.
@inlinable @inline(__always)
package func withUTF8<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    var text = text
    return try text.withUTF8(body)
}

extension String {
    package init(format2 value: Double) {
        let scaled = (value * 100).rounded() / 100
        var text = "\(scaled)"
        if text.hasSuffix(".0") { text.removeLast(2) }
        self = text
    }
}

extension Error {
    /// A description that is never empty on Linux (unlike `localizedDescription`).
    package var readableDescription: String {
        if let error = self as? CocoaError, let path = error.filePath { return "\(error.code) (\(path))" }
        return String(describing: self)
    }
}

extension String {
    /// The string with `0` before it up to `width` characters.
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
