import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
@testable import ShowbatchCore
import TestSupport

/// Manifest mistakes that once gave a wrong file with exit 0: each is now a positioned error.
@Suite struct MistakeTests {
    /// A mask range that can cover no character left the card number unmasked.
    @Test(arguments: [
        ("[[20, 14]]", "m.yaml:6:47: error: label \"card\" mask range [20, 14] ends before it starts, so it would mask nothing; write [start, end] with start <= end\n        card: {path: json.card, mask: {ranges: [[20, 14]]}}\n                                                ^"),
        ("[[-3, 14]]", "m.yaml:6:47: error: label \"card\" mask range [-3, 14] has a negative bound; characters are counted from 0 (null is the start or the end)\n        card: {path: json.card, mask: {ranges: [[-3, 14]]}}\n                                                ^"),
        ("[[0, 5], [7, -1]]", "m.yaml:6:55: error: label \"card\" mask range [7, -1] has a negative bound; characters are counted from 0 (null is the start or the end)\n        card: {path: json.card, mask: {ranges: [[0, 5], [7, -1]]}}\n                                                        ^"),
    ])
    func aMaskRangeThatCannotApplyIsAnError(ranges: String, expected: String) {
        let text = "vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      card: {path: json.card, mask: {ranges: \(ranges)}}\n"
        #expect(manifestErrors(text) == expected)
    }

    /// A range past the value's end still clamps, and a range from null to null is the whole value.
    @Test func aRangePastTheEndStillClamps() throws {
        let manifest = try loadManifest("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      card: {path: json.card, mask: {ranges: [[12, 100]]}}\n")
        let mask = try #require(manifest.requests[0].labels[0].mask)
        #expect(mask.apply("4111111111111111") == "411111111111****")
    }

    /// An empty secret was sent as `Authorization: Bearer ` and failed every row.
    @Test func anEmptySecretIsAnErrorLikeAnUnsetOne() {
        let text = "vault: tnt1\nheaders:\n  Authorization: \"Bearer ${REVEAL_TOKEN}\"\nrequests: [{name: a, path: /p}]\n"
        #expect(manifestErrors(text, environment: ["REVEAL_TOKEN": ""]) ==
            "m.yaml:3:18: error: environment variable REVEAL_TOKEN is set but empty (used in headers.Authorization); write ${REVEAL_TOKEN:-} where empty text is meant\n    Authorization: <redacted>\n                   ^")
        #expect(manifestErrors(text, environment: [:]) ==
            "m.yaml:3:18: error: environment variable REVEAL_TOKEN is not set (used in headers.Authorization)\n    Authorization: <redacted>\n                   ^")
    }

    /// Empty text that is meant says so with `${NAME:-}` (or a default after `:-`).
    @Test(arguments: [
        ([String: String](), "x-"),
        (["SUFFIX": ""], "x-"),
        (["SUFFIX": "7"], "x-7"),
    ])
    func emptyTextThatIsMeantSaysSo(environment: [String: String], expected: String) throws {
        let manifest = try loadManifest("vault: tnt1\nrequests:\n  - {name: \"x-${SUFFIX:-}\", path: /p}\n", environment: environment)
        #expect(manifest.requests[0].name.expand(row: nil) == expected)
        let withDefault = try loadManifest("vault: tnt1\nrequests:\n  - {name: \"x-${SUFFIX:-none}\", path: /p}\n", environment: environment)
        #expect(withDefault.requests[0].name.expand(row: nil) == (expected == "x-" ? "x-none" : expected))
    }
}

/// Values that must not reach the processor's file: an alias that came back unrevealed, and
/// control characters in a revealed text value.
@Suite struct UnrevealedValueTests {
    private static let labels = [LabelBinding(name: "card", path: try! ContentPath(parsing: "json.card"), transforms: [], mask: nil)]

    private func row(answer: String, sent: String, labels: [LabelBinding] = labels) -> ResultRow {
        Reveal.row(ordinal: 0, request: "r", status: 200, attempts: 1, body: Array(answer.utf8), labels: labels, sent: Array(sent.utf8))
    }

    /// An unknown alias passes the proxy as it is; it was written as the card number with exit 0.
    @Test func anAliasThatComesBackUnchangedIsNotRevealed() {
        let echoed = row(answer: #"{"json": {"card": "tok_unknown_1"}}"#, sent: #"{"card": "tok_unknown_1"}"#)
        #expect(echoed.status == .failed)
        #expect(echoed.labels[0].value == nil)
        #expect(echoed.errors.map(\.text) == ["1408 not_revealed: label card: not revealed: the value is one the request sent (an unknown alias comes back unchanged)"])
        // Any string the request sent counts, at any depth.
        let nested = row(answer: #"{"json": {"card": "tok_b"}}"#, sent: #"{"customer": {"cards": ["tok_a", "tok_b"]}}"#)
        #expect(nested.status == .failed && nested.errors.first?.code == .notRevealed)
        let revealed = row(answer: #"{"json": {"card": "4111111111111111"}}"#, sent: #"{"card": "tok_known"}"#)
        #expect(revealed.status == .ok && revealed.labels[0].value == "4111111111111111")
    }

    /// A label that echoes an input on purpose says so.
    @Test func aLabelThatEchoesAnInputOnPurposeOptsOut() throws {
        let manifest = try loadManifest("vault: tnt1\nrequests:\n  - {name: a, path: /p, payload: {id: \"42\"}, labels: {id: {path: json.id, revealed: optional}}}\n")
        let echoed = row(answer: #"{"json": {"id": "42"}}"#, sent: #"{"id": "42"}"#, labels: manifest.requests[0].labels)
        #expect(echoed.status == .ok && echoed.labels[0].value == "42")
        #expect(manifestErrors("vault: tnt1\nrequests:\n  - {name: a, path: /p, labels: {id: {path: json.id, revealed: maybe}}}\n") ==
            "m.yaml:3:64: error: label \"id\" revealed \"maybe\" is not valid; expected required or optional\n    - {name: a, path: /p, labels: {id: {path: json.id, revealed: maybe}}}\n                                                                 ^")
    }

    /// NUL and escape sequences were written raw into CSV cells and to the terminal.
    @Test(arguments: ["41\\u0000", "\\u001b[2J41", "41\\u007f", "41\\u009b"])
    func controlCharactersInARevealedValueFailTheRow(value: String) {
        let failed = row(answer: "{\"json\": {\"card\": \"\(value)\"}}", sent: #"{"card": "tok"}"#)
        #expect(failed.status == .failed && failed.labels[0].value == nil)
        #expect(failed.errors.map(\.text) == ["1409 control_characters: label card: the value holds control characters (a binary value needs decode and file)"])
    }

    /// Tabs and line breaks are text a CSV cell quotes.
    @Test func tabsAndLineBreaksAreText() {
        let kept = row(answer: #"{"json": {"card": "line one\nline\ttwo\r"}}"#, sent: #"{"card": "tok"}"#)
        #expect(kept.status == .ok && kept.labels[0].value == "line one\nline\ttwo\r")
    }
}

/// A `columns` item that names nothing wrote the same word into every row and dropped the label.
@Suite struct ColumnMistakeTests {
    private static func manifest(_ columns: String) -> String {
        "vault: tnt1\noutput:\n  path: r.csv\n  rejects: rj.csv\n  columns: \(columns)\nrequests:\n  - {name: a, path: /p, payload: {c: tok}, labels: {card: json.card}}\n"
    }

    @Test func aColumnThatNamesNoLabelIsAnErrorWithASuggestion() {
        #expect(manifestErrors(Self.manifest("[request, {card_number: cart}]")) ==
            "m.yaml:5:22: error: output.columns[1].card_number \"cart\" is neither a label nor a fixed column; did you mean \"card\"? its labels are card (a constant is written {card_number: {text: cart}})\n    columns: [request, {card_number: cart}]\n                       ^")
        #expect(manifestErrors(Self.manifest("[request, crad]")) ==
            "m.yaml:5:22: error: output.columns[1] \"crad\" is neither a label nor a fixed column (request, status, http_status, attempts, error); did you mean \"card\"? its labels are card\n    columns: [request, crad]\n                       ^")
    }

    @Test func aConstantIsWrittenExplicitly() throws {
        let manifest = try loadManifest(Self.manifest("[{record_type: {text: D}}, {card_number: card}, {state: status}]"))
        #expect(manifest.output?.columns == [
            .template([.literal("D")], name: "record_type"), .label("card", name: "card_number"), .fixed(.status, name: "state"),
        ])
        #expect(manifestErrors(Self.manifest("[{record_type: {txt: D}}, card]")).hasPrefix(
            "m.yaml:5:28: error: unknown key \"txt\" in output.columns[0].record_type; did you mean \"text\"?"))
    }

    @Test func aLabelWrittenToNoColumnIsAWarning() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let warnings = try loadManifest(Self.manifest("[request, status]"), in: dir).warnings.map {
            $0.description.replacingOccurrences(of: dir.path + "/", with: "")
        }
        #expect(warnings == ["m.yaml:5:3: warning: label \"card\" is revealed but written to no column; add it to columns, or remove the label\n    columns: [request, status]\n    ^"])
    }
}

/// Smaller mistakes that read as something else.
@Suite struct SmallMistakeTests {
    @Test func anIndentationErrorSaysWhereToLook() {
        #expect(manifestErrors("vault: tnt1\nrequests:\n  - name: a\n    path: /p\n   method: get\n") ==
            "m.yaml:5:4: error: while parsing a block collection: did not find expected '-' indicator (check the indentation of this line and the line above)\n     method: <redacted>\n     ^")
    }

    @Test(arguments: [("eu1", "eu-1"), ("us2", "us-2")])
    func aRegionWithoutItsDashIsAWarning(region: String, meant: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let warnings = try loadManifest("vault: tnt1\nenvironment: live\ndata_region: \(region)\nrequests: [{name: a, path: /p}]\n", in: dir).warnings
            .map { $0.description.replacingOccurrences(of: dir.path + "/", with: "") }
        #expect(warnings == ["m.yaml:3:14: warning: data_region \"\(region)\" has no dash; VGS regions are written like \"\(meant)\"\n  data_region: \(region)\n               ^"])
    }

    @Test(arguments: ["eu-1", "ua0505", "ua-0505"])
    func regionsThatLookRightAreQuiet(region: String) throws {
        #expect(try loadManifest("vault: tnt1\nenvironment: live\ndata_region: \(region)\nrequests: [{name: a, path: /p}]\n").warnings.isEmpty)
    }
}

/// Answers that parsers read differently.
@Suite struct AmbiguousAnswerTests {
    private static let labels = [LabelBinding(name: "card", path: try! ContentPath(parsing: "json.card"), transforms: [], mask: nil)]

    private func row(_ answer: String) -> ResultRow {
        Reveal.row(ordinal: 0, request: "r", status: 200, attempts: 1, body: Array(answer.utf8), labels: Self.labels)
    }

    /// The first of two values was taken, where most parsers take the last.
    @Test(arguments: [#"{"json": {"card": "4111111111111111", "card": "4000000000000002"}}"#,
                      #"{"json": {"card": "4111111111111111"}, "json": {"card": "4000000000000002"}}"#])
    func aKeyTwiceOnALabelsPathFailsTheRow(answer: String) {
        let failed = row(answer)
        #expect(failed.status == .failed && failed.labels[0].value == nil)
        #expect(failed.errors.first?.code == .responseInvalidJSON)
        #expect(failed.errors.first?.message.hasPrefix("response body is ambiguous (a key on a label's path is in its object twice, so which value is meant cannot be told at byte ") == true)
    }

    @Test func aKeyTwiceElsewhereIsNoMatter() {
        #expect(row(#"{"json": {"card": "4111111111111111"}, "headers": {"a": 1, "a": 2}}"#).status == .ok)
    }

    /// An answer that starts with a byte-order mark was refused (1402).
    @Test func aByteOrderMarkIsSkipped() {
        let answer = "\u{FEFF}" + #"{"json": {"card": "4111111111111111"}}"#
        let revealed = row(answer)
        #expect(revealed.status == .ok && revealed.labels[0].value == "4111111111111111")
    }
}
