import Testing
@testable import ShowbatchCore

@Suite struct CSVCellTests {
    @Test(arguments: [
        ("plain", false, "plain"), ("a,b", false, #""a,b""#), (#"say "hi""#, false, #""say ""hi""""#), ("two\nlines", false, "\"two\nlines\""),
        ("cr\r", false, "\"cr\r\""), ("=1+1", true, "'=1+1"), ("=1+1", false, "=1+1"), ("-1,5", true, #""'-1,5""#),
        (#"@"x""#, true, #""'@""x""""#), ("+", true, "'+"), ("", true, ""), ("café", false, "café"),
    ])
    func cells(text: String, escapeFormulas: Bool, expected: String) {
        var out: [UInt8] = []
        RowEncoding.appendCSVCell(text, escapeFormulas: escapeFormulas, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == expected)
    }

    @Test func aLineHasTheFixedColumnsThenTheLabels() {
        let row = ResultRow(ordinal: 0, request: "r,1", status: .partial, httpStatus: 200, attempts: 2,
                            labels: [("a", "x"), ("b", nil)],
                            errors: [RowError(code: .fieldNotFound, label: "b", message: "label b: no value at json.b")])
        var out: [UInt8] = []
        RowEncoding.csvLine(row, labels: ["b", "a", "c"], escapeFormulas: false, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "\"r,1\",partial,200,2,1403 field_not_found: label b: no value at json.b,,x,\n")
    }
}
