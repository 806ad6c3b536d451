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
}
