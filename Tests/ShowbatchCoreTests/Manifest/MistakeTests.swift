import Foundation
import Testing
@testable import ShowbatchCore

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
