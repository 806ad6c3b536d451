import Foundation
import ShowbatchBasics

/// How the live progress line is drawn on the terminal that shows it: clipped to its width (a
/// line that wraps fills a narrow screen with copies), and with no escape codes where `TERM`
/// says the terminal has none (`dumb`, as in an editor's shell or a CI log viewer).
struct ProgressLine {
    /// Columns the terminal has.
    let width: Int
    /// The terminal understands `ESC [ 2 K` (erase the line).
    let erases: Bool

    /// The terminal on standard error as the environment describes it.
    static func forStandardError(environment: [String: String] = ProcessInfo.processInfo.environment) -> ProgressLine {
        var size = winsize()
        let columns = ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
        let fromEnvironment = environment["COLUMNS"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
        let term = environment["TERM"] ?? ""
        return ProgressLine(width: columns ?? fromEnvironment ?? 80, erases: !(term.isEmpty || term == "dumb"))
    }

    /// What to write to replace the line shown before (`previous` characters long) with `text`.
    /// The last column stays empty: writing into it wraps on some terminals.
    func frame(_ text: String, previous: Int) -> (bytes: String, shown: Int) {
        let room = max(width - 1, 1)
        let clipped = text.count > room ? String(text.prefix(room)) : text
        if erases { return ("\r\u{1B}[2K" + clipped, clipped.count) }
        let padding = String(repeating: " ", count: max(previous - clipped.count, 0))
        return ("\r" + clipped + padding, clipped.count)
    }

    /// What clears the line at the end.
    func clear(previous: Int) -> String {
        erases ? "\r\u{1B}[2K" : "\r" + String(repeating: " ", count: previous) + "\r"
    }
}
