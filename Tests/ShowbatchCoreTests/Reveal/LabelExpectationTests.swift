import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Label expectations (`expect: {pattern, luhn}`): a value that is not what the label expects
/// fails its row with 1407, never quoted (issue 20, item 6). The card numbers are the card
/// networks' published test numbers.
@Suite struct LabelExpectationTests {
    @Test(arguments: [
        ("4111111111111111", true),      // Visa test number
        ("4000000000000002", true),
        ("5555555555554444", true),      // Mastercard
        ("378282246310005", true),       // American Express, 15 digits
        ("6011111111111117", true),      // Discover
        ("4111 1111 1111 1111", true),   // grouped by a transform: spaces are ignored
        ("4111-1111-1111-1111", true),   // and hyphens
        ("79927398713", true),           // the classic example of the algorithm
        ("00", true),
        ("4111111111111112", false),     // last digit off by one
        ("4111111111111121", false),     // two digits swapped
        ("5555555555554440", false),
        ("79927398710", false),
        ("tok_live_4111111111111111", false),  // an alias the proxy did not know: not digits
        ("4111.1111.1111.1111", false),  // other separators are not ignored
        ("4111111111111111\n", false),
        ("４１１１１１１１１１１１１１１１", false),  // fullwidth digits are not ASCII digits
        ("0", false),                    // at least two digits
        ("", false),
        (" - ", false),
    ])
    func luhn(value: String, passes: Bool) {
        #expect(LabelExpectation.passesLuhn(value) == passes)
    }

    @Test(arguments: [
        (#"\d{16}"#, "4111111111111111", true),
        (#"\d{16}"#, "41111111111111112", false),   // a longer value: the whole must match
        (#"\d{16}"#, "x4111111111111111", false),
        (#"\d{4}"#, "1234\n", false),               // no trailing line break slips through
        ("a|ab", "ab", true),                       // any alternative that covers the whole value
        ("4[0-9]{12}(?:[0-9]{3})?", "4111111111111", true),
        (#"\d{2}/\d{4}"#, "01/2030", true),
    ])
    func patternsMatchTheWholeValue(pattern: String, value: String, matches: Bool) throws {
        #expect(try ExpectedPattern(pattern: pattern).matchesWhole(value) == matches)
    }

    @Test func aPatternThatDoesNotCompileIsRefused() {
        do {
            _ = try ExpectedPattern(pattern: "(")
            Issue.record("the pattern compiled")
        } catch {
            #expect(error.message == "expect pattern '(' does not compile")
        }
    }

    private static func binding(_ expect: LabelExpectation, transforms: [RegexTransform] = [], mask: Mask? = nil) throws -> LabelBinding {
        var binding = LabelBinding(name: "pan", path: try ContentPath(parsing: "json.pan"), transforms: transforms, mask: mask)
        binding.expect = expect
        return binding
    }

    private static func row(_ body: String, _ labels: [LabelBinding]) -> ResultRow {
        Reveal.row(ordinal: 0, request: "r", status: 200, attempts: 1, body: Array(body.utf8), labels: labels)
    }

    /// An alias that comes back unchanged fails the row; the value is in no error and no cell, and
    /// the other labels keep their values.
    @Test(arguments: [
        (LabelExpectation(pattern: try! ExpectedPattern(pattern: #"\d{13,19}"#)), "1407 unexpected_value: label pan: the value does not match the expected pattern"),
        (LabelExpectation(luhn: true), "1407 unexpected_value: label pan: the value fails the Luhn check"),
        (LabelExpectation(pattern: try! ExpectedPattern(pattern: #"tok_.*"#), luhn: true), "1407 unexpected_value: label pan: the value fails the Luhn check"),
    ])
    func anUnexpectedValueFailsTheRow(expect: LabelExpectation, error: String) throws {
        let exp = LabelBinding(name: "exp", path: try ContentPath(parsing: "json.exp"), transforms: [], mask: nil)
        let row = Self.row(#"{"json": {"pan": "tok_live_abc123", "exp": "01/2030"}}"#, [try Self.binding(expect), exp])
        #expect(row.status == .failed)
        #expect(row.errors.map(\.text) == [error])
        #expect(row.errors.first?.label == "pan")
        #expect(row.labels.map(\.name) == ["pan", "exp"])
        #expect(row.labels[0].value == nil)
        #expect(row.labels[1].value == "01/2030")
        #expect(!row.errors.contains { $0.text.contains("tok_live") })
    }

    /// A value that passes is written as usual; a missing label with an expectation is 1403 and
    /// `partial`, as without one; a failed expectation beside a missing label fails the row.
    @Test func passingMissingAndBoth() throws {
        let luhn = try Self.binding(LabelExpectation(luhn: true))
        let ok = Self.row(#"{"json": {"pan": "4111111111111111"}}"#, [luhn])
        #expect(ok.status == .ok && ok.errors.isEmpty && ok.labels[0].value == "4111111111111111")
        let missing = Self.row(#"{"json": {}}"#, [luhn])
        #expect(missing.status == .partial && missing.errors.map(\.code) == [.fieldNotFound])
        let other = LabelBinding(name: "exp", path: try ContentPath(parsing: "json.exp"), transforms: [], mask: nil)
        let both = Self.row(#"{"json": {"pan": "4111111111111112"}}"#, [luhn, other])
        #expect(both.status == .failed)
        #expect(both.errors.map(\.code) == [.unexpectedValue, .fieldNotFound])
    }

    /// The check sees the value after the transforms (what is written) and before the mask (which
    /// hides the digits it is about).
    @Test func theCheckComesAfterTheTransformsAndBeforeTheMask() throws {
        let grouping = try RegexTransform(pattern: #"(\d{4})(\d{4})(\d{4})(\d{4})"#, template: "$1 $2 $3 $4")
        let mask = Mask(ranges: [Mask.Range(start: 0, end: 14)], symbol: "*")
        let grouped = try ExpectedPattern(pattern: #"\d{4}( \d{4}){3}"#)
        let binding = try Self.binding(LabelExpectation(pattern: grouped, luhn: true), transforms: [grouping], mask: mask)
        let row = Self.row(#"{"json": {"pan": "4111111111111111"}}"#, [binding])
        #expect(row.status == .ok)
        #expect(row.labels[0].value == "***************1111")
        // The raw value would not match the grouped pattern: the transform ran first.
        #expect(!grouped.matchesWhole("4111111111111111"))
        #expect(binding.checkedFormat("4111111111111112") == .failure(ExpectationFailure(check: "fails the Luhn check")))
    }

    @Test(arguments: [
        ("{pattern: '\\d{16}', luhn: true}", #"\d{16}"#, true),
        ("{luhn: true}", nil, true),
        ("{pattern: '[0-9]+'}", "[0-9]+", false),
        ("{pattern: 1234}", "1234", false),
    ] as [(String, String?, Bool)])
    func expectationsDecode(expect: String, pattern: String?, luhn: Bool) throws {
        let manifest = try loadManifest("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      pan: {path: json.pan, expect: \(expect)}\n")
        let binding = try #require(manifest.requests.first?.labels.first)
        #expect(binding.expect?.pattern?.pattern == pattern)
        #expect(binding.expect?.luhn == luhn)
    }

    /// Each error points at what is wrong: (the binding's text, the column, the message).
    @Test(arguments: [
        ("expect: {pattern: '(\\d'}", 47, "label \"pan\": expect pattern '(\\d' does not compile"),
        ("expect: {pattern: ''}", 47, "label \"pan\" expect pattern is empty; give a regular expression the whole value must match"),
        ("expect: {patern: '\\d+'}", 38, "unknown key \"patern\" in label \"pan\" expect; did you mean \"pattern\"?"),
        ("expect: {size: 16}", 38, "unknown key \"size\" in label \"pan\" expect; expected pattern or luhn"),
        ("expect: {luhn: yes}", 44, "label \"pan\" expect luhn must be true or false; found a string"),
        ("expect: {pattern: [a]}", 47, "label \"pan\" expect pattern must be a string; found a list"),
        ("expect: luhn", 37, "label \"pan\" expect must be a mapping; found a string"),
        ("expect: {}", 37, "label \"pan\" expect needs pattern, luhn or both"),
        ("decode: base64, file: x.bin, expect: {luhn: true}", 66,
         "label \"pan\" is written to a file, so it cannot have expect (its value is bytes, not text)"),
    ])
    func badExpectationsArePositionedErrors(expect: String, column: Int, message: String) {
        let line = "      pan: {path: json.pan, \(expect)}"
        let text = "vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n\(line)\n"
        // Values under an unknown key, and items of a list where a string belongs, are not shown.
        let quoted = line.replacingOccurrences(of: "'\\d+'", with: "<redacted>").replacingOccurrences(of: ": 16", with: ": <redacted>")
            .replacingOccurrences(of: "[a]", with: "[<redacted>]")
        let caret = String(repeating: " ", count: column - 1) + "^"
        #expect(manifestErrors(text) == "m.yaml:6:\(column): error: \(message)\n  \(quoted)\n  \(caret)")
    }

    /// The whole way: an alias the emulator does not know comes back unchanged, passes no check, and
    /// its row goes to the rejects file with 1407; the processor's file keeps only the good rows,
    /// and the alias is written nowhere.
    @Test func anUnknownAliasLandsInTheRejectsFile() async throws {
        let fixture = RunFixture()
        defer { fixture.dir.remove() }
        let manifest = try fixture.manifest("""
        vault: tnt1
        emulator: {aliases: {tok_0: "4111111111111111", tok_1: "5555555555554444", tok_2: "4111111111111112"}}
        output:
          path: out/r.csv
          rejects: out/rejects.csv
        requests:
          - name: "r${row.id}"
            each: {csv: d.csv}
            path: /p
            payload: {pan: "${row.alias}"}
            labels:
              pan: {path: json.pan, expect: {pattern: '\\d{13,19}', luhn: true}}
        """, files: ["d.csv": "id,alias\n0,tok_0\n1,tok_unknown\n2,tok_1\n3,tok_2\n"])
        let summary = try await fixture.run(manifest)
        #expect(summary.rows == 4 && summary.ok == 2 && summary.failed == 2)
        #expect(summary.exitCode == .rowsFailed)
        #expect(summary.tally.byErrorCode[.unexpectedValue] == 1 && summary.tally.byErrorCode[.notRevealed] == 1)
        #expect(fixture.read("out/r.csv") == """
        request,status,http_status,attempts,error,pan
        r0,ok,200,1,,4111111111111111
        r2,ok,200,1,,5555555555554444

        """)
        #expect(fixture.read("out/rejects.csv") == """
        request,status,http_status,attempts,error,id,alias
        r1,failed,200,1,1408 not_revealed: label pan: not revealed: the value is one the request sent (an unknown alias comes back unchanged),1,tok_unknown
        r3,failed,200,1,1407 unexpected_value: label pan: the value fails the Luhn check,3,tok_2

        """)
        #expect(fixture.log.all.allSatisfy { !$0.contains("4111111111111112") })
    }
}
