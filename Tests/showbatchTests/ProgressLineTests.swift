import Testing
@testable import showbatch

/// The progress line wrapped and filled a 50-column screen, and `TERM=dumb` still got escapes.
@Suite struct ProgressLineTests {
    private let text = "[############------------] 24000/48000 50% ETA 12s 1998 req/s 3 failed"

    @Test func theLineIsClippedToTheTerminalsWidth() {
        let frame = ProgressLine(width: 50, erases: true).frame(text, previous: 0)
        #expect(frame.bytes == "\r\u{1B}[2K" + String(text.prefix(49)))
        #expect(frame.shown == 49)
    }

    @Test func aDumbTerminalGetsNoEscapeCodes() {
        let dumb = ProgressLine.forStandardError(environment: ["TERM": "dumb", "COLUMNS": "30"])
        #expect(!dumb.erases)
        let first = dumb.frame("12345 rows 99 req/s", previous: 0)
        #expect(first.bytes == "\r12345 rows 99 req/s")
        // A shorter line covers what the longer one left.
        #expect(dumb.frame("12 rows", previous: first.shown).bytes == "\r12 rows" + String(repeating: " ", count: 12))
        #expect(dumb.clear(previous: 7) == "\r       \r")
        #expect(!(first.bytes + dumb.clear(previous: 7)).contains("\u{1B}"))
    }

    @Test(arguments: [("xterm-256color", true), ("", false), ("dumb", false)])
    func termSaysWhetherTheLineIsErased(term: String, erases: Bool) {
        #expect(ProgressLine.forStandardError(environment: ["TERM": term]).erases == erases)
    }
}
