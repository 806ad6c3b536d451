import Foundation
import Testing
@testable import ShowbatchCore
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
        #expect(secretLeakCases.count == 36)
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
