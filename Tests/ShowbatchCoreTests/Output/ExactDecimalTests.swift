import Testing
@testable import ShowbatchCore

@Suite struct ExactDecimalTests {
    @Test(arguments: [
        (["12.50", "7", "0.125", "-3.10"], "16.525"),
        (["0.1", "0.2"], "0.3"),
        (["-0.50", "0.5"], "0.00"),
        (["-2", "1"], "-1"),
        (["0.000000000000000001", "99999999999999999999"], "99999999999999999999.000000000000000001"),
        ([], "0"),
    ])
    func sumsAreExact(values: [String], sum: String) throws {
        var total = ExactDecimal.zero
        for value in values {
            let parsed = try #require(ExactDecimal(value[...]))
            total = try #require(total.adding(parsed))
        }
        #expect(total.description == sum)
    }

    @Test(arguments: ["", "-", "1.", ".5", "+1", "1e3", "1,000", " 1", "1 ", "--1", "1.2.3", "0x10", "١٢", "0.0000000000000000001"])
    func whatIsNoDecimalNumber(text: String) {
        #expect(ExactDecimal(text[...]) == nil)
    }

    @Test func aSumTooLargeToHoldIsRefused() throws {
        let large = try #require(ExactDecimal("99999999999999999999999999999999999999"[...]))
        #expect(large.adding(large) == nil)
        #expect(ExactDecimal("999999999999999999999999999999999999999999"[...]) == nil)
    }
}
