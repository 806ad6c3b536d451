import Testing
import ShowbatchBasics
@testable import ShowbatchCore

@Suite struct ExactDecimalTests {
    @Test(arguments: [
        (["12.50", "7", "0.125", "-3.10"], "16.525"),
        (["0.1", "0.2"], "0.3"),
        (["-0.50", "0.5"], "0.00"),
        (["-2", "1"], "-1"),
        (["1", "-2", "3.5"], "2.5"),
        (["-0", "0.0"], "0.0"),
        (["0.000000000000000001", "99999999999999999999"], "99999999999999999999.000000000000000001"),
        // No limit but the values': far past 2^128, exact.
        (["1000000000000000000000000000000000000000000", "1000000000000000000000000000000000000000000", "-0.000000000000000001"],
         "1999999999999999999999999999999999999999999.999999999999999999"),
        (["999999999", "1"], "1000000000"),
        (["1000000000", "-1"], "999999999"),
        ([], "0"),
    ])
    func sumsAreExact(values: [String], sum: String) throws {
        var total = ExactDecimal.zero
        for value in values {
            let parsed = try #require(ExactDecimal(value[...]))
            total = total.adding(parsed)
        }
        #expect(total.description == sum)
    }

    @Test(arguments: ["", "-", "1.", ".5", "+1", "1e3", "1,000", " 1", "1 ", "--1", "1.2.3", "0x10", "١٢", "0.0000000000000000001"])
    func whatIsNoDecimalNumber(text: String) {
        #expect(ExactDecimal(text[...]) == nil)
    }

    /// A seeded random walk of sums, checked against integer arithmetic on thousandths.
    @Test func randomSumsMatchIntegerArithmetic() throws {
        var random = SeededGenerator(seed: 41)
        var total = ExactDecimal.zero
        var expected = 0
        for _ in 0..<2000 {
            let thousandths = Int.random(in: -5_000_000...5_000_000, using: &random)
            let magnitude = abs(thousandths)
            let fraction = String(magnitude % 1000)
            let text = (thousandths < 0 ? "-" : "") + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
            total = total.adding(try #require(ExactDecimal(text[...])))
            expected += thousandths
        }
        let magnitude = abs(expected), fraction = String(magnitude % 1000)
        let text = (expected < 0 ? "-" : "") + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
        #expect(total.description == (text == "-0.000" ? "0.000" : text))
    }
}
