import Testing
@testable import ShowbatchBasics

/// What reaches a terminal from outside cannot forge a line, drive the terminal, or read as
/// something else through bidirectional controls.
@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("plain name-1", "plain name-1"),
        ("a\nb", "a\\nb"),
        ("a\r\tb", "a\\r\\tb"),
        ("\u{1B}[31mred", "\\u{1B}[31mred"),
        ("x\u{7F}\u{85}y", "x\\u{7F}\\u{85}y"),
        ("line\u{2028}sep\u{2029}", "line\\u{2028}sep\\u{2029}"),
        ("admin\u{202E}txt.exe", "admin\\u{202E}txt.exe"),
        ("\u{2066}a\u{2069}\u{200F}\u{061C}", "\\u{2066}a\\u{2069}\\u{200F}\\u{61C}"),
        ("café ☕", "café ☕"),
    ])
    func controlsAreEscaped(text: String, expected: String) {
        #expect(TerminalText.escaped(text) == expected)
    }

    @Test func quotedLinesKeepTheirTabs() {
        #expect(TerminalText.escapedLines("m.yaml:1:1: error: x\n\tk: \u{1B}v\n\t^") == "m.yaml:1:1: error: x\n\tk: \\u{1B}v\n\t^")
    }
}
