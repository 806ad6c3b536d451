import ShowbatchBasics
import ShowbatchYAML

/// Something in a manifest that is valid but likely not what was meant: positioned and quoted as
/// an error is, and cleared of secrets the same way, but it does not stop the manifest loading.
package struct ManifestWarning: Sendable, CustomStringConvertible {
    /// The position, message and quoted line.
    package let diagnostic: Diagnostic

    /// Wraps a rendered diagnostic.
    package init(_ diagnostic: Diagnostic) { self.diagnostic = diagnostic }

    /// `file:line:col: warning: message`, then the quoted line and a caret.
    package var description: String {
        // The diagnostic renders itself as an error; only the word differs.
        let text = diagnostic.description
        let prefix = position + ": error: "
        guard text.hasPrefix(prefix) else { return text }
        return position + ": warning: " + text.dropFirst(prefix.count)
    }

    /// `file:line:col: message` on one line, for a log event.
    package var line: String { position + ": " + diagnostic.message }

    private var position: String {
        guard let mark = diagnostic.mark else { return diagnostic.file }
        return "\(diagnostic.file):\(mark.line):\(mark.column)"
    }
}
