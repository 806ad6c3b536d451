import Foundation
import ShowbatchBasics

/// A regular-expression replacement applied to a revealed value, as the Show SDKs apply it.
///
/// The template is the regex engine's replacement, read as Java's `Matcher.replaceAll` reads it
/// (the Android SDK; the iOS SDK's `$N` are the same): `$N` is group N (as many digits as still
/// name a group), `${name}` a named group, `\` makes the next character literal. It is never a
/// manifest template: `${NAME}` reads no environment variable, so no secret can reach a cell.
package struct RegexTransform: @unchecked Sendable {
    // NSRegularExpression is immutable once built and safe to share for matching.
    private let regex: NSRegularExpression
    private let pieces: [Piece]
    /// The pattern as written.
    package let pattern: String
    /// The replacement template as written.
    package let template: String

    /// One part of a template.
    enum Piece: Equatable {
        case literal(String)
        case group(Int)
        case named(String)
    }

    /// Compiles `pattern` (ICU syntax) and reads `template` against its groups; the error says
    /// which of the two is wrong.
    package init(pattern: String, template: String) throws(TransformError) {
        do {
            regex = try NSRegularExpression(pattern: pattern)
        } catch {
            throw TransformError(message: "regex '\(pattern)' does not compile", inTemplate: false)
        }
        self.pattern = pattern
        self.template = template
        pieces = try Self.pieces(of: template, groups: regex.numberOfCaptureGroups, names: Self.groupNames(in: pattern))
    }

    /// Replaces every match in `value`.
    package func apply(_ value: String) -> String {
        let text = value as NSString
        // NSRange over UTF-16 covers the whole string whatever graphemes precede a match.
        let matches = regex.matches(in: value, options: [], range: NSRange(location: 0, length: text.length))
        guard !matches.isEmpty else { return value }
        var out = ""
        var at = 0
        for match in matches {
            out += text.substring(with: NSRange(location: at, length: match.range.location - at))
            for piece in pieces {
                switch piece {
                case .literal(let literal): out += literal
                case .group(let number): out += Self.text(of: match.range(at: number), in: text)
                case .named(let name): out += Self.text(of: match.range(withName: name), in: text)
                }
            }
            at = match.range.location + match.range.length
        }
        return out + text.substring(from: at)
    }

    /// A group's text; empty when it took no part in the match.
    private static func text(of range: NSRange, in text: NSString) -> String {
        range.location == NSNotFound ? "" : text.substring(with: range)
    }

    /// The template's pieces, as `Matcher.appendReplacement` reads them; what it would throw
    /// for at the first match is an error now, before anything is sent.
    static func pieces(of template: String, groups: Int, names: Set<String>) throws(TransformError) -> [Piece] {
        var pieces: [Piece] = []
        var literal = ""
        func flush() {
            if !literal.isEmpty { pieces.append(.literal(literal)) }
            literal = ""
        }
        var rest = Substring(template)
        while let character = rest.first {
            rest = rest.dropFirst()
            switch character {
            case "\\":
                guard let escaped = rest.first else {
                    throw TransformError(message: "template '\(template)' ends in a \\ with nothing to escape", inTemplate: true)
                }
                literal.append(escaped)
                rest = rest.dropFirst()
            case "$":
                if rest.first == "{" {
                    guard let close = rest.firstIndex(of: "}") else {
                        throw TransformError(message: "template '\(template)' has a ${ without its }", inTemplate: true)
                    }
                    let name = String(rest[rest.index(after: rest.startIndex)..<close])
                    guard let first = name.unicodeScalars.first, first.isASCIILetter,
                          name.unicodeScalars.allSatisfy({ $0.isASCIILetter || ("0"..."9").contains($0) }) else {
                        throw TransformError(message: "template '\(template)' has ${\(name)}: a group's name is letters and digits, starting with a letter (a template reads no environment variable)", inTemplate: true)
                    }
                    guard names.contains(name) else {
                        throw TransformError(message: "template '\(template)' refers to group ${\(name)}, which the regex does not name (a template reads no environment variable)", inTemplate: true)
                    }
                    flush()
                    pieces.append(.named(name))
                    rest = rest[rest.index(after: close)...]
                } else if let digit = rest.first?.wholeNumberValue, rest.first!.isASCII {
                    guard digit <= groups else {
                        throw TransformError(message: "template '\(template)' refers to group $\(digit); the regex has \(groups == 1 ? "1 group" : "\(groups) groups")", inTemplate: true)
                    }
                    var number = digit
                    rest = rest.dropFirst()
                    // More digits while they still name a group: `$12` is group 12 when there is one, else group 1 and a 2.
                    while let next = rest.first, next.isASCII, let more = next.wholeNumberValue, number * 10 + more <= groups {
                        number = number * 10 + more
                        rest = rest.dropFirst()
                    }
                    flush()
                    pieces.append(.group(number))
                } else {
                    throw TransformError(message: "template '\(template)' has a $ that is neither $N nor ${name}; write \\$ for a dollar sign", inTemplate: true)
                }
            default:
                literal.append(character)
            }
        }
        flush()
        return pieces
    }

    /// The names of the pattern's named groups, `(?<name>…)`, outside escapes and character classes.
    static func groupNames(in pattern: String) -> Set<String> {
        var names: Set<String> = []
        let scalars = Array(pattern.unicodeScalars)
        var index = 0
        var classDepth = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\\" {
                index += 2
                continue
            }
            if scalar == "[" {
                classDepth += 1
            } else if scalar == "]" && classDepth > 0 {
                classDepth -= 1
            } else if classDepth == 0, scalar == "(", index + 3 < scalars.count, scalars[index + 1] == "?", scalars[index + 2] == "<",
                      scalars[index + 3].isASCIILetter {
                var end = index + 3
                var name = ""
                while end < scalars.count, scalars[end] != ">" {
                    name.unicodeScalars.append(scalars[end])
                    end += 1
                }
                names.insert(name)
                index = end
            }
            index += 1
        }
        return names
    }
}

private extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}

/// A regular expression that does not compile, or a template that does not fit it.
package struct TransformError: Error, Sendable {
    /// What is wrong.
    package let message: String
    /// The template is wrong (not the regex).
    package var inTemplate = false

    package init(message: String, inTemplate: Bool = false) {
        self.message = message
        self.inTemplate = inTemplate
    }
}
