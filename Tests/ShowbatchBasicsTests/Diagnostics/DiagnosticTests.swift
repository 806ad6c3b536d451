import Testing
@testable import ShowbatchBasics

@Suite struct DiagnosticTests {
    @Test func caretKeepsTabsAndRedactsValues() {
        let source = SourceFile(name: "f.yaml", text: "headers:\n  Authorization: \"Bearer s3cret\"\n")
        let span = SourceSpan(start: Mark(line: 2, column: 18), end: Mark(line: 2, column: 33))
        let diagnostic = Diagnostic(source: source, mark: Mark(line: 2, column: 18), message: "bad", redacting: [span])
        #expect(diagnostic.description == "f.yaml:2:18: error: bad\n    Authorization: <redacted>\n                   ^")
        #expect(!diagnostic.description.contains("s3cret"))
        // A caret after a redacted value moves with the shorter text.
        let flow = SourceFile(name: "f.yaml", text: "h: {A: \"long secret value\", B: 1}\n")
        let after = Diagnostic(source: flow, mark: Mark(line: 1, column: 30), message: "bad",
                               redacting: [SourceSpan(start: Mark(line: 1, column: 8), end: Mark(line: 1, column: 27))])
        #expect(after.description == "f.yaml:1:30: error: bad\n  h: {A: <redacted>, B: 1}\n                      ^")
    }

    @Test func byteOffsetsBecomeMarks() {
        let source = SourceFile(name: "f", text: "ab\ncé d")
        #expect(source.mark(ofByteOffset: 7) == Mark(line: 2, column: 4))
    }
}
