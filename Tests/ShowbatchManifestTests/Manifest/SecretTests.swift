import Foundation
import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

/// Manifests that once printed a secret in an error (`Tests/Fixtures/secret-leaks/*.yaml`), each
/// with the exact errors it now gets (`*.errors`). Every secret in them starts with `sk_`, holds
/// `SECRET` or `Xk9m`, or is a card, phone or PIN number.
let secretLeakCases = fixtureCases("secret-leaks")

@Suite struct SecretTests {
    /// Duplicate header, payload and alias keys, an error elsewhere on a one-line payload, syntax
    /// errors on a list item and on continuation lines of plain, double-quoted and block values,
    /// an unquoted value starting with `*`, an anchored header value used elsewhere, secrets
    /// aliased into names, paths, labels and settings, anchors and tags that are really
    /// passwords, lines missing their `: `, files broken by CR, NEL or U+2028, and lines of a
    /// header's or payload's block value that lost their indentation and read as keys: none shows
    /// a secret, in the quoted line or the message.
    @Test(arguments: secretLeakCases)
    func noErrorShowsASecret(file: String) throws {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let expected = try String(contentsOfFile: file.replacingOccurrences(of: ".yaml", with: ".errors"), encoding: .utf8)
        let errors = manifestErrors(text) + "\n"
        #expect(errors == expected)
        for secret in ["sk_", "4111", "4222", "4333", "4555", "SECRET", "Xk9m", "4155550123", "4821"] { #expect(!errors.contains(secret), "\(secret)") }
    }

    /// The cases are there, wherever the tests run from.
    @Test func theCasesAreThere() {
        #expect(secretLeakCases.count == 39)
    }

    /// The other direction: what a message names (a key, a label, a column, a file, a path) is
    /// shown, whatever value is written the same way. Only a case that writes a secret itself
    /// into a setting has a message with `<redacted>` in it.
    @Test(arguments: secretLeakCases)
    func everyMessageShowsItsNames(file: String) throws {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let messages = manifestErrors(text).split(separator: "\n").filter { $0.hasPrefix("m.yaml:") }
        #expect(!messages.isEmpty)
        let secretInASetting = file.hasSuffix("/33-secret-written-out-in-a-setting.yaml")
        for message in messages { #expect(message.contains("<redacted>") == secretInASetting, "\(message)") }
    }

    /// Names written like a header's or a payload's short values (`card`, `exp`) are shown in
    /// messages and quoted lines: a column, its template, a label, an unknown key.
    @Test func namesWrittenLikeShortValuesAreShown() throws {
        let file = try #require(secretLeakCases.first { $0.hasSuffix("/37-names-written-like-short-values.yaml") })
        let errors = manifestErrors(try String(contentsOfFile: file, encoding: .utf8))
        #expect(errors.contains(#"output.columns[2] "card_aliass" is neither a label nor a fixed column"#))
        #expect(errors.contains("its labels are card, exp\n      - card_aliass\n"))
        #expect(errors.contains(#"unknown key "cards" in request 1"#))
        #expect(errors.contains("\n      cards: <redacted>\n"))
    }

    /// After a YAML syntax error in a label's regex, the regex is quoted (a comment after it is
    /// not): `\d` is an escape double quotes do not know, which the user has to see.
    @Test func aSyntaxErrorInARegexQuotesTheRegex() {
        let text = "vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    labels:\n      c:\n        path: json.c\n        transform:\n          - regex: \"(\\d{4})\"  # sk_note\n            template: '$1'\n"
        #expect(manifestErrors(text) == "m.yaml:9:22: error: while parsing a quoted scalar: found unknown escape character\n            - regex: \"(\\d{4})\"  <redacted>\n                       ^")
    }

    /// A request's own output has the keys of `output`: its path and columns are shown.
    @Test func aRequestsOwnOutputIsShown() {
        let text = "vault: tnt1\nrequests:\n  - {name: a, path: /p, labels: {pan: json.pan}, output: {path: out/processor-cards.csv, columns: [pann]}}\n"
        #expect(manifestErrors(text).hasPrefix(#"m.yaml:3:100: error: requests[0].output.columns[0] "pann" is neither a label nor a fixed column"#))
        #expect(manifestErrors(text).contains("output: {path: out/processor-cards.csv, columns: [pann]}}\n"))
    }

    /// A one-word value of a payload (`kind: cards`) hides nothing of a message that names the
    /// same word: a value that short is far more often a name than a secret.
    @Test func aShortValueDoesNotHideANameInAMessage() {
        let text = "vault: tnt1\nrequests:\n  - name: a\n    path: /p\n    payload: {kind: cards}\n    cards: 1\n"
        #expect(manifestErrors(text) == "m.yaml:6:5: error: unknown key \"cards\" in request 1; expected name, path, method, headers, payload, reveal, labels, each or output\n      cards: <redacted>\n      ^")
    }

    /// The rule is a positive one: a value is shown only where the reference names a setting
    /// without secrets; a misspelt secret section is hidden like the real one.
    @Test(arguments: [
        ("vault: tnt1\nheader: {Authorization: Bearer sk_misspelt}\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:1: error: unknown key \"header\" in the manifest; did you mean \"headers\"?\n  header: {Authorization: <redacted>}\n  ^"),
        ("vault: tnt1\nheaders: Bearer sk_wrong_type\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:10: error: headers must be a mapping of header names to values; found a string\n  headers: <redacted>\n           ^"),
        ("vault: tnt1\ntimeout: 1 year  # sk_in_a_comment\nrequests: [{name: a, path: /p}]\n",
         "m.yaml:2:10: error: timeout must be a positive duration such as 500ms, 30s or 2m; found \"1 year\"\n  timeout: 1 year  <redacted>\n           ^"),
    ])
    func onlyWhatIsKnownSafeIsShown(text: String, expected: String) {
        #expect(manifestErrors(text) == expected)
    }
}
