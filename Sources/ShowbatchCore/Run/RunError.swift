import ShowbatchYAML

/// A problem a run cannot get past: bad options (exit 2) or a runtime failure (exit 3).
public enum RunError: Error, Sendable, CustomStringConvertible {
    /// The run cannot start as asked; nothing was sent.
    case usage(String)
    /// The run cannot start because of a place in the manifest (rendered with file, line, column
    /// and caret); nothing was sent.
    case manifest(Diagnostic)
    /// Something failed at run time: an unwritable output, a strict hostname check.
    case runtime(String)

    /// The message a person reads (a manifest problem with its quoted line).
    public var description: String {
        switch self {
        case .usage(let message), .runtime(let message): return message
        case .manifest(let diagnostic): return diagnostic.description
        }
    }
}
