import Testing
@testable import ShowbatchBasics
@testable import ShowbatchManifest
import TestSupport

@Suite struct LabelFormatTests {
    // The Show SDKs' own examples of masks.
    @Test(arguments: [
        ([Mask.Range(start: nil, end: 3)], "****-1111-1111-1111"),
        ([Mask.Range(start: 5, end: 8)], "4111-****-1111-1111"),
        ([Mask.Range(start: 0, end: 100)], "*******************"),
        ([], "*******************"),
        ([Mask.Range(start: -1, end: 3)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 5, end: 3)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 19, end: 30)], "4111-1111-1111-1111"),
        ([Mask.Range(start: 15, end: nil)], "4111-1111-1111-****"),
        ([Mask.Range(start: 0, end: 0), Mask.Range(start: 18, end: 18)], "*111-1111-1111-111*"),
    ])
    func maskRanges(ranges: [Mask.Range], expected: String) {
        #expect(Mask(ranges: ranges, symbol: "*").apply("4111-1111-1111-1111") == expected)
    }

    @Test func maskCountsCharactersNotBytes() {
        #expect(Mask(ranges: [Mask.Range(start: 0, end: 1)], symbol: "#").apply("🇺🇦é123") == "##123")
        #expect(Mask(ranges: [], symbol: nil).apply("4111") == "4111")
    }

    @Test func transformsReplaceEveryMatchInOrder() throws {
        let grouping = try RegexTransform(pattern: #"(\d{4})(\d{4})(\d{4})(\d{4})"#, template: "$1 $2 $3 $4")
        #expect(grouping.apply("4111111111111111") == "4111 1111 1111 1111")
        #expect(grouping.apply("🇺🇦4111111111111111") == "🇺🇦4111 1111 1111 1111")
        let digits = try RegexTransform(pattern: #"\d"#, template: "X")
        #expect(digits.apply("a1b2") == "aXbX")
        let binding = LabelBinding(name: "n", path: try ContentPath(parsing: "n"), transforms: [grouping],
                                   mask: Mask(ranges: [Mask.Range(start: 0, end: 13)], symbol: "•"))
        #expect(binding.format("4111111111111111") == "•••••••••••••• 1111")
    }

    @Test func invalidRegexIsRefused() {
        #expect(throws: TransformError.self) { try RegexTransform(pattern: "(", template: "") }
    }

    /// Templates as Java's `Matcher.replaceAll` reads them (the Android SDK's `Regex.replace`),
    /// with what Java writes for each.
    @Test(arguments: [
        (#"(\d{4})(\d{4})"#, "$2-$1", "41111234", "1234-4111"),
        (#"(?<first>\d{4})(?<rest>\d+)"#, "${first} ${rest}", "41111234", "4111 1234"),
        (#"(?<first>\d{4})(?<rest>\d+)"#, "$1|${rest}|$2", "41111234", "4111|1234|1234"),
        // As many digits as still name a group: with one group, $12 is group 1 and a 2.
        (#"(\d)"#, "$12", "7", "72"),
        (#"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)"#, "$12$1", "abcdefghijkl", "la"),
        (#"(\d)"#, "$10", "7", "70"),
        // \ makes the next character literal.
        (#"(\d+)"#, #"\$$1\\"#, "12", #"$12\"#),
        (#"(\d+)"#, #"\${x}"#, "12", "${x}"),
        // A group that took no part in the match writes nothing.
        (#"(a)|(b)"#, "[$1$2]", "ab", "[a][b]"),
        // Every match, graphemes before it whole.
        (#"\d"#, "#", "🇺🇦1é2", "🇺🇦#é#"),
        (#"x"#, "y", "no match", "no match"),
        (#"(?<n>\d)"#, "<${n}>", "a1b22", "a<1>b<2><2>"),
        // A named group inside a character class or an escaped parenthesis is no group.
        (#"[(?<no>]\(?<n>(\d)"#, "$1", "(1", "(1"),
    ])
    func templatesAreTheEnginesReplacement(pattern: String, template: String, value: String, expected: String) throws {
        #expect(try RegexTransform(pattern: pattern, template: template).apply(value) == expected)
    }

    /// What Java throws for at the first match is refused before anything is sent, in words.
    @Test(arguments: [
        (#"(\d)"#, "$", "template '$' has a $ that is neither $N nor ${name}; write \\$ for a dollar sign"),
        (#"(\d)"#, "$x", "template '$x' has a $ that is neither $N nor ${name}; write \\$ for a dollar sign"),
        (#"(\d)"#, "$$1", "template '$$1' has a $ that is neither $N nor ${name}; write \\$ for a dollar sign"),
        (#"(\d)(\d)"#, "$3", "template '$3' refers to group $3; the regex has 2 groups"),
        (#"\d"#, "$1", "template '$1' refers to group $1; the regex has 0 groups"),
        (#"(\d)"#, "ab\\", "template 'ab\\' ends in a \\ with nothing to escape"),
        (#"(\d)"#, "${REVEAL_TOKEN}", "template '${REVEAL_TOKEN}' has ${REVEAL_TOKEN}: a group's name is letters and digits, starting with a letter (a template reads no environment variable)"),
        (#"(?<card>\d)"#, "${token}", "template '${token}' refers to group ${token}, which the regex does not name (a template reads no environment variable)"),
        (#"(?<card>\d)"#, "${1card}", "template '${1card}' has ${1card}: a group's name is letters and digits, starting with a letter (a template reads no environment variable)"),
        (#"(?<card>\d)"#, "${card", "template '${card' has a ${ without its }"),
        (#"(?<card>\d)"#, "${}", "template '${}' has ${}: a group's name is letters and digits, starting with a letter (a template reads no environment variable)"),
    ])
    func templatesThatJavaRefusesAreRefused(pattern: String, template: String, message: String) {
        #expect(throws: TransformError.self) { try RegexTransform(pattern: pattern, template: template) }
        do {
            _ = try RegexTransform(pattern: pattern, template: template)
        } catch {
            #expect(error.message == message && error.inTemplate)
        }
    }
}

/// A transform's template in a manifest is the engine's replacement: it reads no environment
/// variable (a template that named the bearer token's once wrote the token into the output file).
@Suite struct TransformTemplateManifestTests {
    @Test func aTemplateNeverReadsTheEnvironment() throws {
        let text = """
        vault: tnt1
        requests:
          - name: r
            path: /p
            labels:
              card:
                path: card
                transform:
                  - {regex: '(\\d+)', template: '$1 ${token}'}
        """
        #expect(manifestErrors(text, environment: ["token": "sk_live_SECRET"]) == """
            m.yaml:9:40: error: label "card": template '$1 ${token}' refers to group ${token}, which the regex does not name (a template reads no environment variable)
                        - {regex: '(\\d+)', template: '$1 ${token}'}
            """ + "\n" + String(repeating: " ", count: 41) + "^")
        let named = try loadManifest(text.replacingOccurrences(of: "'(\\d+)'", with: "'(?<token>\\d+)'"),
                                     environment: ["token": "sk_live_SECRET"])
        #expect(named.requests[0].labels[0].transforms[0].apply("4111") == "4111 4111")
    }
}
