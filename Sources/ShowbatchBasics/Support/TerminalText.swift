/// Text for a terminal or a log line: control characters in anything that came from outside
/// (a request name from a data row, a URL, a path, a message quoting one) are escaped, so that a
/// value can neither forge a log line with a line break nor drive the terminal with an escape
/// sequence.
package enum TerminalText {
    /// `text` with every control character written as an escape (`\n`, `\t`, `\u{1B}`…).
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out
    }

    /// A multi-line message (a diagnostic, whose quoted line keeps its tabs so that the caret
    /// lines up): each line escaped, tabs kept.
    package static func escapedLines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.split(separator: "\t", omittingEmptySubsequences: false).map { escaped(String($0)) }.joined(separator: "\t")
        }.joined(separator: "\n")
    }

    /// C0 and C1 controls, DEL, line and paragraph separators, and the bidirectional controls
    /// (LRM, RLM, ALM, embeddings, overrides and isolates) that can make a printed name read as
    /// another ("Trojan Source").
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
