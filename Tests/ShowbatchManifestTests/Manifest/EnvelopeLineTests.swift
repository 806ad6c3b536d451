import Foundation
import Testing
import ShowbatchYAML
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

@Suite struct EnvelopeLineTests {
    private static let base = "vault: tnt1\nrequests: [{name: a, path: /p}]\n"

    @Test func aLineKeepsItsReferencesAndResolvesTheEnvironment() throws {
        let manifest = try loadManifest("output:\n  path: \"out/c-${run.seq:4}.csv\"\n  columns: [request, {amount: {text: \"1.50\"}}]\n  header: \"HDR|${SB_TEAM}|${run.date}|${run.seq:6}|$${run.rows}\"\n  trailer: \"TRL|${run.rows}|${run.sum.amount}|${run.sum.amount}\"\n" + Self.base,
                                        environment: ["SB_TEAM": "blue"])
        let header = try #require(manifest.output?.header)
        #expect(header.parts == [.text("HDR|blue|"), .night(.date), .text("|"), .night(.seq(width: 6)), .text("|${run.rows}")])
        #expect(!header.needsTotals && header.numbers && header.sums.isEmpty)
        let trailer = try #require(manifest.output?.trailer)
        #expect(trailer.sums == ["amount"] && trailer.needsTotals)
        let date = try #require(NightDate(parsing: "2026-12-04"))
        #expect(header.render(rows: 3, date: date, seq: 42, sums: [:]) == "HDR|blue|20261204|000042|${run.rows}")
        #expect(trailer.render(rows: 3, date: date, seq: 42, sums: ["amount": "-1.50"]) == "TRL|3|-1.50|-1.50")
    }

    /// What the environment brings in is text: never a line break, a C1 control or a line
    /// separator, and never a stand-in for a reference.
    @Test(arguments: ["a\nb", "a\u{85}b", "a\u{2028}b", "a\u{9B}b", "\u{F0000}"])
    func anEnvironmentValueCannotBreakOrForgeTheLine(value: String) {
        let errors = manifestErrors("output: {path: out/c.csv, header: \"H,${SB_X},${run.rows}\"}\n" + Self.base, environment: ["SB_X": value])
        let message = value == "\u{F0000}"
            ? "output.header: an environment value holds a character of the private use area (U+F0000 to U+F0FFF), which showbatch cannot take here"
            : "output.header must be one line: it holds a line break or a control character"
        #expect(errors == "m.yaml:1:35: error: \(message)\n  output: {path: out/c.csv, header: \"H,${SB_X},${run.rows}\"}\n                                    ^")
    }

    /// gpg-agent reads a passphrase up to its first line break: one with a line break is refused,
    /// never printed.
    @Test func aSigningPassphraseIsOneLine() {
        let text = "output:\n  path: out/c.csv.pgp\n  encrypt:\n    recipients: [k.asc]\n    sign: {key_file: s.asc, passphrase: \"${SB_PW}\"}\n" + Self.base
        let errors = manifestErrors(text, environment: ["SB_PW": "sk_right\nwrong"], recipients: { _ in [] })
        #expect(errors == "m.yaml:5:41: error: output.encrypt.sign.passphrase must be one line: gpg-agent reads a passphrase only up to its first line break\n      sign: {key_file: s.asc, passphrase: <redacted>}\n                                          ^")
    }

    @Test(arguments: [
        ("output: {path: out/c.json, trailer: \"T,${run.rows}\"}\n",
         "m.yaml:1:37: error: output.trailer is for CSV and JSON Lines outputs: a JSON file is one array, and a line outside it would make it invalid JSON\n  output: {path: out/c.json, trailer: \"T,${run.rows}\"}\n                                      ^"),
        ("output: {path: \"out/c-${run.date}.csv\", header: \"H,${run.seq}\"}\n",
         "m.yaml:1:49: error: output.header writes ${run.seq}, the number of the output's nights, but output.path has no ${run.seq}; put it in the file name too\n  output: {path: \"out/c-${run.date}.csv\", header: \"H,${run.seq}\"}\n                                                  ^"),
        ("output: {path: out/c.csv, header: \"H,${run.count}\"}\n",
         "m.yaml:1:35: error: output.header: ${run.count} is not valid; expected ${run.rows}, ${run.date}, ${run.seq}, ${run.seq:N} or ${run.sum.NAME}\n  output: {path: out/c.csv, header: \"H,${run.count}\"}\n                                    ^"),
        ("output: {path: out/c.csv, trailer: \"T,${run.sum.}\"}\n",
         "m.yaml:1:36: error: output.trailer: ${run.sum.} names no column; write ${run.sum.NAME} with the name of an output column\n  output: {path: out/c.csv, trailer: \"T,${run.sum.}\"}\n                                     ^"),
        ("output: {path: out/c.csv, trailer: \"T\\n${run.rows}\"}\n",
         "m.yaml:1:36: error: output.trailer must be one line: it holds a line break or a control character\n  output: {path: out/c.csv, trailer: \"T\\n${run.rows}\"}\n                                     ^"),
        ("output: {path: out/c.csv, columns: [request, status], trailer: \"T,${run.sum.amount}\"}\n",
         "m.yaml:1:64: error: ${run.sum.amount} names no column of this output; its columns are request, status\n  output: {path: out/c.csv, columns: [request, status], trailer: \"T,${run.sum.amount}\"}\n                                                                 ^"),
        ("output: {path: out/c.csv, trailer: \"T,${run.sum.error}\"}\n",
         "m.yaml:1:36: error: ${run.sum.error} cannot sum the column error: it holds no number\n  output: {path: out/c.csv, trailer: \"T,${run.sum.error}\"}\n                                     ^"),
        ("output: {path: out/c.csv, header: \"\"}\n",
         "m.yaml:1:35: error: output.header is empty; give the line to write, or leave it out\n  output: {path: out/c.csv, header: \"\"}\n                                    ^"),
    ])
    func linesItRefuses(section: String, expected: String) {
        #expect(manifestErrors(section + Self.base) == expected)
    }
}
